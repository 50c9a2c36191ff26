//! The soak's knobs (benches/soak; hack/soak.sh sets the paths and documents the rest in its header): each an
//! environment variable SOAK_* and an option, read once at start. `--help` lists them; a bad value is clap's
//! error naming the option, a bad combination [`Settings::check`]'s.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::{at_least_one_usize, secs, words};
use crate::Res;

/// A kind of fault the soak injects (benches/soak/faults.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum FaultKind {
    /// kube-apiserver SIGKILLed, started again after the hold.
    ApiServer,
    /// etcd SIGSTOPped, SIGCONTed after the hold.
    Etcd,
    /// The Lease holder SIGKILLed, a new replica started after the hold.
    Leader,
}

impl FaultKind {
    /// A word of SOAK_FAULTS.
    pub fn parse(word: &str) -> Result<Self, String> {
        match word {
            "apiserver" => Ok(FaultKind::ApiServer),
            "etcd" => Ok(FaultKind::Etcd),
            "leader" => Ok(FaultKind::Leader),
            other => Err(format!("unknown fault {other} (apiserver, etcd, leader)")),
        }
    }
}

/// The faults of SOAK_FAULTS.
fn fault_kinds(value: &str) -> Result<Vec<FaultKind>, String> {
    words(value, FaultKind::parse)
}

/// `path` in the repository (the soak's defaults are absolute: it runs from anywhere).
fn in_repository(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("testkit/ is in the repository")
        .join(path)
}

/// A seed from the clock and the pid, when SOAK_SEED does not give one.
fn drawn_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ (u64::from(std::process::id()) << 32)) % 1_000_000_000
}

/// The soak's knobs.
#[derive(Clone, Debug, clap::Parser)]
#[command(
    name = "soak",
    about = "The `make soak` chaos soak (hack/soak.sh runs it): faults and churn, then the outputs against a fresh scan"
)]
pub struct Settings {
    /// The soak cluster's kubeconfig (hack/soak.sh sets it).
    #[arg(long, env = "SOAK_KUBECONFIG")]
    pub kubeconfig: PathBuf,
    /// The local cluster's state dir: pid files, the audit log, and LOCAL_CLUSTER_STATE_DIR for the faults
    /// (hack/soak.sh sets it).
    #[arg(long, env = "SOAK_CLUSTER_DIR")]
    pub cluster_dir: PathBuf,
    /// The operator both replicas run (hack/soak.sh sets it).
    #[arg(long, env = "SOAK_OPERATOR_BIN")]
    pub operator_bin: PathBuf,
    /// The node dumps the fleet is cloned from.
    #[arg(long, env = "SOAK_FIXTURES", default_value_os_t = in_repository("tests/fixtures"))]
    pub fixtures: PathBuf,
    /// report.json, report.txt, rss.png and logs/ go here.
    #[arg(long, env = "SOAK_OUT_DIR", default_value_os_t = in_repository("target/soak"))]
    pub out_dir: PathBuf,
    /// The soak window, seconds: churn and faults; the last fault ends with it.
    #[arg(long, env = "SOAK_SECS", default_value = "1800")]
    pub secs: u64,
    /// The seed of the fault schedule and the churn (default: drawn, printed and recorded).
    #[arg(long = "seed", env = "SOAK_SEED")]
    pub given_seed: Option<u64>,
    /// The seed drawn at start, used when none is given.
    #[arg(skip = drawn_seed())]
    drawn_seed: u64,
    /// Nodes.
    #[arg(long, env = "SOAK_NODES", default_value = "5000")]
    pub nodes: usize,
    /// Every Nth node is a GPU node (0 counts as 1).
    #[arg(long, env = "SOAK_GPU_EVERY", default_value = "10", value_parser = at_least_one_usize)]
    pub gpu_every: usize,
    /// One-GPU pods bound to each GPU node at the start.
    #[arg(long, env = "SOAK_PODS_PER_GPU_NODE", default_value = "2")]
    pub pods_per_gpu_node: u64,
    /// Container images per node, as kubelets report them.
    #[arg(long, env = "SOAK_NODE_IMAGES", default_value = "20")]
    pub node_images: usize,
    /// CPU nodes that also publish GPUs as a ResourceSlice, where DRA is served (0: none).
    #[arg(long, env = "SOAK_DRA_NODES", default_value = "100")]
    pub dra_nodes: usize,
    /// Whole GPUs in each of those slices (0 counts as 1).
    #[arg(long, env = "SOAK_DRA_GPUS_PER_NODE", default_value = "4", value_parser = at_least_one_usize)]
    pub dra_gpus_per_node: usize,
    /// Changes per second, all kinds together (labels, Ready, pods, DRA).
    #[arg(long, env = "SOAK_CHURN_RATE", default_value = "3.0")]
    pub churn_rate: f64,
    /// The mean gap between faults, seconds (each gap is drawn from [mean/2, 3 mean/2]).
    #[arg(long = "fault-every-secs", env = "SOAK_FAULT_EVERY_SECS", default_value = "120", value_parser = secs)]
    pub fault_every: Duration,
    /// Which faults: apiserver, etcd, leader.
    #[arg(long = "faults", env = "SOAK_FAULTS", default_value = "apiserver etcd leader", value_parser = fault_kinds)]
    pub fault_kinds: std::vec::Vec<FaultKind>,
    /// The operators' --status-nodes-budget, and the final scan's: both cut `nodes[]` alike (`64Ki`, `8Ki`).
    #[arg(long, env = "SOAK_STATUS_NODES_BUDGET", default_value = "64Ki")]
    pub status_nodes_budget: String,
    /// The operators' --lease-duration, seconds.
    #[arg(long = "lease-secs", env = "SOAK_LEASE_SECS", default_value = "15", value_parser = secs)]
    pub lease: Duration,
    /// The quiet period whose writes must be 0, seconds.
    #[arg(long = "quiet-secs", env = "SOAK_QUIET_SECS", default_value = "60", value_parser = secs)]
    pub quiet: Duration,
    /// The longest wait for convergence, seconds.
    #[arg(long = "settle-secs", env = "SOAK_SETTLE_SECS", default_value = "300", value_parser = secs)]
    pub settle: Duration,
    /// The RSS sample period, seconds.
    #[arg(long = "rss-every-secs", env = "SOAK_RSS_EVERY_SECS", default_value = "10", value_parser = secs)]
    pub rss_every: Duration,
    /// How far into the longest leadership the RSS base sample is, seconds ("after the first 5 minutes").
    #[arg(long = "rss-base-secs", env = "SOAK_RSS_BASE_SECS", default_value = "300", value_parser = secs)]
    pub rss_base: Duration,
    /// Allowed |last/base - 1| of the RSS over that leadership (0.10: within 10 %).
    #[arg(long, env = "SOAK_RSS_TOLERANCE", default_value = "0.10")]
    pub rss_tolerance: f64,
}

impl Settings {
    /// The knobs that make no run: a window, a churn rate or a fault gap of 0, or no GPU node.
    pub fn check(&self) -> Res<()> {
        if self.churn_rate <= 0.0 || self.fault_every.is_zero() || self.secs == 0 {
            return Err(
                "SOAK_CHURN_RATE, SOAK_FAULT_EVERY_SECS and SOAK_SECS must be above 0".into(),
            );
        }
        if self.nodes < self.gpu_every {
            return Err(format!(
                "SOAK_NODES={} makes no GPU node (every {}th is one)",
                self.nodes, self.gpu_every
            )
            .into());
        }
        Ok(())
    }

    /// The seed: SOAK_SEED's, else the one drawn at start.
    pub fn seed(&self) -> u64 {
        self.given_seed.unwrap_or(self.drawn_seed)
    }

    /// Whether the seed came from SOAK_SEED (else it was drawn, and is printed so the run can be repeated).
    pub fn seed_given(&self) -> bool {
        self.given_seed.is_some()
    }

    /// The soak window.
    pub fn window(&self) -> Duration {
        Duration::from_secs(self.secs)
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::super::parse_args;
    use super::*;

    const REQUIRED: [&str; 7] = [
        "soak",
        "--kubeconfig",
        "k",
        "--cluster-dir",
        "c",
        "--operator-bin",
        "o",
    ];

    #[test]
    fn the_command_is_well_formed() {
        Settings::command().debug_assert();
    }

    #[test]
    fn the_paths_hack_soak_sh_sets_are_required() {
        assert!(parse_args::<Settings>(&["soak"]).is_err());
        assert!(parse_args::<Settings>(&REQUIRED).is_ok());
    }

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let s = parse_args::<Settings>(&REQUIRED).unwrap();
        assert!(
            s.fixtures.ends_with("tests/fixtures") && s.fixtures.join("gfd-nodes.yaml").exists()
        );
        assert!(s.out_dir.ends_with("target/soak"));
        assert_eq!(
            (s.secs, s.nodes, s.gpu_every, s.pods_per_gpu_node),
            (1800, 5000, 10, 2)
        );
        assert_eq!(
            (s.node_images, s.dra_nodes, s.dra_gpus_per_node),
            (20, 100, 4)
        );
        assert_eq!(s.churn_rate, 3.0);
        assert_eq!(s.fault_every, Duration::from_secs(120));
        assert_eq!(
            s.fault_kinds,
            [FaultKind::ApiServer, FaultKind::Etcd, FaultKind::Leader]
        );
        let secs = |d: Duration| d.as_secs();
        assert_eq!(
            (
                secs(s.lease),
                secs(s.quiet),
                secs(s.settle),
                secs(s.rss_every),
                secs(s.rss_base)
            ),
            (15, 60, 300, 10, 300)
        );
        assert_eq!(s.rss_tolerance, 0.10);
        assert!(!s.seed_given());
        assert!(s.check().is_ok());
    }

    #[test]
    fn a_given_seed_is_used_and_bad_combinations_are_refused() {
        let args = |extra: &[&'static str]| [&REQUIRED[..], extra].concat();
        let s =
            parse_args::<Settings>(&args(&["--seed", "20261201", "--faults", "leader"])).unwrap();
        assert_eq!((s.seed(), s.seed_given()), (20261201, true));
        assert_eq!(s.fault_kinds, [FaultKind::Leader]);
        let s = parse_args::<Settings>(&args(&["--nodes", "5"])).unwrap();
        assert!(s.check().is_err());
        let s = parse_args::<Settings>(&args(&["--secs", "0"])).unwrap();
        assert!(s.check().is_err());
        assert!(parse_args::<Settings>(&args(&["--faults", "kubelet"])).is_err());
    }
}
