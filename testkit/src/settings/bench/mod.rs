//! The bench driver's knobs (benches/bench_driver; hack/bench.sh sets the paths, the rest have defaults): each an
//! environment variable BENCH_* and an option, read once at start. `--help` lists them.

use std::path::PathBuf;
use std::time::Duration;

use super::{at_least_one, at_least_one_usize, millis, secs, strings, whole_numbers};

mod alloc_settings;
mod dra_settings;
mod flood_settings;
mod programs;

pub use super::scale::{ScaleReaders, ScaleSettings, ScaleShape};
pub use alloc_settings::AllocSettings;
pub use dra_settings::DraSettings;
pub use flood_settings::FloodSettings;
pub use programs::{Program, Scenario};

use programs::{programs, scenarios};

/// The bench driver's knobs.
#[derive(Clone, Debug, clap::Parser)]
#[command(
    name = "bench-driver",
    about = "The `make bench` driver (hack/bench.sh runs it): the operator against the article-style baseline"
)]
pub struct Settings {
    /// The bench cluster's kubeconfig.
    #[arg(
        long,
        env = "BENCH_KUBECONFIG",
        default_value = "target/bench-cluster/kubeconfig"
    )]
    pub kubeconfig: PathBuf,
    /// kube-apiserver's audit log (the API requests are counted from it).
    #[arg(
        long,
        env = "BENCH_AUDIT_LOG",
        default_value = "target/bench-cluster/audit.log"
    )]
    pub audit_log: PathBuf,
    /// The operator under test.
    #[arg(
        long,
        env = "BENCH_OPERATOR_BIN",
        default_value = "target/release/gpu-inventory-operator"
    )]
    pub operator_bin: PathBuf,
    /// A command the operator (this revision's and the previous one) runs under, e.g. a heap profiler (split
    /// at spaces); empty: none. Its timings and RSS are then the wrapper's.
    #[arg(long, env = "BENCH_OPERATOR_WRAPPER", default_value = "", value_parser = strings)]
    pub operator_wrapper: std::vec::Vec<String>,
    /// The article-style baseline (no stable default path: cargo names bench binaries
    /// target/release/deps/NAME-HASH; hack/bench.sh sets it).
    #[arg(
        long,
        env = "BENCH_BASELINE_BIN",
        default_value = "target/bench/bin/baseline-operator"
    )]
    pub baseline_bin: PathBuf,
    /// The previous operator, if any (hack/bench.sh builds it from BENCH_PREVIOUS_REV).
    #[arg(long, env = "BENCH_PREVIOUS_BIN")]
    pub previous_bin: Option<PathBuf>,
    /// What to call the previous operator in the report (hack/bench.sh: the revision).
    #[arg(long, env = "BENCH_PREVIOUS_LABEL", default_value = "previous")]
    pub previous_label: String,
    /// The node dumps the bench nodes are cloned from (the fixtures the repository vendors for its tests).
    #[arg(long, env = "BENCH_FIXTURES", default_value = "tests/fixtures")]
    pub fixtures: PathBuf,
    /// The results JSON (a later run keeps the sections of earlier ones).
    #[arg(long, env = "BENCH_OUT", default_value = "target/bench/results.json")]
    pub out: PathBuf,
    /// The results table.
    #[arg(long, env = "BENCH_TABLE", default_value = "target/bench/results.txt")]
    pub table: PathBuf,
    /// Where the programs' logs go.
    #[arg(long, env = "BENCH_LOG_DIR", default_value = "target/bench/logs")]
    pub log_dir: PathBuf,
    /// Node counts of the steady scenario (whole numbers, space-separated).
    #[arg(long, env = "BENCH_NODES", default_value = "1000 5000", value_parser = whole_numbers)]
    pub nodes: std::vec::Vec<usize>,
    /// The programs of the steady and heartbeat scenarios: operator, baseline.
    #[arg(long, env = "BENCH_PROGRAMS", default_value = "operator baseline", value_parser = programs)]
    pub programs: std::vec::Vec<Program>,
    /// The quiet period per run, seconds.
    #[arg(long, env = "BENCH_QUIET_SECS", default_value = "300")]
    pub quiet_secs: u64,
    /// The churn period per run, seconds.
    #[arg(long, env = "BENCH_CHURN_SECS", default_value = "60")]
    pub churn_secs: u64,
    /// Label changes per second in churn (0 counts as 1).
    #[arg(long, env = "BENCH_CHURN_RATE", default_value = "20", value_parser = at_least_one)]
    pub churn_rate: u64,
    /// Single-node changes timed for latency.
    #[arg(long, env = "BENCH_CHANGES", default_value = "200")]
    pub changes: usize,
    /// Label changes as fast as possible before the second RSS reading.
    #[arg(long, env = "BENCH_BURST_CHANGES", default_value = "1000")]
    pub burst_changes: usize,
    /// The longest wait before the next latency change when the previous one is not visible yet, ms.
    #[arg(long = "change-gap-ms", env = "BENCH_CHANGE_GAP_MS", default_value = "500", value_parser = millis)]
    pub change_gap: Duration,
    /// Container images per node, as kubelets report them.
    #[arg(long, env = "BENCH_NODE_IMAGES", default_value = "20")]
    pub node_images: usize,
    /// The longest wait for convergence, seconds.
    #[arg(long = "settle-secs", env = "BENCH_SETTLE_SECS", default_value = "120", value_parser = secs)]
    pub settle: Duration,
    /// The scenarios: steady, heartbeat, allocation, dra, flood, scale (hack/bench.sh runs one per driver run).
    #[arg(long, env = "BENCH_SCENARIOS", default_value = "steady heartbeat", value_parser = scenarios)]
    pub scenarios: std::vec::Vec<Scenario>,
    /// Heartbeat scenario: KWOK nodes.
    #[arg(long, env = "BENCH_HEARTBEAT_NODES", default_value = "5000")]
    pub heartbeat_nodes: usize,
    /// Heartbeat scenario: every Nth KWOK node is a GPU node (0 counts as 1).
    #[arg(long, env = "BENCH_HEARTBEAT_GPU_EVERY", default_value = "5", value_parser = at_least_one_usize)]
    pub heartbeat_gpu_every: usize,
    /// Heartbeat scenario: the measured window per program, seconds.
    #[arg(long, env = "BENCH_HEARTBEAT_SECS", default_value = "300")]
    pub heartbeat_secs: u64,
    /// KWOK's status heartbeat period (every N..2N s; the local cluster's knob), for the report.
    #[arg(
        long = "node-status-secs",
        env = "LOCAL_CLUSTER_NODE_STATUS_SECS",
        default_value = "10"
    )]
    pub heartbeat_status_secs: u64,
    /// The state dir of the cluster (pid files of kube-apiserver, etcd, KWOK), if known.
    #[arg(long, env = "BENCH_CLUSTER_DIR")]
    pub cluster_dir: Option<PathBuf>,
    /// Allocation scenario (allocation.rs).
    #[command(flatten)]
    pub alloc: AllocSettings,
    /// DRA scenario (dra.rs).
    #[command(flatten)]
    pub dra: DraSettings,
    /// Flood scenario (flood.rs).
    #[command(flatten)]
    pub flood: FloodSettings,
    /// Scale scenario (scale.rs).
    #[command(flatten)]
    pub scale: ScaleSettings,
}

impl Settings {
    /// The program list of a scenario, or why it cannot run: `previous` without BENCH_PREVIOUS_BIN, or none.
    pub fn operator_programs(&self, list: &[Program]) -> Result<Vec<Program>, String> {
        let programs = list.to_vec();
        if programs.contains(&Program::Previous) && self.previous_bin.is_none() {
            return Err("the program list names previous, but BENCH_PREVIOUS_BIN is not set (hack/bench.sh sets it when BENCH_PREVIOUS_REV names a revision)".into());
        }
        if programs.is_empty() {
            return Err("the program list is empty".into());
        }
        Ok(programs)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::super::parse_args;
    use super::*;

    #[test]
    fn the_command_is_well_formed() {
        Settings::command().debug_assert();
    }

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let s = parse_args::<Settings>(&["bench-driver"]).unwrap();
        assert_eq!(s.nodes, [1000, 5000]);
        assert_eq!(s.programs, [Program::Operator, Program::Baseline]);
        assert_eq!(s.scenarios, [Scenario::Steady, Scenario::Heartbeat]);
        assert!(s.operator_wrapper.is_empty());
        assert_eq!(s.previous_bin, None);
        assert_eq!((s.quiet_secs, s.churn_secs, s.churn_rate), (300, 60, 20));
        assert_eq!((s.changes, s.burst_changes, s.node_images), (200, 1000, 20));
        assert_eq!(s.change_gap, Duration::from_millis(500));
        assert_eq!(s.settle, Duration::from_secs(120));
        assert_eq!(
            (s.heartbeat_nodes, s.heartbeat_gpu_every, s.heartbeat_secs),
            (5000, 5, 300)
        );
        assert_eq!(s.heartbeat_status_secs, 10);
        assert_eq!(
            (s.alloc.nodes, s.alloc.pods, s.alloc.gpu_pods),
            (5000, 50_000, 10_000)
        );
        assert_eq!(s.alloc.programs, [Program::Operator]);
        assert_eq!(s.alloc.time_bin, PathBuf::from("/usr/bin/time"));
        assert_eq!(
            (s.dra.nodes, s.dra.gpus_per_node, s.dra.claims()),
            (5000, 8, 10_000)
        );
        assert_eq!(
            (s.flood.nodes, s.flood.tasks, s.flood.changes),
            (500, 64, 40)
        );
        assert!(!s.flood.apf);
        assert_eq!(s.scale.nodes, [1000, 5000, 20_000, 65_000]);
        assert_eq!(
            (s.scale.runs, s.scale.quiet_secs, s.scale.changes),
            (2, 60, 200)
        );
        assert_eq!((s.scale.churn_rate, s.scale.churn_secs), (50, 600));
        assert_eq!((s.scale.peer_runs, s.scale.create_concurrency), (1, 48));
        assert_eq!(s.scale.settle, Duration::from_secs(900));
    }

    #[test]
    fn options_parse_as_the_variables_did() {
        let s = parse_args::<Settings>(&[
            "bench-driver",
            "--nodes",
            " 200  400 ",
            "--churn-rate",
            "0",
            "--dra-nodes",
            "10",
            "--dra-gpus-per-node",
            "2",
            "--alloc-programs",
            "previous operator previous",
            "--flood-apf",
            "1",
            "--scenarios",
            "scale",
            "--scale-nodes",
            "1000",
            "--scale-runs",
            "0",
            "--operator-wrapper",
            "heaptrack -o target/bench/heap",
        ])
        .unwrap();
        assert_eq!(s.nodes, [200, 400]);
        assert_eq!(s.churn_rate, 1);
        assert_eq!(s.dra.claims(), 20);
        assert_eq!(s.alloc.programs, [Program::Previous, Program::Operator]);
        assert!(s.flood.apf);
        assert_eq!(s.scenarios, [Scenario::Scale]);
        assert_eq!((s.scale.nodes.as_slice(), s.scale.runs), (&[1000][..], 1));
        assert_eq!(s.operator_wrapper, ["heaptrack", "-o", "target/bench/heap"]);
        assert!(s.operator_programs(&s.alloc.programs).is_err());
        assert!(parse_args::<Settings>(&["bench-driver", "--scenarios", "steady soak"]).is_err());
        assert!(parse_args::<Settings>(&["bench-driver", "--programs", "previous"]).is_err());
    }
}
