//! The allocation scenario's knobs (BENCH_ALLOC_*).

use std::path::PathBuf;

use super::super::{at_least_one, at_least_one_usize};
use super::programs::{Program, operator_programs};

/// The allocation scenario's knobs.
#[derive(Clone, Debug, clap::Args)]
pub struct AllocSettings {
    /// Allocation scenario: nodes, every `gpu_every`-th a GPU node with `gpus_per_node` nvidia.com/gpu.
    #[arg(
        id = "alloc-nodes",
        long = "alloc-nodes",
        env = "BENCH_ALLOC_NODES",
        default_value = "5000"
    )]
    pub nodes: usize,
    /// Allocation scenario: every Nth node is a GPU node (0 counts as 1).
    #[arg(id = "alloc-gpu-every", long = "alloc-gpu-every", env = "BENCH_ALLOC_GPU_EVERY", default_value = "5", value_parser = at_least_one_usize)]
    pub gpu_every: usize,
    /// Allocation scenario: nvidia.com/gpu per GPU node (0 counts as 1).
    #[arg(id = "alloc-gpus-per-node", long = "alloc-gpus-per-node", env = "BENCH_ALLOC_GPUS_PER_NODE", default_value = "8", value_parser = at_least_one)]
    pub gpus_per_node: u64,
    /// Allocation scenario: pods in all.
    #[arg(
        id = "alloc-pods",
        long = "alloc-pods",
        env = "BENCH_ALLOC_PODS",
        default_value = "50000"
    )]
    pub pods: usize,
    /// Allocation scenario: of which request nvidia.com/gpu.
    #[arg(
        id = "alloc-gpu-pods",
        long = "alloc-gpu-pods",
        env = "BENCH_ALLOC_GPU_PODS",
        default_value = "10000"
    )]
    pub gpu_pods: usize,
    /// Allocation scenario: of those, unbound and Unschedulable.
    #[arg(
        id = "alloc-pending",
        long = "alloc-pending",
        env = "BENCH_ALLOC_PENDING",
        default_value = "300"
    )]
    pub pending: usize,
    /// Allocation scenario: every Nth GPU node carries nvidia.com/gpu=present:NoSchedule (0: none).
    #[arg(
        id = "alloc-taint-every",
        long = "alloc-taint-every",
        env = "BENCH_ALLOC_TAINT_EVERY",
        default_value = "10"
    )]
    pub taint_every: usize,
    /// Allocation scenario: every GPU node carries a GB200 fleet's topology labels (its rack's
    /// `nvidia.com/gpu.clique`, racks of 18; GKE block of 8 racks and subblock; a zone), as a 2026 fleet does.
    #[arg(
        id = "alloc-topology",
        long = "alloc-topology",
        env = "BENCH_ALLOC_TOPOLOGY",
        default_value = "true",
        action = clap::ArgAction::Set
    )]
    pub topology: bool,
    /// Allocation scenario: creates (and status patches) in flight while the fleet is set up (0 counts as 1).
    #[arg(id = "alloc-create-concurrency", long = "alloc-create-concurrency", env = "BENCH_ALLOC_CREATE_CONCURRENCY", default_value = "48", value_parser = at_least_one_usize)]
    pub create_concurrency: usize,
    /// Allocation scenario: single GPU-pod changes (binds and deletes) timed for latency.
    #[arg(
        id = "alloc-changes",
        long = "alloc-changes",
        env = "BENCH_ALLOC_CHANGES",
        default_value = "200"
    )]
    pub changes: usize,
    /// Allocation scenario: pod changes per second in churn (0 counts as 1).
    #[arg(id = "alloc-churn-rate", long = "alloc-churn-rate", env = "BENCH_ALLOC_CHURN_RATE", default_value = "50", value_parser = at_least_one)]
    pub churn_rate: u64,
    /// Allocation scenario: the churn period, seconds.
    #[arg(
        id = "alloc-churn-secs",
        long = "alloc-churn-secs",
        env = "BENCH_ALLOC_CHURN_SECS",
        default_value = "60"
    )]
    pub churn_secs: u64,
    /// Allocation scenario: runs of each peer (scan, kubectl-view-allocations), alternating.
    #[arg(
        id = "alloc-peer-runs",
        long = "alloc-peer-runs",
        env = "BENCH_ALLOC_PEER_RUNS",
        default_value = "3"
    )]
    pub peer_runs: usize,
    /// kubectl-view-allocations (hack/bench.sh installs it); unset: the peer comparison is skipped.
    #[arg(long, env = "BENCH_VIEW_ALLOCATIONS_BIN")]
    pub view_allocations_bin: Option<PathBuf>,
    /// GNU time (`-v`), for the peers' peak RSS.
    #[arg(long, env = "BENCH_TIME_BIN", default_value = "/usr/bin/time")]
    pub time_bin: PathBuf,
    /// Allocation scenario: the programs, one after the other on the fleet: operator, previous (each once).
    #[arg(id = "alloc-programs", long = "alloc-programs", env = "BENCH_ALLOC_PROGRAMS", default_value = "operator", value_parser = operator_programs)]
    pub programs: std::vec::Vec<Program>,
    /// Allocation scenario: the quiet window after convergence, per program, seconds: its writes, 0 expected.
    #[arg(
        id = "alloc-quiet-secs",
        long = "alloc-quiet-secs",
        env = "BENCH_ALLOC_QUIET_SECS",
        default_value = "60"
    )]
    pub quiet_secs: u64,
}
