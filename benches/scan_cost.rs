//! `make scan-cost` (`cargo bench --bench scan-cost`): the CPU of one scan of a whole fleet, in process, the
//! pass every change costs the operator (sources/mod.rs `Snapshot::scan`: the scope, every node, the pods'
//! holdings, the totals; entries shared through the interner as the operator shares them).
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
//! Usage: `cargo bench --bench scan-cost -- [NODES ...]` (default 5000 65000).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpu_inventory_operator::inventory::allocation::GpuPod;
use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
use gpu_inventory_operator::inventory::interner::NodeInterner;
use gpu_inventory_operator::inventory::scanner::ScanScope;
use gpu_inventory_operator::inventory::{ScanInput, scan};
use testkit::cached::{cached_node, decoded_pod, listed_node, listed_pod};
use testkit::cluster::{load_templates, make_node};
use testkit::pods::{Phase, PodRec, namespace_of};

/// The fleet of `n` nodes as the operator caches it, and its GPU pods.
fn fleet(n: usize) -> (Vec<Arc<ClusterNode>>, Vec<Arc<GpuPod>>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let templates = load_templates(&dir).expect("the fixtures load");
    let nodes: Vec<Arc<ClusterNode>> = (0..n)
        .map(|i| Arc::new(cached_node(&listed_node(make_node(&templates, i, 0), i))))
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
    for n in sizes {
        let (nodes, pods) = fleet(n);
        let mut pods = pods;
        let interner = NodeInterner::default();
        let mut held = None;
        let built = timed(runs, || {
            // The previous scan is held while the next is made, as a publisher holds its last one.
            held = Some(scan(
                ScanInput::nodes(nodes.iter().map(|n| n.as_ref()))
                    .pods(pods.iter().map(|p| p.as_ref()))
                    .interner(&interner),
            ));
        });
        let interner = NodeInterner::default();
        let mut next = 0;
        let changed = timed(runs, || {
            for _ in 0..50.min(pods.len()) {
                pods[next] = Arc::new((*pods[next]).clone());
                next = (next + 1) % pods.len();
            }
            held = Some(scan(ScanInput::shared(&nodes, &pods).interner(&interner)));
        });
        let (scope, _, _) = timed(runs, || {
            std::hint::black_box(ScanScope::of(nodes.iter().map(|n| n.as_ref())));
        });
        let gpu_nodes = held.as_ref().map_or(0, |i| i.total_gpu_nodes);
        println!(
            "  {n:>6} nodes ({gpu_nodes} GPU, {} GPU pods); ScanScope::of {:.1} ms",
            pods.len(),
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
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
