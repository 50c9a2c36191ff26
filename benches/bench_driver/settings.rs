//! The environment knobs (hack/bench.sh sets the paths; the rest have defaults), read once at start.

use std::path::PathBuf;
use std::time::Duration;

use crate::program::Program;

fn env_str(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn env_num(name: &str, default: u64) -> u64 {
    env_str(name, &default.to_string())
        .parse()
        .unwrap_or_else(|_| panic!("{name} must be a whole number"))
}

/// A scenario of BENCH_SCENARIOS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Fixture nodes that never change by themselves (scenario.rs): start-up, quiet, latency, churn, burst.
    Steady,
    /// KWOK nodes heartbeating (heartbeat.rs): what the heartbeats cost each program.
    Heartbeat,
}

impl Scenario {
    pub fn parse(word: &str) -> Self {
        match word {
            "steady" => Scenario::Steady,
            "heartbeat" => Scenario::Heartbeat,
            other => panic!("BENCH_SCENARIOS: unknown scenario {other} (steady, heartbeat)"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Settings {
    pub kubeconfig: PathBuf,
    pub audit_log: PathBuf,
    pub operator_bin: PathBuf,
    pub baseline_bin: PathBuf,
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
}

impl Settings {
    pub fn from_env() -> Self {
        let path = |name: &str, default: &str| PathBuf::from(env_str(name, default));
        Settings {
            kubeconfig: path("BENCH_KUBECONFIG", "target/bench-cluster/kubeconfig"),
            audit_log: path("BENCH_AUDIT_LOG", "target/bench-cluster/audit.log"),
            operator_bin: path(
                "BENCH_OPERATOR_BIN",
                "target/release/gpu-inventory-operator",
            ),
            // No stable default path: cargo names bench binaries target/release/deps/<name>-<hash>.
            baseline_bin: path("BENCH_BASELINE_BIN", "target/bench/bin/baseline-operator"),
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
        }
    }
}
