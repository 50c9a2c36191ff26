//! `make utilization-cost` (`cargo bench --bench utilization-cost`): what one round of the utilization source
//! costs the operator at 13,000 GPU nodes of 8 GPUs (104,000 GPUs), with Prometheus's answer in hand
//! (docs/utilization.md): reading the answer (`prometheus::read_answer`), keeping each idle series' `since`
//! (`IdleSince::mark`), and joining the idle series with the holdings (`utilization::assess`). Prometheus's
//! own work (the PromQL) is not the operator's and is not timed.
//!
//! Each GPU node holds 8 pods of one GPU, and the answer lists a share of the GPUs as idle: 10 % (a fleet with
//! some waste) and 100 % (every held GPU idle: the largest answer `--utilization-max-series` lets through at
//! this size). The answer is the JSON Prometheus writes for the query's `max by (...)`: each series with the
//! labels dcgm-exporter gives a pod's GPU that the query keeps (`Hostname`, `gpu`, `UUID`, `device`,
//! `namespace`, `pod`). Each step runs BENCH_RUNS times (default 9); medians, minimum and maximum are printed.
//! The heap is measured by a counting allocator: the peak above the bench's own baseline during one round
//! (the answer's bytes, the parsed samples, the series and the report), and what the round keeps.
//! `1-change ms`: a scan after one pod change under the same round (`IdleMemo::put_idle`, the join kept
//! between scans: the operator's case between two rounds).
//!
//! Usage: `cargo bench --bench utilization-cost -- [GPU_NODES]` (default 13000).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gpu_inventory_operator::inventory::model::{Holder, Holding, NodeInventory, ResourceMap};
use gpu_inventory_operator::inventory::utilization::{IdleMemo, Reading, Round, assess};
use gpu_inventory_operator::sources::utilization::IdleSince;
use gpu_inventory_operator::sources::utilization::prometheus::read_answer;

/// The system allocator, counting the bytes held now and the most held since the last reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let held = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(held, Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const GPUS_PER_NODE: usize = 8;
const WINDOW: Duration = Duration::from_secs(1800);

fn node_name(n: usize) -> String {
    format!("gpu-node-{n:05}")
}

fn pod(n: usize, gpu: usize) -> (String, String) {
    (format!("team-{:02}", n % 40), format!("train-{n:05}-{gpu}"))
}

/// 13,000 GPU nodes' entries, each with 8 pods holding one GPU.
fn nodes(count: usize) -> Vec<Arc<NodeInventory>> {
    (0..count)
        .map(|n| {
            let holdings = (0..GPUS_PER_NODE)
                .map(|gpu| {
                    let (namespace, name) = pod(n, gpu);
                    Holding {
                        resource: "nvidia.com/gpu".into(),
                        holder: Holder::Pod { namespace, name },
                        amount: 1,
                        device: None,
                        equivalent: None,
                    }
                })
                .collect();
            Arc::new(NodeInventory {
                name: node_name(n),
                count: GPUS_PER_NODE as u64,
                ready: true,
                allocated: ResourceMap::from_iter([(
                    "nvidia.com/gpu".into(),
                    GPUS_PER_NODE as u64,
                )]),
                free: ResourceMap::from_iter([("nvidia.com/gpu".into(), 0)]),
                holdings,
                ..NodeInventory::default()
            })
        })
        .collect()
}

/// Prometheus's answer listing every `every`-th GPU of the fleet as idle.
fn answer(count: usize, every: usize) -> Vec<u8> {
    let mut body = String::from(r#"{"status":"success","data":{"resultType":"vector","result":["#);
    let mut first = true;
    for n in 0..count {
        for gpu in 0..GPUS_PER_NODE {
            if !(n * GPUS_PER_NODE + gpu).is_multiple_of(every) {
                continue;
            }
            let (namespace, pod) = pod(n, gpu);
            if !first {
                body.push(',');
            }
            first = false;
            body.push_str(&format!(
                r#"{{"metric":{{"Hostname":"{}","UUID":"GPU-{n:08x}-{gpu:04x}-4e2b-9c1d-000000000000","device":"nvidia{gpu}","gpu":"{gpu}","namespace":"{namespace}","pod":"{pod}"}},"value":[1796430000.000,"0"]}}"#,
                node_name(n)
            ));
        }
    }
    body.push_str("]}}");
    body.into_bytes()
}

/// One round after the answer arrived: read it, keep the `since`s, join. Returns the idle units found.
fn round(body: &[u8], since: &mut IdleSince, nodes: &[Arc<NodeInventory>]) -> u64 {
    let now = jiff::Timestamp::now();
    let samples = read_answer(200, body).expect("the answer reads");
    let idle = since.mark(&samples, now, WINDOW);
    let activity = Round {
        source: "http://prometheus:9090".into(),
        window: "30m".into(),
        rule: String::new(),
        reading: Reading::Current(idle),
        held: None,
    };
    let found = assess(nodes, &activity);
    found.report.idle.values().sum()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn summary(times: &mut [Duration]) -> (f64, f64, f64) {
    times.sort();
    (
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1]),
    )
}

fn main() {
    let count: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .and_then(|a| a.parse().ok())
        .unwrap_or(13_000);
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let nodes = nodes(count);
    println!(
        "utilization-cost: {count} GPU nodes x {GPUS_PER_NODE} GPUs = {} GPUs, each held by a pod; {runs} runs",
        count * GPUS_PER_NODE
    );
    println!(
        "{:<12} {:>8} {:>10} | {:>9} {:>9} {:>9} | {:>9} {:>9} {:>9} | {:>9} | {:>12}",
        "idle",
        "series",
        "answer",
        "round ms",
        "min",
        "max",
        "parse ms",
        "mark ms",
        "join ms",
        "peak MiB",
        "1-change ms"
    );
    for every in [10, 1] {
        let body = answer(count, every);
        let series = count * GPUS_PER_NODE / every;
        let mut since = IdleSince::default();
        let mut rounds = Vec::with_capacity(runs);
        let mut parses = Vec::with_capacity(runs);
        let mut joins = Vec::with_capacity(runs);
        let mut marks = Vec::with_capacity(runs);
        let mut changes = Vec::with_capacity(runs);
        let mut peak = 0usize;
        round(&body, &mut since, &nodes); // warm-up: the `since`s are kept from here on, as in the operator
        for _ in 0..runs {
            let base = HELD.load(Ordering::Relaxed);
            PEAK.store(base, Ordering::Relaxed);
            let start = Instant::now();
            let idle = round(&body, &mut since, &nodes);
            rounds.push(start.elapsed());
            peak = peak.max(PEAK.load(Ordering::Relaxed) - base);
            assert_eq!(idle as usize, series, "every idle series is joined");
            // The parts, timed alone.
            let start = Instant::now();
            let samples = read_answer(200, &body).unwrap();
            parses.push(start.elapsed());
            let start = Instant::now();
            let marked = IdleSince::default().mark(&samples, jiff::Timestamp::now(), WINDOW);
            marks.push(start.elapsed());
            drop(marked);
            let idle = IdleSince::default().mark(&samples, jiff::Timestamp::now(), WINDOW);
            let activity = Round {
                reading: Reading::Current(idle),
                ..Round::default()
            };
            let start = Instant::now();
            std::hint::black_box(assess(&nodes, &activity));
            joins.push(start.elapsed());
            // A scan after one pod change, under the same round's activity, as the operator's scans run
            // (the join kept between scans: only the changed node is joined again).
            let activity = Arc::new(activity);
            let mut memo = IdleMemo::default();
            memo.put_idle(&nodes, &activity);
            let mut changed = nodes.clone();
            let at = changes.len() % changed.len();
            changed[at] = Arc::new(NodeInventory::clone(&changed[at]));
            let start = Instant::now();
            std::hint::black_box(memo.put_idle(&changed, &activity));
            changes.push(start.elapsed());
        }
        let (round_med, round_min, round_max) = summary(&mut rounds);
        let (parse_med, _, _) = summary(&mut parses);
        let (join_med, _, _) = summary(&mut joins);
        let (mark_med, _, _) = summary(&mut marks);
        let (change_med, _, _) = summary(&mut changes);
        println!(
            "{:<12} {:>8} {:>8.1}MB | {:>9.1} {:>9.1} {:>9.1} | {:>9.1} {:>9.1} {:>9.1} | {:>9.1} | {:>12.2}",
            format!("1 in {every}"),
            series,
            body.len() as f64 / 1e6,
            round_med,
            round_min,
            round_max,
            parse_med,
            mark_med,
            join_med,
            peak as f64 / (1 << 20) as f64,
            change_med
        );
    }
}
