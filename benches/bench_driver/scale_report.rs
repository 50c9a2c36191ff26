//! The scale scenario's medians (of the runs at one node count) and its block of the table (BENCH_TABLE): a
//! column per node count (table.rs `Side`, the counts as its columns), each cell the median of that count's runs.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::measure::median;
use crate::table::{Side, num};

/// The runs' figures, each number the median of the runs' numbers at the same place (a flag: whether it held
/// in every run; anything else: the first run's). Objects are walked through by key (every key any run has).
pub fn medians(runs: &[&Value]) -> Value {
    let Some(first) = runs.iter().find(|r| !r.is_null()) else {
        return Value::Null;
    };
    match first {
        Value::Object(_) => {
            let keys: BTreeSet<&String> = runs
                .iter()
                .filter_map(|r| r.as_object())
                .flat_map(|m| m.keys())
                .collect();
            let out: Map<String, Value> = keys
                .into_iter()
                .map(|k| {
                    let at: Vec<&Value> = runs.iter().map(|r| &r[k.as_str()]).collect();
                    (k.clone(), medians(&at))
                })
                .collect();
            Value::Object(out)
        }
        Value::Number(_) => {
            let mut v: Vec<f64> = runs.iter().filter_map(|r| r.as_f64()).collect();
            v.sort_by(f64::total_cmp);
            json!(median(&v))
        }
        Value::Bool(_) => json!(runs.iter().all(|r| r.as_bool() == Some(true))),
        other => (*other).clone(),
    }
}

/// The columns: each node count's shape, set-up and medians, under its count.
fn columns(sizes: &Map<String, Value>) -> Value {
    let mut counts: Vec<(u64, &String)> = sizes
        .keys()
        .filter_map(|k| Some((k.parse().ok()?, k)))
        .collect();
    counts.sort();
    let mut section = json!({ "programs": counts.iter().map(|(_, k)| *k).collect::<Vec<_>>() });
    for (_, k) in counts {
        let e = &sizes[k.as_str()];
        section[k.as_str()] = json!({
            "shape": e["shape"], "setup": e["setup"], "m": e["median"], "w": e["without"]["median"],
        });
    }
    section
}

/// The value at `path` (keys from a column, joined by dots).
fn at<'v>(v: &'v Value, path: &str) -> &'v Value {
    path.split('.')
        .filter(|k| !k.is_empty())
        .fold(v, |v, k| &v[k])
}

/// The numbers at `paths` in a column, joined by `sep`, each with `decimals`.
fn joined(c: &Value, paths: &[&str], decimals: usize, sep: &str) -> String {
    let cells: Vec<String> = paths.iter().map(|p| num(at(c, p), decimals)).collect();
    cells.join(sep)
}

/// A row of the block; a path is keys from the column, joined by dots.
enum Row {
    /// The number at a path: label, path, decimals, target.
    Num(&'static str, &'static str, usize, &'static str),
    /// The numbers at paths, joined with " / ": label, paths, decimals, target.
    Nums(&'static str, &'static [&'static str], usize, &'static str),
    /// A cell made from the column: label, cell, target.
    Cell(&'static str, fn(&Value) -> String, &'static str),
    /// A row per key of the object at the first path (any column's), each the number at the second path under
    /// the key: the label's prefix, the two paths, decimals, target.
    Each(
        &'static str,
        &'static str,
        &'static str,
        usize,
        &'static str,
    ),
}

use Row::{Cell, Each, Num, Nums};

/// The block's rows, in order (each number the median of the count's runs; `m` holds the medians).
#[rustfmt::skip]
const ROWS: &[Row] = &[
    Cell("GPU nodes (DRA / MIG / time-sliced)", gpu_nodes, ""),
    Nums("  tainted / cordoned", &["shape.tainted", "shape.cordoned"], 0, ""),
    Num("pods", "shape.pods", 0, ""),
    Nums("  GPU pods / pending / DRA claims", &["shape.gpu_pods", "shape.pending", "shape.claims"], 0, ""),
    Num("set-up: nodes (s)", "setup.secs.nodes", 0, ""),
    Num("set-up: pods, create + status (s)", "setup.secs.pods", 0, ""),
    Nums("set-up: DRA nodes / slices / claims (s)", &["setup.secs.dra_nodes", "setup.secs.slices", "setup.secs.claims"], 0, ""),
    Num("set-up in all (s)", "setup.secs.all", 0, ""),
    Num("converged after start (s)", "m.startup.converge_secs", 2, ""),
    Num("peak RSS, whole run (MiB)", "m.rss_peak_mib", 1, ""),
    Num("  start-up (MiB)", "m.startup.rss_mib", 1, ""),
    Num("  quiet (MiB)", "m.quiet.rss_mib", 1, ""),
    Num("  churn + timed changes (MiB)", "m.load.rss_mib", 1, ""),
    Num("  relist (MiB)", "m.relist.rss_mib", 1, ""),
    Nums("status nodes listed / omitted", &["m.startup.status_nodes_listed", "m.startup.status_nodes_omitted"], 0, ""),
    Nums("quiet: writes / LISTs", &["m.quiet.writes.writes", "m.quiet.lists"], 0, "0 / 0"),
    Nums("change -> GpuNode p50/p95/p99 (ms)", &[
        "m.load.latency_ms.gpunode.p50", "m.load.latency_ms.gpunode.p95", "m.load.latency_ms.gpunode.p99",
    ], 0, "p99 <= 1000"),
    Nums("change -> inventory p50/p95/p99 (ms)", &[
        "m.load.latency_ms.status.p50", "m.load.latency_ms.status.p95", "m.load.latency_ms.status.p99",
    ], 0, "p99 <= 2000"),
    Nums("timed changes to GpuNode / to inventory", &[
        "m.load.latency_ms.gpunode.n", "m.load.latency_ms.status.n",
    ], 0, "on 16 nodes"),
    Num("  timed changes not seen in 10 s", "m.load.timed_changes.lost", 0, "0"),
    Num("churn: pod changes/s", "m.load.churn.changes_per_sec", 1, ""),
    Num("churn: writes/s, all", "m.load.writes.per_sec", 2, ""),
    Each("  ", "m.load.writes.by_resource", "per_sec", 2, ""),
    Num("churn: CPU per change (ms)", "m.load.cpu_ms_per_change", 2, ""),
    Num("churn: CPU % of one core", "m.load.cpu_pct_of_core", 1, ""),
    Each("  beside it, % of one core: ", "m.load.others_cpu", "pct_of_core", 1, ""),
    Cell("relist: watches relisted / watches", relisted, "all"),
    Each("  relists: ", "m.relist.relisted", "", 0, ">= 1"),
    Num("relist: API server away (s)", "m.relist.apiserver_away_secs", 1, ""),
    Num("relist: all relisted, after ready (s)", "m.relist.relisted_secs", 1, ""),
    Num("relist: equal to the truth after (s)", "m.relist.converge_secs", 1, ""),
    Num("relist: writes (nothing changed)", "m.relist.writes.writes", 0, "0"),
    Num("relist: outputs changed", "m.relist.changed.objects", 0, "0"),
    Cell("scan -o json: wall s / MiB / CPU s", |c| peer(c, "scan"), ""),
    Cell("kubectl-view-allocations: wall s/MiB/CPU s", |c| peer(c, "view_allocations"), ""),
    Nums("  per node nvidia.com/gpu: agree / differ", &[
        "m.peers.scan_vs_view_allocations.agree", "m.peers.scan_vs_view_allocations.differ",
    ], 0, ""),
    Num("  scan vs the driver's truth: differ", "m.peers.scan_vs_truth.differ", 0, "0"),
    Num("fit: H100 GPUs asked in one NVLink domain", "m.fit.gpus", 0, ""),
    Cell("  fit: wall s / MiB / CPU s", |c| {
        let t = &c["m"]["fit"]["fit"];
        format!("{}/{}/{}", num(&t["wall_secs"], 1), num(&t["rss_mib"], 0), num(&t["cpu_secs"], 1))
    }, ""),
    Nums("  domains where it fits: fit / the driver's count / differ", &[
        "m.fit.domains", "m.fit.truth_domains", "m.fit.differ",
    ], 0, "differ 0"),
    Cell("readers: Kueue objects / dcgm series / idle", readers, ""),
    Nums("  set-up: CRDs / Kueue / Prometheus (s)", &[
        "setup.readers.secs.crds", "setup.readers.secs.kueue", "setup.readers.secs.prometheus",
    ], 0, ""),
    Num("without the readers: converged (s)", "w.startup.converge_secs", 2, ""),
    Num("  peak RSS, whole run (MiB)", "w.rss_peak_mib", 1, ""),
    Num("  churn: CPU per change (ms)", "w.load.cpu_ms_per_change", 2, ""),
    Nums("  change -> GpuNode / inventory p99 (ms)", &[
        "w.load.latency_ms.gpunode.p99", "w.load.latency_ms.status.p99",
    ], 0, ""),
    Cell("the readers add: peak RSS", |c| growth(c, "rss_peak_mib"), "<= +10 %"),
    Cell("the readers add: CPU per change", |c| growth(c, "load.cpu_ms_per_change"), "<= +10 %"),
];

/// The Kueue objects, the dcgm-exporter series and the idle units the readers' set-up made.
fn readers(c: &Value) -> String {
    let r = &c["setup"]["readers"];
    if r.is_null() {
        return "-".to_owned();
    }
    let kueue: f64 = r["kueue"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, v)| v.as_f64())
        .sum();
    format!(
        "{kueue} / {} / {}",
        num(&r["series"], 0),
        num(&r["idle_units"], 0)
    )
}

/// How much the runs with the readers add to `path` over the runs without them, in percent.
fn growth(c: &Value, path: &str) -> String {
    match (at(&c["m"], path).as_f64(), at(&c["w"], path).as_f64()) {
        (Some(with), Some(without)) if without > 0.0 => {
            format!("{:+.1} %", (with / without - 1.0) * 100.0)
        }
        _ => "-".to_owned(),
    }
}

fn gpu_nodes(c: &Value) -> String {
    let s = &c["shape"];
    let kinds = joined(s, &["dra_nodes", "mig_nodes", "time_sliced_nodes"], 0, "/");
    format!("{} ({kinds})", s["gpu_nodes"])
}

fn relisted(c: &Value) -> String {
    let r = &c["m"]["relist"];
    let counts = r["relisted"].as_object().into_iter().flatten();
    let done = counts.filter(|(_, n)| n.as_f64() >= Some(1.0)).count();
    format!("{done} / {}", num(&r["watches"], 0))
}

fn peer(c: &Value, tool: &str) -> String {
    let t = &c["m"]["peers"][tool];
    format!(
        "{}/{}/{}",
        num(&t["wall_secs"], 1),
        num(&t["rss_mib"], 0),
        num(&t["cpu_secs"], 1)
    )
}

/// The keys any column has at `path`, sorted.
fn keys(side: &Side, path: &str) -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for (_, c) in side.runs() {
        all.extend(
            at(c, path)
                .as_object()
                .into_iter()
                .flat_map(|m| m.keys().cloned()),
        );
    }
    all
}

fn row(out: &mut String, side: &Side, r: &Row) {
    match r {
        Num(label, path, decimals, target) => {
            side.row(out, label, |c| num(at(c, path), *decimals), target)
        }
        Nums(label, paths, decimals, target) => {
            side.row(out, label, |c| joined(c, paths, *decimals, " / "), target)
        }
        Cell(label, cell, target) => side.row(out, label, cell, target),
        Each(prefix, path, under, decimals, target) => {
            for key in keys(side, path) {
                let cell = |c: &Value| num(at(&at(c, path)[key.as_str()], under), *decimals);
                side.row(out, &format!("{prefix}{key}"), cell, target);
            }
        }
    }
}

/// Appends the block when the document has a scale section.
pub fn append(out: &mut String, doc: &Value) {
    let sc = &doc["scale"];
    let Some(sizes) = sc["sizes"].as_object() else {
        return;
    };
    if !out.is_empty() {
        out.push('\n');
    }
    let st = &sc["settings"];
    out.push_str(&format!(
        "scale: one operator process, a column per node count, each cell the median of {} run(s); quiet {}s, churn {}/s for {}s with {} timed changes beside it\n",
        st["runs"], st["quiet_secs"], st["churn_rate"], st["churn_secs"], st["changes"]
    ));
    let section = columns(sizes);
    let side = Side::of(&section);
    side.header(out, "scale (nodes)");
    for r in ROWS {
        row(out, &side, r);
    }
    for (n, e) in sizes {
        for failure in e["failures"].as_array().into_iter().flatten() {
            out.push_str(&format!("  FAILED at {n} nodes: {failure}\n"));
        }
    }
    if let Some(png) = sc["plot"].as_str() {
        out.push_str(&format!(
            "  peak RSS and convergence against the node count: {png}\n"
        ));
    }
}
