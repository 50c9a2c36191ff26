//! `make scan-cost` (`cargo bench --bench scan-cost`): the CPU of one scan of a whole fleet, in process, the
//! pass every change costs the operator (sources/mod.rs `Snapshot::scan`: the scope, every node, the pods'
//! holdings, the totals; entries shared through the scan memory as the operator shares them).
//!
//! The fleet is the bench's (testkit::cluster::make_node from tests/fixtures: 1 node in 5 a GPU node) with
//! 1.54 pods a node of which one in five asks for GPUs, bound round-robin to the GPU nodes, as in `make bench`'s
//! scale scenario. Each size is scanned SCAN_COST_RUNS times (default 15) after one warm-up, and the median,
//! minimum and maximum are printed with the cost per node; `ScanScope::of` is timed alone too. Two passes
//! are timed side by side:
//! - every entry built: the scan without the caches' `Arc`s, as before a GPU node's entry could be reused;
//! - a pass after 50 pod changes: the operator's scan (`ScanInput::shared`), with 50 GPU pods replaced by new
//!   `Arc`s before each scan, as the pod cache replaces a changed pod (50 changes a pass is the scale
//!   scenario's churn of 50 changes/s at about one pass a second). Only their nodes are built again.
//!
//! Each size is measured three times, side by side: the plain fleet; the same fleet with topology labels on
//! every GPU node (`nvidia.com/gpu.clique` of racks of 18, GKE block and subblock, a zone: what a GB200 fleet
//! carries) scanned without reading any level (`TopologyLevels::none()`); and that fleet with its levels read.
//! The cost of reading topology (docs/topology.md) is the third over the second, a ratio; the second over the
//! first is only the labels' own weight. At the largest size one `fit` of a rack-sized job is timed on the
//! labelled fleet, against one scan, one `fit --plan` of an 8-GPU pod and one of a 512-GPU gang (64 pods of 8
//! in one GKE block) (the plans' search alone: every GPU node holds a pod, so none has 8 free).
//!
//! A fourth way adds Kueue (docs/quotas.md) to the labelled fleet read: 20 ResourceFlavors (one GKE block
//! each), 50 ClusterQueues giving quota on two flavors each, their LocalQueues and 2,000 pending Workloads
//! (2 to 18 pods of 4 GPUs, half of them required in one subblock), checked against the GPUs on every scan.
//! The cost of the quota checks is the fourth over the third.
//!
//! Usage: `cargo bench --bench scan-cost -- [NODES ...]` (default 5000 65000).

use std::path::Path;

use k8s_openapi::api::core::v1::Node;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpu_inventory_operator::inventory::allocation::GpuPod;
use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
use gpu_inventory_operator::inventory::memory::ScanMemory;
use gpu_inventory_operator::inventory::quotas::KueueInput;
use gpu_inventory_operator::inventory::quotas::kueue::{
    Flavor, FlavorQuotas, LocalQueue, PendingWorkload, PodSet, QuotaHolder, ResourceGroup,
    ResourceQuota,
};
use gpu_inventory_operator::inventory::scanner::ScanScope;
use gpu_inventory_operator::inventory::topology::TopologyLevels;
use gpu_inventory_operator::inventory::{ScanInput, scan};
use testkit::cached::{cached_node, decoded_pod, listed_node, listed_pod};
use testkit::cluster::{BLOCK_RACKS, RACK_NODES, load_templates, make_node, topology_labels};
use testkit::pods::{Phase, PodRec, namespace_of};

/// Adds a GB200 fleet's topology labels (`testkit::cluster::topology_labels`) to GPU node `i` (every fifth
/// node is one).
fn with_topology(mut node: Node, i: usize) -> Node {
    if !i.is_multiple_of(5) {
        return node;
    }
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    labels.extend(topology_labels(i / 5));
    node
}

/// The fleet of `n` nodes as the operator caches it, and its GPU pods; with topology labels when asked.
fn fleet(n: usize, topology: bool) -> (Vec<Arc<ClusterNode>>, Vec<Arc<GpuPod>>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let templates = load_templates(&dir).expect("the fixtures load");
    let nodes: Vec<Arc<ClusterNode>> = (0..n)
        .map(|i| {
            let node = make_node(&templates, i, 0);
            let node = if topology {
                with_topology(node, i)
            } else {
                node
            };
            Arc::new(cached_node(&listed_node(node, i)))
        })
        .collect();
    let gpu_nodes: Vec<&str> = (0..n).step_by(5).map(|i| &*nodes[i].name).collect();
    let gpu_pods = n * 20_000 / 65_000;
    let pods = (0..gpu_pods)
        .filter_map(|i| {
            let rec = PodRec {
                namespace: namespace_of(i),
                name: format!("bench-pod-{i:06}"),
                node: Some(gpu_nodes[i % gpu_nodes.len()].to_owned()),
                gpus: 1,
                phase: Phase::Running,
            };
            GpuPod::from_pod(&decoded_pod(&listed_pod(&rec, i).ok()?)).map(Arc::new)
        })
        .collect();
    (nodes, pods)
}

/// Kueue's objects of the fourth way, for a fleet of `n` nodes (its GKE blocks: `topology_labels`).
struct Kueue {
    flavors: Vec<Arc<Flavor>>,
    queues: Vec<Arc<QuotaHolder>>,
    local: Vec<Arc<LocalQueue>>,
    workloads: Vec<Arc<PendingWorkload>>,
}

impl Kueue {
    const FLAVORS: usize = 20;
    const QUEUES: usize = 50;
    const WORKLOADS: usize = 2_000;
    const GPU: &str = "nvidia.com/gpu";
    const SUBBLOCK: &str = "cloud.google.com/gce-topology-subblock";

    fn of_fleet(n: usize) -> Kueue {
        let blocks = (n / 5).div_ceil(RACK_NODES).div_ceil(BLOCK_RACKS).max(1);
        let flavors = (0..Self::FLAVORS)
            .map(|f| {
                Arc::new(Flavor {
                    name: format!("gb200-{f}"),
                    node_labels: [(
                        "cloud.google.com/gce-topology-block".to_owned(),
                        format!("block-{}", f % blocks),
                    )]
                    .into(),
                    ..Flavor::default()
                })
            })
            .collect();
        let quota = |flavor: usize| FlavorQuotas {
            flavor: format!("gb200-{flavor}"),
            resources: vec![ResourceQuota {
                resource: Self::GPU.to_owned(),
                nominal: 64,
                ..ResourceQuota::default()
            }],
        };
        let queues = (0..Self::QUEUES)
            .map(|q| {
                Arc::new(QuotaHolder {
                    name: format!("team-{q}"),
                    cohort: Some(format!("org-{}", q % 5)),
                    groups: vec![ResourceGroup {
                        covered: vec![Self::GPU.to_owned()],
                        flavors: vec![quota(q % Self::FLAVORS), quota((q + 7) % Self::FLAVORS)],
                    }],
                })
            })
            .collect();
        let local = (0..Self::QUEUES)
            .map(|q| {
                Arc::new(LocalQueue {
                    namespace: format!("ns-{q}"),
                    name: "user".to_owned(),
                    cluster_queue: format!("team-{q}"),
                })
            })
            .collect();
        let workloads = (0..Self::WORKLOADS)
            .map(|w| {
                Arc::new(PendingWorkload {
                    namespace: format!("ns-{}", w % Self::QUEUES),
                    name: format!("job-{w:05}"),
                    queue: "user".to_owned(),
                    pod_sets: vec![PodSet {
                        name: "main".to_owned(),
                        count: 2 + (w % 17) as u64,
                        per_pod: [(Self::GPU.to_owned(), 4)].into_iter().collect(),
                        required_level: w.is_multiple_of(2).then(|| Self::SUBBLOCK.to_owned()),
                    }],
                })
            })
            .collect();
        Kueue {
            flavors,
            queues,
            local,
            workloads,
        }
    }

    fn input(&self) -> KueueInput<'_> {
        KueueInput {
            flavors: &self.flavors,
            cluster_queues: &self.queues,
            cohorts: &[],
            local_queues: &self.local,
            workloads: &self.workloads,
        }
    }
}

/// The scan's input with Kueue's objects, when given.
fn add_kueue<'a>(input: ScanInput<'a>, kueue: Option<&'a Kueue>) -> ScanInput<'a> {
    match kueue {
        Some(k) => input.kueue(k.input()),
        None => input,
    }
}

/// Median, minimum and maximum of `runs` timings of `f` (after one warm-up).
fn timed(runs: usize, mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    f();
    let mut took: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    took.sort();
    (took[runs / 2], took[0], took[runs - 1])
}

fn main() {
    let runs: usize = std::env::var("SCAN_COST_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|r| *r > 0)
        .unwrap_or(15);
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![5_000, 65_000]
    } else {
        sizes
    };
    println!("scan cost: median (min..max) of {runs} scans, one thread");
    let largest = sizes.iter().copied().max().unwrap_or(0);
    // Each size three ways: no topology labels; the labels on every GPU node but no level read (what an
    // operator without topology pays for the same objects); the labels read. The growth topology costs is
    // the third over the second: the second over the first is only the labels' own weight.
    // The fourth way adds Kueue's objects to the third.
    let ways = [
        (false, TopologyLevels::built_in(), false),
        (true, TopologyLevels::none(), false),
        (true, TopologyLevels::built_in(), false),
        (true, TopologyLevels::built_in(), true),
    ];
    for (n, (topology, levels, with_kueue)) in sizes.iter().flat_map(|n| ways.map(|w| (*n, w))) {
        let (nodes, pods) = fleet(n, topology);
        let kueue = with_kueue.then(|| Kueue::of_fleet(n));
        let mut pods = pods;
        let mut memory = ScanMemory::default();
        let mut held = None;
        let built = timed(runs, || {
            // The previous scan is held while the next is made, as a publisher holds its last one.
            held = Some(scan(add_kueue(
                ScanInput::nodes(nodes.iter().map(|n| n.as_ref()))
                    .pods(pods.iter().map(|p| p.as_ref()))
                    .topology(levels)
                    .memory(&mut memory),
                kueue.as_ref(),
            )));
        });
        let mut memory = ScanMemory::default();
        let mut next = 0;
        let changed = timed(runs, || {
            for _ in 0..50.min(pods.len()) {
                pods[next] = Arc::new((*pods[next]).clone());
                next = (next + 1) % pods.len();
            }
            held = Some(scan(add_kueue(
                ScanInput::shared(&nodes, &pods)
                    .topology(levels)
                    .memory(&mut memory),
                kueue.as_ref(),
            )));
        });
        let (scope, _, _) = timed(runs, || {
            std::hint::black_box(ScanScope::of(nodes.iter().map(|n| n.as_ref())));
        });
        let gpu_nodes = held.as_ref().map_or(0, |i| i.total_gpu_nodes);
        println!(
            "  {n:>6} nodes ({gpu_nodes} GPU, {} GPU pods, {}); ScanScope::of {:.1} ms",
            pods.len(),
            match (
                topology,
                std::ptr::eq(levels, TopologyLevels::none()),
                &kueue
            ) {
                (false, _, _) => "no topology labels".to_owned(),
                (true, true, _) => "topology labels on every GPU node, not read".to_owned(),
                (true, false, None) => "topology labels on every GPU node, read".to_owned(),
                (true, false, Some(_)) => {
                    let report = held.as_ref().and_then(|i| i.quotas.as_ref());
                    format!(
                        "topology labels read, and Kueue: {} flavors, {} ClusterQueues, {} pending Workloads \
                         ({} quota entries, {} cannot fit)",
                        Kueue::FLAVORS,
                        Kueue::QUEUES,
                        Kueue::WORKLOADS,
                        report.map_or(0, |r| r.quotas.len()),
                        report.map_or(0, |r| r.workload_issues.len())
                    )
                }
            },
            ms(scope)
        );
        for (pass, (median, min, max)) in [
            ("every entry built", built),
            ("after 50 pod changes", changed),
        ] {
            println!(
                "    {pass:<22} {:>7.1} ms ({:.1}..{:.1}), {:.2} us a node",
                ms(median),
                ms(min),
                ms(max),
                median.as_secs_f64() * 1e6 / n as f64,
            );
        }
        if let (Some(kueue), Some(inventory)) = (&kueue, &held) {
            time_quotas(kueue, inventory, &nodes, runs);
        }
        if topology && !with_kueue && !std::ptr::eq(levels, TopologyLevels::none()) && n == largest
        {
            time_fit(&held, runs);
            time_plan(&held, runs);
        }
    }
}

/// The quota checks alone (`quotas::assess`) on the scan just made: what the fourth way adds to a pass.
fn time_quotas(
    kueue: &Kueue,
    inventory: &gpu_inventory_operator::inventory::model::Inventory,
    nodes: &[Arc<ClusterNode>],
    runs: usize,
) {
    use gpu_inventory_operator::inventory::quotas::{NodeView, QuotaMemo, QuotaScope, assess};
    let labels: std::collections::HashMap<&str, &Arc<ClusterNode>> =
        nodes.iter().map(|n| (&*n.name, n)).collect();
    let views: Vec<NodeView<'_>> = inventory
        .nodes
        .iter()
        .map(|entry| NodeView {
            entry,
            labels: &labels[entry.name.as_str()].labels,
            node: Some(labels[entry.name.as_str()]),
        })
        .collect();
    let input = kueue.input();
    let mut memo = QuotaMemo::default();
    for (what, keep) in [("nothing kept", false), ("members, verdicts kept", true)] {
        let (median, min, max) = timed(runs, || {
            let memo = keep.then_some(&mut memo);
            std::hint::black_box(assess(&views, &input, &QuotaScope::Cluster, memo));
        });
        println!(
            "    quotas::assess alone   {:>7.1} ms ({:.1}..{:.1}), {what}",
            ms(median),
            ms(min),
            ms(max)
        );
    }
}

/// One `fit` of a rack-sized job (without a level: every level tried), on the scan just made.
fn time_fit(inventory: &Option<gpu_inventory_operator::inventory::model::Inventory>, runs: usize) {
    use gpu_inventory_operator::inventory::topology::{FitRequest, fit};
    let Some(inventory) = inventory else { return };
    let request = FitRequest {
        gpus: 64,
        ..Default::default()
    };
    let mut fits = false;
    let (median, min, max) = timed(runs, || {
        fits = fit(&inventory.nodes, &request).is_ok_and(|a| a.fits);
    });
    println!(
        "    fit --gpus 64          {:>7.1} ms ({:.1}..{:.1}), fits: {fits}",
        ms(median),
        ms(min),
        ms(max)
    );
}

/// One `fit --plan` of an 8-GPU pod that fits no node (each GPU node holds one or two pods): the plan's
/// search alone, on the scan just made, every pod movable (the traits a live plan reads cost one list).
fn time_plan(inventory: &Option<gpu_inventory_operator::inventory::model::Inventory>, runs: usize) {
    use gpu_inventory_operator::inventory::fragmentation::plan::{PodTraits, plan};
    let Some(inventory) = inventory else {
        return;
    };
    let mut moves = 0;
    let (median, min, max) = timed(runs, || {
        let planned = plan(&inventory.nodes, 8, |_, _| PodTraits::default());
        moves = planned.map_or(0, |p| p.moves.len());
    });
    println!(
        "    fit --gpus 8 --plan    {:>7.1} ms ({:.1}..{:.1}), the plan alone: {moves} move(s)",
        ms(median),
        ms(min),
        ms(max)
    );
    // A 512-GPU gang: 64 pods of 8 GPUs, on any nodes and in one GKE block (every GPU node holds a pod, so
    // each host frees one or two GPUs; a block holds 144 GPU nodes of the fixtures' mixed products).
    use gpu_inventory_operator::inventory::fragmentation::gang_plan::{GangJob, gang_plan};
    for level in [None, Some("cloud.google.com/gce-topology-block")] {
        let gang = GangJob {
            pods: 64,
            gpus_per_pod: 8,
            level,
            tolerations: &[],
        };
        let mut outcome = String::new();
        let (median, min, max) = timed(runs, || {
            outcome = match gang_plan(&inventory.nodes, &gang, |_, _| PodTraits::default()) {
                Ok(plan) => format!("{} GPUs displaced", plan.displaced_gpus),
                Err(no) => format!("no plan: {no:?}").chars().take(100).collect(),
            };
        });
        println!(
            "    fit --gpus 512 --gpus-per-pod 8 --plan, level {}: {:.1} ms ({:.1}..{:.1}), {outcome}",
            level.unwrap_or("none"),
            ms(median),
            ms(min),
            ms(max)
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
