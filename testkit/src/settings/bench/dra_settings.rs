//! The DRA scenario's knobs (BENCH_DRA_*).

use super::super::{at_least_one, at_least_one_usize};
use super::programs::{Program, operator_programs};

/// The DRA scenario's knobs.
#[derive(Clone, Debug, clap::Args)]
pub struct DraSettings {
    /// DRA scenario: nodes, each publishing one ResourceSlice of `gpus_per_node` whole GPUs.
    #[arg(
        id = "dra-nodes",
        long = "dra-nodes",
        env = "BENCH_DRA_NODES",
        default_value = "5000"
    )]
    pub nodes: usize,
    /// DRA scenario: whole-GPU devices per slice (0 counts as 1).
    #[arg(id = "dra-gpus-per-node", long = "dra-gpus-per-node", env = "BENCH_DRA_GPUS_PER_NODE", default_value = "8", value_parser = at_least_one_usize)]
    pub gpus_per_node: usize,
    /// DRA scenario: ResourceClaims, each allocated one device (at most nodes x GPUs per node: `claims()`).
    #[arg(
        id = "dra-claims",
        long = "dra-claims",
        env = "BENCH_DRA_CLAIMS",
        default_value = "10000"
    )]
    pub claims_asked: usize,
    /// DRA scenario: creates (and status writes) in flight while the fleet is set up (0 counts as 1).
    #[arg(id = "dra-create-concurrency", long = "dra-create-concurrency", env = "BENCH_DRA_CREATE_CONCURRENCY", default_value = "48", value_parser = at_least_one_usize)]
    pub create_concurrency: usize,
    /// DRA scenario: single claim changes (deallocate, allocate) timed for latency.
    #[arg(
        id = "dra-changes",
        long = "dra-changes",
        env = "BENCH_DRA_CHANGES",
        default_value = "100"
    )]
    pub changes: usize,
    /// DRA scenario: claim changes per second in churn (0 counts as 1).
    #[arg(id = "dra-churn-rate", long = "dra-churn-rate", env = "BENCH_DRA_CHURN_RATE", default_value = "50", value_parser = at_least_one)]
    pub churn_rate: u64,
    /// DRA scenario: the churn period, seconds.
    #[arg(
        id = "dra-churn-secs",
        long = "dra-churn-secs",
        env = "BENCH_DRA_CHURN_SECS",
        default_value = "60"
    )]
    pub churn_secs: u64,
    /// DRA scenario: runs of the one-shot `scan`.
    #[arg(
        id = "dra-scan-runs",
        long = "dra-scan-runs",
        env = "BENCH_DRA_SCAN_RUNS",
        default_value = "3"
    )]
    pub scan_runs: usize,
    /// DRA scenario: the programs, one after the other on the fleet: operator, previous (each once).
    #[arg(id = "dra-programs", long = "dra-programs", env = "BENCH_DRA_PROGRAMS", default_value = "operator", value_parser = operator_programs)]
    pub programs: std::vec::Vec<Program>,
    /// DRA scenario: the quiet window after convergence, per program, seconds: its writes, 0 expected.
    #[arg(
        id = "dra-quiet-secs",
        long = "dra-quiet-secs",
        env = "BENCH_DRA_QUIET_SECS",
        default_value = "60"
    )]
    pub quiet_secs: u64,
}

impl DraSettings {
    /// The ResourceClaims: as many as asked, at most one per device.
    pub fn claims(&self) -> usize {
        self.claims_asked.min(self.nodes * self.gpus_per_node)
    }
}
