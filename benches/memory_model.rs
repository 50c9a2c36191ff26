//! `make memory-model` (`cargo bench --bench memory-model`): what each kind of object costs the operator in
//! heap, measured with dhat's heap statistics (the allocator is dhat's, over glibc's malloc) and with glibc's
//! own count of bytes in use (`mallinfo2`, which includes each block's header and rounding), and the formula
//! that adds them up for a fleet.
//!
//! Each kind is built the way the operator builds it, from the bench's own node templates
//! (tests/fixtures, testkit::cluster::make_node, 20 container images) and pods (testkit::pods):
//! - a node in the node cache: JSON decoded slim, turned into the core's `ClusterNode`
//!   (`SlimNode::to_cluster_node`: labels and resources interned) in the stripped store, as `sources/nodes.rs`
//!   does; GPU and other nodes apart;
//! - a pod in the pod cache: decoded, reduced to a `GpuPod` (`None` for a pod asking for no GPU) in the
//!   stripped store, as `sources/pods.rs` does;
//! - a GPU node's entry in the model: what a scan holds once its interner shares it, per GPU node, and the
//!   scan's transient peak.
//!
//! It prints bytes per object (dhat's, glibc's, and the "counted" bytes the formula uses: dhat's plus glibc's
//! 16 B a block, see `malloc_bytes`), then the formula's heap for the fleets of `make bench`'s scale scenario
//! (BENCH_SCALE_NODES sizes, the 65,000-node shares), which docs/scale.md compares with the measured peaks.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use gpu_inventory_operator::inventory::allocation::GpuPod;
use gpu_inventory_operator::inventory::interner::NodeInterner;
use gpu_inventory_operator::inventory::{ScanInput, scan};
use gpu_inventory_operator::sources::stripped::stripped_store;
use kube::runtime::watcher;
use testkit::cached::{decoded_pod, listed_node, listed_pod};
use testkit::cluster::{load_templates, make_node};
use testkit::lib_api::{ClusterNode, HealthTable, SlimNode};
use testkit::pods::{Phase, PodRec, namespace_of};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// Objects of each kind measured at once: enough that the store's table growth averages out.
const SAMPLE: usize = 4_000;

/// Heap in use now: dhat's bytes and blocks, and glibc's bytes (headers and rounding included).
#[derive(Clone, Copy)]
struct Heap {
    bytes: usize,
    blocks: usize,
    glibc: usize,
}

fn heap() -> Heap {
    let stats = dhat::HeapStats::get();
    // SAFETY: mallinfo2 reads the allocator's counters; it has no preconditions.
    let info = unsafe { libc::mallinfo2() };
    Heap {
        bytes: stats.curr_bytes,
        blocks: stats.curr_blocks,
        glibc: info.uordblks,
    }
}

/// Bytes per object between two readings: (dhat bytes, blocks, glibc bytes).
fn per(before: Heap, after: Heap, n: usize) -> (f64, f64, f64) {
    let d = |a: usize, b: usize| (b as f64 - a as f64) / n as f64;
    (
        d(before.bytes, after.bytes),
        d(before.blocks, after.blocks),
        d(before.glibc, after.glibc),
    )
}

/// The node cache's cost per node of one kind (`gpu`: every 5th index is a GPU node, as in the bench).
fn nodes_in_cache(dir: &Path, gpu: bool) -> ((f64, f64, f64), Vec<Arc<ClusterNode>>) {
    let templates = load_templates(dir).expect("the fixtures load");
    let indexes: Vec<usize> = (0..SAMPLE * 5)
        .filter(|i| i.is_multiple_of(5) == gpu)
        .take(SAMPLE)
        .collect();
    let wire: Vec<Vec<u8>> = indexes
        .iter()
        .map(|&i| listed_node(make_node(&templates, i, 20), i))
        .collect();
    let (store, mut writer) =
        stripped_store(|slim: &SlimNode| Some(slim.to_cluster_node(HealthTable::defaults())));
    let before = heap();
    for bytes in &wire {
        let slim: SlimNode = serde_json::from_slice(bytes).expect("a listed node decodes slim");
        writer.apply(watcher::Event::Apply(slim));
    }
    let after = heap();
    (per(before, after, SAMPLE), store.state())
}

/// The pod cache's cost per pod: GPU pods (bound, running) or CPU pods (dropped by the strip).
fn pods_in_cache(gpu: bool, nodes: &[Arc<ClusterNode>]) -> ((f64, f64, f64), Vec<Arc<GpuPod>>) {
    let wire: Vec<Vec<u8>> = (0..SAMPLE)
        .map(|i| {
            let rec = PodRec {
                namespace: namespace_of(i),
                name: format!("bench-pod-{i:06}"),
                node: Some(nodes[i % nodes.len()].name.to_string()),
                gpus: if gpu { 1 + (i % 2) as u64 } else { 0 },
                phase: Phase::Running,
            };
            listed_pod(&rec, i).expect("a pod builds")
        })
        .collect();
    let (store, mut writer) = stripped_store(GpuPod::from_pod);
    let before = heap();
    for bytes in &wire {
        writer.apply(watcher::Event::Apply(decoded_pod(bytes)));
    }
    let after = heap();
    let kept = black_box(store.state());
    (per(before, after, SAMPLE), kept)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let (cpu_node, cpu_nodes) = nodes_in_cache(&dir, false);
    let (gpu_node, gpu_nodes) = nodes_in_cache(&dir, true);
    drop(cpu_nodes);
    let (cpu_pod, _) = pods_in_cache(false, &gpu_nodes);
    let (gpu_pod, gpu_pods) = pods_in_cache(true, &gpu_nodes);

    // One scan of the GPU nodes with their pods, held as the publishers hold it (entries interned).
    let interner = NodeInterner::default();
    let before = heap();
    let inventory = scan(
        ScanInput::nodes(gpu_nodes.iter().map(|n| n.as_ref()))
            .pods(gpu_pods.iter().map(|p| p.as_ref()))
            .interner(&interner),
    );
    let held = heap();
    let peak = dhat::HeapStats::get().max_bytes;
    let entries = inventory.total_gpu_nodes as usize;
    let entry = per(before, held, entries);
    let transient = peak.saturating_sub(held.bytes) as f64 / entries as f64;
    drop(inventory);

    println!(
        "memory model (bytes per object; dhat requested bytes, dhat blocks, glibc bytes in use)"
    );
    let row = |what: &str, (bytes, blocks, glibc): (f64, f64, f64)| {
        let counted = malloc_bytes((bytes, blocks, glibc));
        println!(
            "  {what:<44} {bytes:>8.0} B {blocks:>6.1} blocks {glibc:>8.0} B glibc {counted:>8.0} B counted"
        );
    };
    row("node in the node cache, not a GPU node", cpu_node);
    row("node in the node cache, GPU node", gpu_node);
    row("pod in the pod cache, asking for no GPU", cpu_pod);
    row("pod in the pod cache, asking for GPUs", gpu_pod);
    row("GPU node's entry in a held scan", entry);
    println!(
        "  {:<44} {transient:>8.0} B (dhat's peak above the held scan, per GPU node)",
        "a scan's transient"
    );
    let [cpu_node, gpu_node, gpu_pod, cpu_pod, entry] =
        [cpu_node, gpu_node, gpu_pod, cpu_pod, entry].map(malloc_bytes);
    println!(
        "formula: heap = {:.0} x nodes + {:.0} x GPU nodes + {:.0} x GPU pods + {:.0} x pods (counted bytes; a \
         GPU node counts as a node plus its extra)",
        cpu_node,
        gpu_node + entry - cpu_node,
        gpu_pod,
        cpu_pod
    );
    for nodes in [1_000usize, 5_000, 20_000, 65_000] {
        // The scale scenario's shares of its 65,000-node fleet: 1 in 5 a GPU node, 100,000 pods of which
        // 20,000 ask for GPUs.
        let (gpus, pods) = (nodes / 5, nodes * 100_000 / 65_000);
        let gpu_pods = nodes * 20_000 / 65_000;
        let heap = (nodes - gpus) as f64 * cpu_node
            + gpus as f64 * (gpu_node + entry)
            + gpu_pods as f64 * gpu_pod
            + (pods - gpu_pods) as f64 * cpu_pod;
        println!(
            "  {nodes:>6} nodes, {pods:>6} pods ({gpu_pods} GPU pods): {:.0} MiB of caches and one held scan",
            heap / (1 << 20) as f64
        );
    }
}

/// What glibc's malloc takes for these blocks: the bytes asked for plus 16 B a block (its 8 B header and
/// the rounding to 16). The formula counts this, not `mallinfo2`'s delta, because that delta also holds
/// dhat's own bookkeeping, whose tables grow in steps that land in whichever window is measuring (the held
/// scan's glibc delta jumped by 2 KB an entry between two runs with the same blocks). The two agree within
/// 4 % where no step lands (the cache rows).
fn malloc_bytes((bytes, blocks, _glibc): (f64, f64, f64)) -> f64 {
    bytes + 16.0 * blocks
}
