//! The scale scenario's knobs (BENCH_SCALE_*, part of the bench driver's [`super::bench::Settings`]) and the
//! fleet's make-up at each node count ([`ScaleShape`]: the ratios of a 65,000-node cluster).

use std::path::PathBuf;
use std::time::Duration;

use super::{at_least_one, at_least_one_usize, secs, whole_numbers};

/// The scale scenario's knobs (BENCH_SCALE_*). The fleet's make-up is fixed: the ratios of a 65,000-node
/// cluster (benches/bench_driver/scale_fleet.rs), scaled to each node count.
#[derive(Clone, Debug, clap::Args)]
pub struct ScaleSettings {
    /// Scale scenario: node counts, one fleet each (hack/bench.sh gives each a fresh cluster).
    #[arg(id = "scale-nodes", long = "scale-nodes", env = "BENCH_SCALE_NODES", default_value = "1000 5000 20000 65000", value_parser = whole_numbers)]
    pub nodes: std::vec::Vec<usize>,
    /// Scale scenario: runs of the operator per node count, on the same fleet, for medians (0 counts as 1).
    #[arg(id = "scale-runs", long = "scale-runs", env = "BENCH_SCALE_RUNS", default_value = "2", value_parser = at_least_one_usize)]
    pub runs: usize,
    /// Scale scenario: the quiet window after convergence, seconds: the operator's writes and LISTs (0 and 0
    /// expected).
    #[arg(
        id = "scale-quiet-secs",
        long = "scale-quiet-secs",
        env = "BENCH_SCALE_QUIET_SECS",
        default_value = "60"
    )]
    pub quiet_secs: u64,
    /// Scale scenario: pod changes per second in churn (0 counts as 1).
    #[arg(id = "scale-churn-rate", long = "scale-churn-rate", env = "BENCH_SCALE_CHURN_RATE", default_value = "50", value_parser = at_least_one)]
    pub churn_rate: u64,
    /// Scale scenario: the churn period, seconds (it lasts until the timed changes are done, if they take longer).
    #[arg(
        id = "scale-churn-secs",
        long = "scale-churn-secs",
        env = "BENCH_SCALE_CHURN_SECS",
        default_value = "600"
    )]
    pub churn_secs: u64,
    /// Scale scenario: single GPU-pod changes timed for latency while the churn runs.
    #[arg(
        id = "scale-changes",
        long = "scale-changes",
        env = "BENCH_SCALE_CHANGES",
        default_value = "200"
    )]
    pub changes: usize,
    /// Scale scenario: runs of each peer (`scan`, kubectl-view-allocations), alternating, after each run of the
    /// operator (0 counts as 1).
    #[arg(id = "scale-peer-runs", long = "scale-peer-runs", env = "BENCH_SCALE_PEER_RUNS", default_value = "1", value_parser = at_least_one_usize)]
    pub peer_runs: usize,
    /// Scale scenario: creates (and status writes) in flight while the fleet is set up (0 counts as 1).
    #[arg(id = "scale-create-concurrency", long = "scale-create-concurrency", env = "BENCH_SCALE_CREATE_CONCURRENCY", default_value = "48", value_parser = at_least_one_usize)]
    pub create_concurrency: usize,
    /// Scale scenario: the longest wait for convergence (at start-up, after churn, after the relist) and for
    /// the relists, seconds.
    #[arg(id = "scale-settle-secs", long = "scale-settle-secs", env = "BENCH_SCALE_SETTLE_SECS", default_value = "900", value_parser = secs)]
    pub settle: Duration,
    /// Scale scenario: the script that restarts the cluster's API server for the relist (`stop-apiserver`,
    /// `compact-etcd`, `start-apiserver`; it finds the cluster by LOCAL_CLUSTER_STATE_DIR).
    #[arg(
        id = "scale-cluster-script",
        long = "scale-cluster-script",
        env = "BENCH_SCALE_CLUSTER_SCRIPT",
        default_value = "hack/local-cluster.sh"
    )]
    pub cluster_script: PathBuf,
    /// Scale scenario: the readers issues #37-#41 added (Kueue's objects, Prometheus with dcgm-exporter's
    /// series, the ClusterProperty; benches/bench_driver/scale_readers.rs): `both` runs the operator
    /// BENCH_SCALE_RUNS times without them, then puts them in place and runs it as often with them (side by
    /// side on one fleet: what they add); `on` only with them; `off` only without.
    #[arg(id = "scale-readers", long = "scale-readers", env = "BENCH_SCALE_READERS", value_enum, default_value_t = ScaleReaders::Both)]
    pub readers: ScaleReaders,
    /// Scale scenario: the prometheus binary (promtool beside it) for the readers (hack/bench.sh builds it).
    #[arg(
        id = "scale-prometheus",
        long = "scale-prometheus",
        env = "BENCH_PROMETHEUS"
    )]
    pub prometheus: Option<PathBuf>,
    /// Scale scenario: Kueue's CRDs (a directory) for the readers (hack/bench.sh builds Kueue, which copies them).
    #[arg(
        id = "scale-kueue-crds",
        long = "scale-kueue-crds",
        env = "BENCH_KUEUE_CRDS"
    )]
    pub kueue_crds: Option<PathBuf>,
}

/// Which runs the scale scenario makes: without the new readers, with them, or both (BENCH_SCALE_READERS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ScaleReaders {
    /// The runs without them, then the runs with them.
    Both,
    /// Only the runs with them.
    On,
    /// Only the runs without them (nothing to build).
    Off,
}

impl ScaleReaders {
    /// Whether the runs without the readers are made.
    pub fn without(self) -> bool {
        self != ScaleReaders::On
    }

    /// Whether the runs with the readers are made.
    pub fn with(self) -> bool {
        self != ScaleReaders::Off
    }
}

/// The scale scenario's fleet at one node count: the make-up of issue #26's 65,000-node cluster, each count
/// times N / 65,000, rounded, at least 1 (and room left for one plain device-plugin node and one node neither
/// tainted nor cordoned). At 65,000: 13,000 GPU nodes (every 5th node), 1,000 of them DRA nodes with 2
/// claims each; of the 12,000 device-plugin nodes 1,200 MIG, 1,200 time-sliced, 650 tainted, 650 cordoned;
/// 100,000 pods, 20,000 requesting GPUs, 500 of those pending. Which GPU slot holds which kind: `is_dra_slot`,
/// `device_index`, `kind_rank` and `taint_rank` (strides: every count exact, the kinds scattered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ScaleShape {
    /// Nodes in all.
    pub nodes: usize,
    /// Every [`ScaleShape::GPU_EVERY`]-th node: the device-plugin nodes and the DRA nodes.
    pub gpu_nodes: usize,
    /// GPU nodes whose GPUs are DRA devices (a ResourceSlice each), no device plugin.
    pub dra_nodes: usize,
    /// Device-plugin nodes with MIG devices.
    pub mig_nodes: usize,
    /// Device-plugin nodes whose GPUs are time-sliced.
    pub time_sliced_nodes: usize,
    /// Device-plugin nodes tainted `nvidia.com/gpu=present:NoSchedule`.
    pub tainted: usize,
    /// Device-plugin nodes cordoned.
    pub cordoned: usize,
    /// Pods in all.
    pub pods: usize,
    /// Of which request GPUs.
    pub gpu_pods: usize,
    /// Of which are pending.
    pub pending: usize,
    /// ResourceClaims, each allocated one DRA device.
    pub claims: usize,
}

impl ScaleShape {
    /// The node count the make-up is given for.
    pub const BASE_NODES: usize = 65_000;
    /// Every 5th node is a GPU node.
    pub const GPU_EVERY: usize = 5;
    /// Claims per DRA node (of its 8 devices).
    pub const CLAIMS_PER_DRA_NODE: usize = 2;

    /// The fleet of `nodes` nodes.
    pub fn at(nodes: usize) -> Self {
        let scaled =
            |base: usize| ((base * nodes + Self::BASE_NODES / 2) / Self::BASE_NODES).max(1);
        let gpu_nodes = nodes.div_ceil(Self::GPU_EVERY);
        let dra_nodes = scaled(1_000).min(gpu_nodes.saturating_sub(1));
        let half = (gpu_nodes - dra_nodes).saturating_sub(1) / 2;
        let gpu_pods = scaled(20_000);
        ScaleShape {
            nodes,
            gpu_nodes,
            dra_nodes,
            mig_nodes: scaled(1_200).min(half),
            time_sliced_nodes: scaled(1_200).min(half),
            tainted: scaled(650).min(half),
            cordoned: scaled(650).min(half),
            pods: scaled(100_000).max(gpu_pods),
            gpu_pods,
            pending: scaled(500).min(gpu_pods),
            claims: dra_nodes * Self::CLAIMS_PER_DRA_NODE,
        }
    }

    /// The device-plugin GPU nodes.
    pub fn device_nodes(&self) -> usize {
        self.gpu_nodes - self.dra_nodes
    }

    /// Whether GPU slot `j` (of `gpu_nodes`) is a DRA node's: `dra_nodes` slots spread evenly.
    pub fn is_dra_slot(&self, j: usize) -> bool {
        (j + 1) * self.dra_nodes / self.gpu_nodes != j * self.dra_nodes / self.gpu_nodes
    }

    /// The number of the device-plugin node in GPU slot `j` (a slot that is no DRA slot): the slots before it
    /// that are not.
    pub fn device_index(&self, j: usize) -> usize {
        j - j * self.dra_nodes / self.gpu_nodes
    }

    /// Where device-plugin node `k` stands in the order of kinds: below `mig_nodes` a MIG node, below
    /// `mig_nodes + time_sliced_nodes` a time-sliced one, else a plain one (a permutation of the nodes).
    pub fn kind_rank(&self, k: usize) -> usize {
        let n = self.device_nodes();
        k * stride(n, 0) % n
    }

    /// Where device-plugin node `k` stands in the order of taints: below `tainted` tainted, below `tainted +
    /// cordoned` cordoned, else neither (another permutation).
    pub fn taint_rank(&self, k: usize) -> usize {
        let n = self.device_nodes();
        (k * stride(n, 1) + n / 2) % n
    }
}

/// A stride that visits each of `n` items once (coprime with `n`): the `nth` such of a few primes.
fn stride(n: usize, nth: usize) -> usize {
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    [7, 11, 13, 17, 19, 23, 29, 31, 37, 41]
        .into_iter()
        .filter(|&p| gcd(p, n.max(1)) == 1)
        .nth(nth)
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_65000_node_fleet_is_the_issues() {
        let s = ScaleShape::at(65_000);
        assert_eq!(
            (s.gpu_nodes, s.dra_nodes, s.device_nodes()),
            (13_000, 1_000, 12_000)
        );
        assert_eq!((s.mig_nodes, s.time_sliced_nodes), (1_200, 1_200));
        assert_eq!((s.tainted, s.cordoned), (650, 650));
        assert_eq!(
            (s.pods, s.gpu_pods, s.pending, s.claims),
            (100_000, 20_000, 500, 2_000)
        );
    }

    #[test]
    fn smaller_fleets_keep_the_ratios_and_one_of_each() {
        let s = ScaleShape::at(1_000);
        assert_eq!(
            (s.gpu_nodes, s.dra_nodes, s.mig_nodes, s.time_sliced_nodes),
            (200, 15, 18, 18)
        );
        assert_eq!((s.tainted, s.cordoned), (10, 10));
        assert_eq!(
            (s.pods, s.gpu_pods, s.pending, s.claims),
            (1_538, 308, 8, 30)
        );
        let tiny = ScaleShape::at(20);
        assert_eq!(
            (tiny.gpu_nodes, tiny.dra_nodes, tiny.device_nodes()),
            (4, 1, 3)
        );
        assert_eq!(
            (
                tiny.mig_nodes,
                tiny.time_sliced_nodes,
                tiny.tainted,
                tiny.cordoned
            ),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn the_slots_hold_exactly_the_counts() {
        for nodes in [20, 1_000, 5_000, 65_000] {
            let s = ScaleShape::at(nodes);
            let device: Vec<usize> = (0..s.gpu_nodes)
                .filter(|&j| !s.is_dra_slot(j))
                .map(|j| s.device_index(j))
                .collect();
            assert_eq!(device.len(), s.device_nodes(), "{nodes}");
            assert!(device.iter().enumerate().all(|(i, &k)| i == k), "{nodes}");
            for rank in [ScaleShape::kind_rank, ScaleShape::taint_rank] {
                let mut ranks: Vec<usize> = device.iter().map(|&k| rank(&s, k)).collect();
                ranks.sort_unstable();
                ranks.dedup();
                assert_eq!(ranks.len(), s.device_nodes(), "a permutation at {nodes}");
            }
        }
    }
}
