//! The soak's knobs (SOAK_*; hack/soak.sh sets the paths), read once at start with the test kit's readers
//! (`testkit::settings`). A bad value is an error that names the variable, not a panic.

use std::path::PathBuf;
use std::time::Duration;

use testkit::settings::{num, required, secs, var};

use crate::Res;
use crate::faults::FaultKind;

#[derive(Clone, Debug)]
pub struct Settings {
    pub kubeconfig: PathBuf,
    /// The local cluster's state dir: pid files, the audit log, and LOCAL_CLUSTER_STATE_DIR for the faults.
    pub cluster_dir: PathBuf,
    pub operator_bin: PathBuf,
    pub fixtures: PathBuf,
    /// report.json, report.txt, rss.png and logs/ go here.
    pub out_dir: PathBuf,
    /// The soak window: churn and faults; the last fault ends with it.
    pub secs: u64,
    pub seed: u64,
    /// Whether the seed came from SOAK_SEED (else it was drawn, and is printed so the run can be repeated).
    pub seed_given: bool,
    pub nodes: usize,
    pub gpu_every: usize,
    pub pods_per_gpu_node: u64,
    pub node_images: usize,
    /// CPU nodes that also publish GPUs as a ResourceSlice (where DRA is served), and their GPUs each.
    pub dra_nodes: usize,
    pub dra_gpus_per_node: usize,
    /// Changes per second, all kinds together.
    pub churn_rate: f64,
    /// The mean gap between faults (each gap is drawn from [mean/2, 3 mean/2]).
    pub fault_every: Duration,
    pub fault_kinds: Vec<FaultKind>,
    pub lease: Duration,
    pub quiet: Duration,
    pub settle: Duration,
    pub rss_every: Duration,
    /// The RSS sample the end is held against ("after the first 5 minutes").
    pub rss_base: Duration,
    /// Allowed end / base RSS ratio above 1 (0.10: within 10 %).
    pub rss_tolerance: f64,
}

/// A seed from the clock and the pid, when SOAK_SEED does not give one.
fn drawn_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    (nanos ^ (u64::from(std::process::id()) << 32)) % 1_000_000_000
}

impl Settings {
    pub fn from_env() -> Res<Self> {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let seed = var("SOAK_SEED");
        let fault_kinds = var("SOAK_FAULTS")
            .unwrap_or_else(|| "apiserver etcd leader".into())
            .split_whitespace()
            .map(FaultKind::parse)
            .collect::<Res<Vec<_>>>()?;
        let s = Settings {
            kubeconfig: required("SOAK_KUBECONFIG")?,
            cluster_dir: required("SOAK_CLUSTER_DIR")?,
            operator_bin: required("SOAK_OPERATOR_BIN")?,
            fixtures: var("SOAK_FIXTURES")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("tests/fixtures")),
            out_dir: var("SOAK_OUT_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target/soak")),
            secs: num("SOAK_SECS", 1800)?,
            seed: match &seed {
                Some(v) => v
                    .parse()
                    .map_err(|_| format!("SOAK_SEED={v}: expected a whole number"))?,
                None => drawn_seed(),
            },
            seed_given: seed.is_some(),
            nodes: num("SOAK_NODES", 5000)?,
            gpu_every: num("SOAK_GPU_EVERY", 10usize)?.max(1),
            pods_per_gpu_node: num("SOAK_PODS_PER_GPU_NODE", 2)?,
            node_images: num("SOAK_NODE_IMAGES", 20)?,
            dra_nodes: num("SOAK_DRA_NODES", 100)?,
            dra_gpus_per_node: num("SOAK_DRA_GPUS_PER_NODE", 4usize)?.max(1),
            churn_rate: num("SOAK_CHURN_RATE", 3.0)?,
            fault_every: secs("SOAK_FAULT_EVERY_SECS", 120)?,
            fault_kinds,
            lease: secs("SOAK_LEASE_SECS", 15)?,
            quiet: secs("SOAK_QUIET_SECS", 60)?,
            settle: secs("SOAK_SETTLE_SECS", 300)?,
            rss_every: secs("SOAK_RSS_EVERY_SECS", 10)?,
            rss_base: secs("SOAK_RSS_BASE_SECS", 300)?,
            rss_tolerance: num("SOAK_RSS_TOLERANCE", 0.10)?,
        };
        if s.churn_rate <= 0.0 || s.fault_every.is_zero() || s.secs == 0 {
            return Err(
                "SOAK_CHURN_RATE, SOAK_FAULT_EVERY_SECS and SOAK_SECS must be above 0".into(),
            );
        }
        if s.nodes < s.gpu_every {
            return Err(format!(
                "SOAK_NODES={} makes no GPU node (every {}th is one)",
                s.nodes, s.gpu_every
            )
            .into());
        }
        Ok(s)
    }

    /// The soak window.
    pub fn window(&self) -> Duration {
        Duration::from_secs(self.secs)
    }
}
