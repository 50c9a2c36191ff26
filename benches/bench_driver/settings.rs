//! The environment knobs (hack/bench.sh sets the paths; the rest have defaults), read once at start (with the
//! test kit's readers, `testkit::settings`).

use std::path::PathBuf;
use std::time::Duration;

use testkit::settings::{env_num, env_str};

use crate::program::Program;

/// A scenario of BENCH_SCENARIOS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Fixture nodes that never change by themselves (scenario.rs): start-up, quiet, latency, churn, burst.
    Steady,
    /// KWOK nodes heartbeating (heartbeat.rs): what the heartbeats cost each program.
    Heartbeat,
    /// Nodes and bound pods (allocation.rs): GPU allocation accounting, and the peer comparison.
    Allocation,
    /// ResourceSlices and allocated ResourceClaims (dra.rs): the DRA accounting.
    Dra,
    /// Another client hammering the API server (flood.rs): the operator's change -> status latency.
    Flood,
}

impl Scenario {
    pub fn parse(word: &str) -> Self {
        match word {
            "steady" => Scenario::Steady,
            "heartbeat" => Scenario::Heartbeat,
            "allocation" => Scenario::Allocation,
            "dra" => Scenario::Dra,
            "flood" => Scenario::Flood,
            other => panic!(
                "BENCH_SCENARIOS: unknown scenario {other} (steady, heartbeat, allocation, dra, flood)"
            ),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub kubeconfig: PathBuf,
    pub audit_log: PathBuf,
    pub operator_bin: PathBuf,
    /// A command the operator (this revision's and the previous one) runs under, e.g. a heap profiler
    /// (BENCH_OPERATOR_WRAPPER, split at spaces); empty: none. Its timings and RSS are then the wrapper's.
    pub operator_wrapper: Vec<String>,
    pub baseline_bin: PathBuf,
    /// The previous operator (BENCH_PREVIOUS_BIN; hack/bench.sh builds it from BENCH_PREVIOUS_REV), if any,
    /// and what to call it in the report (BENCH_PREVIOUS_LABEL: the revision).
    pub previous_bin: Option<PathBuf>,
    pub previous_label: String,
    pub fixtures: PathBuf,
    pub out: PathBuf,
    pub table: PathBuf,
    pub log_dir: PathBuf,
    pub nodes: Vec<usize>,
    pub programs: Vec<Program>,
    pub quiet_secs: u64,
    pub churn_secs: u64,
    pub churn_rate: u64,
    pub changes: usize,
    pub burst_changes: usize,
    pub change_gap: Duration,
    pub node_images: usize,
    pub settle: Duration,
    pub scenarios: Vec<Scenario>,
    /// Heartbeat scenario: KWOK nodes, every `heartbeat_gpu_every`-th a GPU node, measured for `heartbeat_secs`.
    pub heartbeat_nodes: usize,
    pub heartbeat_gpu_every: usize,
    pub heartbeat_secs: u64,
    /// KWOK's status heartbeat period (LOCAL_CLUSTER_NODE_STATUS_SECS: every N..2N s), for the report.
    pub heartbeat_status_secs: u64,
    /// The state dir of the cluster (pid files of kube-apiserver, etcd, KWOK), if known.
    pub cluster_dir: Option<PathBuf>,
    /// Allocation scenario (allocation.rs).
    pub alloc: AllocSettings,
    /// DRA scenario (dra.rs).
    pub dra: DraSettings,
}

/// The DRA scenario's knobs (BENCH_DRA_*).
#[derive(Clone, Debug)]
pub struct DraSettings {
    /// Nodes, each publishing one ResourceSlice of `gpus_per_node` whole GPUs.
    pub nodes: usize,
    pub gpus_per_node: usize,
    /// ResourceClaims, each allocated one device (at most nodes x gpus_per_node).
    pub claims: usize,
    /// Creates (and status writes) in flight while the fleet is set up.
    pub create_concurrency: usize,
    /// Single claim changes (deallocate, allocate) timed for latency.
    pub changes: usize,
    /// Claim changes per second in churn, for `churn_secs`.
    pub churn_rate: u64,
    pub churn_secs: u64,
    /// Runs of the one-shot `scan`.
    pub scan_runs: usize,
    /// The programs run one after the other on the fleet (BENCH_DRA_PROGRAMS: operator, previous).
    pub programs: Vec<Result<Program, String>>,
    /// The quiet window after convergence, per program (BENCH_DRA_QUIET_SECS): its writes, 0 expected.
    pub quiet_secs: u64,
}

impl DraSettings {
    fn from_env() -> Self {
        let nodes = env_num("BENCH_DRA_NODES", 5000) as usize;
        let gpus_per_node = env_num("BENCH_DRA_GPUS_PER_NODE", 8).max(1) as usize;
        DraSettings {
            nodes,
            gpus_per_node,
            claims: (env_num("BENCH_DRA_CLAIMS", 10_000) as usize).min(nodes * gpus_per_node),
            create_concurrency: env_num("BENCH_DRA_CREATE_CONCURRENCY", 48).max(1) as usize,
            changes: env_num("BENCH_DRA_CHANGES", 100) as usize,
            churn_rate: env_num("BENCH_DRA_CHURN_RATE", 50).max(1),
            churn_secs: env_num("BENCH_DRA_CHURN_SECS", 60),
            scan_runs: env_num("BENCH_DRA_SCAN_RUNS", 3) as usize,
            programs: operator_programs("BENCH_DRA_PROGRAMS"),
            quiet_secs: env_num("BENCH_DRA_QUIET_SECS", 60),
        }
    }
}

/// The allocation scenario's knobs (BENCH_ALLOC_*).
#[derive(Clone, Debug)]
pub struct AllocSettings {
    /// Nodes, every `gpu_every`-th a GPU node with `gpus_per_node` nvidia.com/gpu.
    pub nodes: usize,
    pub gpu_every: usize,
    pub gpus_per_node: u64,
    /// Pods in all, of which `gpu_pods` request nvidia.com/gpu, `pending` of those unbound and Unschedulable.
    pub pods: usize,
    pub gpu_pods: usize,
    pub pending: usize,
    /// Every `taint_every`-th GPU node carries nvidia.com/gpu=present:NoSchedule (0: none).
    pub taint_every: usize,
    /// Creates (and status patches) in flight while the fleet is set up.
    pub create_concurrency: usize,
    /// Single GPU-pod changes (binds and deletes) timed for latency.
    pub changes: usize,
    /// Pod changes per second in churn, for `churn_secs`.
    pub churn_rate: u64,
    pub churn_secs: u64,
    /// Runs of each peer (scan, kubectl-view-allocations), alternating.
    pub peer_runs: usize,
    /// kubectl-view-allocations; empty: the peer comparison is skipped.
    pub view_allocations_bin: Option<PathBuf>,
    /// /usr/bin/time (GNU time, `-v`), for the peers' peak RSS.
    pub time_bin: PathBuf,
    /// The programs run one after the other on the fleet (BENCH_ALLOC_PROGRAMS: operator, previous).
    pub programs: Vec<Result<Program, String>>,
    /// The quiet window after convergence, per program (BENCH_ALLOC_QUIET_SECS): its writes, 0 expected.
    pub quiet_secs: u64,
}

/// The words of `knob` (default "operator"), each `operator` or `previous`, each once; an unknown word is
/// an error (`Err` in the list, reported by [`Settings::check`]).
fn operator_programs(knob: &str) -> Vec<Result<Program, String>> {
    let mut out: Vec<Result<Program, String>> = Vec::new();
    for word in env_str(knob, "operator").split_whitespace() {
        let p = Program::parse_operator(knob, word);
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

impl AllocSettings {
    fn from_env() -> Self {
        AllocSettings {
            nodes: env_num("BENCH_ALLOC_NODES", 5000) as usize,
            gpu_every: env_num("BENCH_ALLOC_GPU_EVERY", 5).max(1) as usize,
            gpus_per_node: env_num("BENCH_ALLOC_GPUS_PER_NODE", 8).max(1),
            pods: env_num("BENCH_ALLOC_PODS", 50_000) as usize,
            gpu_pods: env_num("BENCH_ALLOC_GPU_PODS", 10_000) as usize,
            pending: env_num("BENCH_ALLOC_PENDING", 300) as usize,
            taint_every: env_num("BENCH_ALLOC_TAINT_EVERY", 10) as usize,
            create_concurrency: env_num("BENCH_ALLOC_CREATE_CONCURRENCY", 48).max(1) as usize,
            changes: env_num("BENCH_ALLOC_CHANGES", 200) as usize,
            churn_rate: env_num("BENCH_ALLOC_CHURN_RATE", 50).max(1),
            churn_secs: env_num("BENCH_ALLOC_CHURN_SECS", 60),
            peer_runs: env_num("BENCH_ALLOC_PEER_RUNS", 3) as usize,
            view_allocations_bin: std::env::var_os("BENCH_VIEW_ALLOCATIONS_BIN")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            time_bin: PathBuf::from(env_str("BENCH_TIME_BIN", "/usr/bin/time")),
            programs: operator_programs("BENCH_ALLOC_PROGRAMS"),
            quiet_secs: env_num("BENCH_ALLOC_QUIET_SECS", 60),
        }
    }
}

impl Settings {
    /// The program list of a scenario, or why it cannot run: an unknown word, or `previous` without
    /// BENCH_PREVIOUS_BIN.
    pub fn operator_programs(
        &self,
        list: &[Result<Program, String>],
    ) -> Result<Vec<Program>, String> {
        let programs = list.iter().cloned().collect::<Result<Vec<_>, _>>()?;
        if programs.contains(&Program::Previous) && self.previous_bin.is_none() {
            return Err("the program list names previous, but BENCH_PREVIOUS_BIN is not set (hack/bench.sh sets it when BENCH_PREVIOUS_REV names a revision)".into());
        }
        if programs.is_empty() {
            return Err("the program list is empty".into());
        }
        Ok(programs)
    }

    pub fn from_env() -> Self {
        let path = |name: &str, default: &str| PathBuf::from(env_str(name, default));
        Settings {
            kubeconfig: path("BENCH_KUBECONFIG", "target/bench-cluster/kubeconfig"),
            audit_log: path("BENCH_AUDIT_LOG", "target/bench-cluster/audit.log"),
            operator_bin: path(
                "BENCH_OPERATOR_BIN",
                "target/release/gpu-inventory-operator",
            ),
            operator_wrapper: env_str("BENCH_OPERATOR_WRAPPER", "")
                .split_whitespace()
                .map(str::to_owned)
                .collect(),
            // No stable default path: cargo names bench binaries target/release/deps/<name>-<hash>.
            baseline_bin: path("BENCH_BASELINE_BIN", "target/bench/bin/baseline-operator"),
            previous_bin: std::env::var_os("BENCH_PREVIOUS_BIN")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            previous_label: env_str("BENCH_PREVIOUS_LABEL", "previous"),
            // The fixtures the repository vendors for its tests.
            fixtures: path("BENCH_FIXTURES", "tests/fixtures"),
            out: path("BENCH_OUT", "target/bench/results.json"),
            table: path("BENCH_TABLE", "target/bench/results.txt"),
            log_dir: path("BENCH_LOG_DIR", "target/bench/logs"),
            nodes: env_str("BENCH_NODES", "1000 5000")
                .split_whitespace()
                .map(|n| n.parse().expect("BENCH_NODES: whole numbers"))
                .collect(),
            programs: env_str("BENCH_PROGRAMS", "operator baseline")
                .split_whitespace()
                .map(Program::parse)
                .collect(),
            quiet_secs: env_num("BENCH_QUIET_SECS", 300),
            churn_secs: env_num("BENCH_CHURN_SECS", 60),
            churn_rate: env_num("BENCH_CHURN_RATE", 20).max(1),
            changes: env_num("BENCH_CHANGES", 200) as usize,
            burst_changes: env_num("BENCH_BURST_CHANGES", 1000) as usize,
            change_gap: Duration::from_millis(env_num("BENCH_CHANGE_GAP_MS", 500)),
            node_images: env_num("BENCH_NODE_IMAGES", 20) as usize,
            settle: Duration::from_secs(env_num("BENCH_SETTLE_SECS", 120)),
            scenarios: env_str("BENCH_SCENARIOS", "steady heartbeat")
                .split_whitespace()
                .map(Scenario::parse)
                .collect(),
            heartbeat_nodes: env_num("BENCH_HEARTBEAT_NODES", 5000) as usize,
            heartbeat_gpu_every: env_num("BENCH_HEARTBEAT_GPU_EVERY", 5).max(1) as usize,
            heartbeat_secs: env_num("BENCH_HEARTBEAT_SECS", 300),
            heartbeat_status_secs: env_num("LOCAL_CLUSTER_NODE_STATUS_SECS", 10),
            cluster_dir: std::env::var_os("BENCH_CLUSTER_DIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            alloc: AllocSettings::from_env(),
            dra: DraSettings::from_env(),
        }
    }
}
