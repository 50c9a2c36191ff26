//! The report: results JSON (BENCH_OUT) and the table (BENCH_TABLE) with ratios operator / baseline.

use jiff::Timestamp;
use serde_json::{Value, json};
use testkit::audit::{count_where, is_write, writes_to_outputs};
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::measure::percentile;
use crate::run_results::{Phases, Setup};
use crate::table::compact;

/// One run's element of `results`.
pub fn run_json(s: &Settings, program: Program, setup: &Setup, p: &Phases) -> Value {
    let ms = &p.latency.ms;
    json!({
        "program": program.name(),
        "nodes": setup.nodes,
        "gpu_nodes": setup.gpu_nodes,
        "gpu_nodes_ready": setup.gpu_nodes_ready,
        "node_create_secs": setup.create_secs,
        "converge_secs": p.startup.converge_secs,
        "rss_converged_mib": p.startup.rss_mib,
        "rss_after_burst_mib": p.burst.rss_after_mib,
        "burst": { "changes": s.burst_changes, "converged": p.burst.converged, "secs": p.burst.secs },
        "latency_ms": {
            "changes": s.changes, "measured": ms.len(), "lost": p.latency.lost, "run_secs": p.latency.run_secs,
            "min": ms.first().copied().unwrap_or(f64::NAN),
            "p50": percentile(ms, 50.0), "p95": percentile(ms, 95.0), "p99": percentile(ms, 99.0),
            "max": ms.last().copied().unwrap_or(f64::NAN),
        },
        "startup_requests": p.startup.requests,
        "quiet": {
            "secs": s.quiet_secs, "requests": p.quiet.requests,
            "writes": count_where(&p.quiet.requests, is_write),
            "lists": count_where(&p.quiet.requests, |k| k.starts_with("list ")),
            "cpu_secs": p.quiet.cpu_secs,
        },
        "churn": {
            "rate_per_sec": s.churn_rate, "secs": s.churn_secs, "changes": p.churn.changes,
            "send_secs": p.churn.send_secs, "settle_secs": p.churn.settle_secs, "converged": p.churn.converged,
            "cpu_secs": p.churn.cpu_secs, "writes": writes_to_outputs(&p.churn.requests),
            "requests": p.churn.requests,
        },
        "total_cpu_secs": p.burst.total_cpu_secs,
        "alive_at_end": p.burst.alive,
    })
}

fn cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0)
}

/// results.json as an earlier driver run of the same bench left it, or an empty document.
pub fn load(path: &std::path::Path) -> Value {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}))
}

/// The steady scenario's part of results.json (top level, as before the heartbeat scenario).
pub fn set_steady(
    doc: &mut Value,
    s: &Settings,
    started: Timestamp,
    results: &[Value],
    failures: &[Value],
) {
    doc["started"] = json!(started.to_string());
    doc["finished"] = json!(Timestamp::now().to_string());
    doc["settings"] = json!({
        "nodes": s.nodes, "quiet_secs": s.quiet_secs, "churn_secs": s.churn_secs, "churn_rate": s.churn_rate,
        "changes": s.changes, "burst_changes": s.burst_changes, "change_gap_ms": s.change_gap.as_millis() as u64,
        "node_images": s.node_images,
    });
    doc["results"] = json!(results);
    doc["failures"] = json!(failures);
}

/// The machine the document was measured on.
pub fn set_machine(doc: &mut Value) {
    let host = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines().find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
    });
    doc["machine"] = json!({ "cpus": cpus(), "cpu_model": host });
}

/// How a table cell shows a result.
enum Cell {
    /// The number at this path, with this many decimals.
    Num(&'static [&'static str], usize),
    /// Latency min..max.
    Range,
    /// The sum of the start-up requests.
    StartupTotal,
}

#[rustfmt::skip] // a table: one row a line
const ROWS: [(&str, Cell); 14] = [
    ("converged after start (s)", Cell::Num(&["converge_secs"], 2)),
    ("peak RSS after convergence (MiB)", Cell::Num(&["rss_converged_mib"], 1)),
    ("peak RSS after +1,000 changes (MiB)", Cell::Num(&["rss_after_burst_mib"], 1)),
    ("latency p50 (ms)", Cell::Num(&["latency_ms", "p50"], 0)),
    ("latency p95 (ms)", Cell::Num(&["latency_ms", "p95"], 0)),
    ("latency p99 (ms)", Cell::Num(&["latency_ms", "p99"], 0)),
    ("latency min..max (ms)", Cell::Range),
    ("changes not seen (of BENCH_CHANGES)", Cell::Num(&["latency_ms", "lost"], 0)),
    ("quiet: writes", Cell::Num(&["quiet", "writes"], 0)),
    ("quiet: LISTs", Cell::Num(&["quiet", "lists"], 0)),
    ("quiet: CPU s", Cell::Num(&["quiet", "cpu_secs"], 2)),
    ("churn: CPU s", Cell::Num(&["churn", "cpu_secs"], 2)),
    ("churn: status+ConfigMap writes", Cell::Num(&["churn", "writes"], 0)),
    ("total requests at start-up", Cell::StartupTotal),
];

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or(f64::NAN)
}

impl Cell {
    /// The value (NaN if it has no ratio) and its text; "-" for a missing run.
    fn show(&self, r: Option<&Value>) -> (f64, String) {
        let Some(r) = r else {
            return (f64::NAN, "-".into());
        };
        match self {
            Cell::Range => (
                f64::NAN,
                format!(
                    "{:.0}..{:.0}",
                    f(r, &["latency_ms", "min"]),
                    f(r, &["latency_ms", "max"])
                ),
            ),
            Cell::StartupTotal => {
                let total: u64 = r["startup_requests"]
                    .as_object()
                    .map(|m| m.values().filter_map(Value::as_u64).sum())
                    .unwrap_or(0);
                (total as f64, total.to_string())
            }
            Cell::Num(path, decimals) => {
                let v = f(r, path);
                (v, format!("{v:.decimals$}"))
            }
        }
    }
}

/// The table: for the steady scenario, per node count, a row per measurement with operator, baseline and
/// their ratio, then each program's requests; then the heartbeat scenario's block in the same style.
pub fn table(doc: &Value) -> String {
    let mut out = String::new();
    let results = doc["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if !results.is_empty() {
        let st = &doc["settings"];
        out.push_str(&format!(
            "gpu-inventory-operator bench ({} cores; quiet {}s, churn {}/s for {}s, {} latency changes)\n",
            cpus(),
            st["quiet_secs"],
            st["churn_rate"],
            st["churn_secs"],
            st["changes"]
        ));
        let mut ns: Vec<u64> = results.iter().filter_map(|r| r["nodes"].as_u64()).collect();
        ns.dedup();
        for n in ns {
            let get = |p: &str| {
                results
                    .iter()
                    .find(|r| r["nodes"].as_u64() == Some(n) && r["program"] == p)
            };
            section(&mut out, n, get("operator"), get("baseline"));
        }
    }
    if doc["heartbeat"].is_object() {
        if !out.is_empty() {
            out.push('\n');
        }
        heartbeat_section(&mut out, &doc["heartbeat"]);
    }
    out
}

/// A heartbeat row: the label, the path of the number, decimals, whether operator/baseline means anything
/// (the fleet rows describe the cluster during each program's window, not the program).
#[rustfmt::skip] // a table: one row a line
const HB_ROWS: [(&str, &[&str], usize, bool); 22] = [
    ("converged after start (s)", &["converge_secs"], 2, true),
    ("status+ConfigMap writes (target 0)", &["writes"], 0, true),
    ("API requests in the window", &["requests_total"], 0, true),
    ("  of which LISTs", &["lists"], 0, true),
    ("CPU s in the window", &["cpu_secs"], 2, true),
    ("CPU % of one core (target <= 2)", &["cpu_pct_of_core"], 2, true),
    ("peak RSS at the end (MiB)", &["rss_mib"], 1, true),
    ("fleet in the same window:", &[], 0, false),
    ("KWOK node status updates", &["fleet", "status_writes"], 0, false),
    ("KWOK node status updates /s", &["fleet", "status_writes_per_sec"], 1, false),
    ("  asked for (/s)", &["fleet", "status_writes_per_sec_asked"], 1, false),
    ("status update gap p50 (s)", &["fleet", "status_gap_secs", "p50"], 1, false),
    ("status update gap max (s)", &["fleet", "status_gap_secs", "max"], 1, false),
    ("KWOK Lease renewals /s", &["fleet", "lease_writes_per_sec"], 1, false),
    ("  asked for (/s)", &["fleet", "lease_writes_per_sec_asked"], 1, false),
    ("Lease renewal gap p99 (s)", &["fleet", "lease_gap_secs", "p99"], 1, false),
    ("Lease renewal gap max (s)", &["fleet", "lease_gap_secs", "max"], 1, false),
    ("KWOK writes failed", &["fleet", "failed"], 0, false),
    ("node lifecycle: status writes (Unknown)", &["fleet", "lifecycle_status_writes"], 0, false),
    ("node lifecycle: taint writes", &["fleet", "lifecycle_taint_writes"], 0, false),
    ("nodes not Ready at the end", &["fleet", "nodes_not_ready_at_end"], 0, false),
    ("CPU % of one core: apiserver/etcd/kwok", &[], 0, false),
];

fn heartbeat_section(out: &mut String, hb: &Value) {
    let st = &hb["settings"];
    let results = hb["results"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let get = |p: &str| results.iter().find(|r| r["program"] == p);
    let (op, base) = (get("operator"), get("baseline"));
    let gpu = op
        .or(base)
        .map(|r| r["gpu_nodes"].clone())
        .unwrap_or(Value::Null);
    out.push_str(&format!(
        "heartbeat: {} KWOK nodes ({gpu} GPU), {}s window per program; KWOK status every {}-{}s, Leases every {}s\n",
        st["nodes"],
        st["window_secs"],
        st["node_status_secs"],
        st["node_status_secs"].as_u64().unwrap_or(0) * 2,
        st["lease_renew_secs"],
    ));
    let su = &hb["setup"];
    out.push_str(&format!(
        "  set-up: created in {:.0}s, {} Leases after {:.0}s more, untainted in {:.0}s, {} nodes heartbeated once after {:.0}s more, {} not Ready\n",
        f(su, &["node_create_secs"]),
        su["leases"],
        f(su, &["leases_secs"]),
        f(su, &["untaint_secs"]),
        su["nodes_heartbeated_once"],
        f(su, &["warm_up_secs"]),
        su["nodes_not_ready_before_first_run"],
    ));
    out.push_str(&format!(
        "{:<40} {:>12} {:>12} {:>9}\n",
        "", "operator", "baseline", "ratio"
    ));
    for (label, path, decimals, ratio) in HB_ROWS {
        let cell = |r: Option<&Value>| -> (f64, String) {
            let Some(r) = r else {
                return (f64::NAN, "-".into());
            };
            match (label, path) {
                (_, []) if label.starts_with("CPU %") => {
                    let c = &r["fleet"]["cpu_pct_of_core"];
                    let text = ["kube-apiserver", "etcd", "kwok"]
                        .iter()
                        .map(|k| match c[*k].as_f64() {
                            Some(v) => format!("{v:.0}"),
                            None => "?".into(),
                        })
                        .collect::<Vec<_>>()
                        .join("/");
                    (f64::NAN, text)
                }
                (_, []) => (f64::NAN, String::new()),
                (_, ["converge_secs"]) if r["converged"] == false => (f64::NAN, "never".into()),
                (_, ["fleet", "failed"]) => {
                    let v = f(r, &["fleet", "status_failed"]) + f(r, &["fleet", "lease_failed"]);
                    (v, format!("{v:.0}"))
                }
                _ => {
                    let v = f(r, path);
                    (v, format!("{v:.decimals$}"))
                }
            }
        };
        let (a, at) = cell(op);
        let (b, bt) = cell(base);
        let ratio = if ratio && a.is_finite() && b.is_finite() && b != 0.0 {
            format!("{:.3}", a / b)
        } else if ratio && a == 0.0 && b == 0.0 {
            "-".into()
        } else {
            String::new()
        };
        out.push_str(&format!("{label:<40} {at:>12} {bt:>12} {ratio:>9}\n"));
    }
    for (name, r) in [("operator", op), ("baseline", base)] {
        if let Some(r) = r {
            out.push_str(&format!(
                "  {name} requests in the window: {}\n",
                compact(&r["requests"])
            ));
        }
    }
    for failure in hb["failures"].as_array().into_iter().flatten() {
        out.push_str(&format!("  FAILED: {failure}\n"));
    }
}

fn section(out: &mut String, n: u64, op: Option<&Value>, base: Option<&Value>) {
    out.push_str(&format!(
        "\n{n} nodes\n{:<40} {:>12} {:>12} {:>9}\n",
        "", "operator", "baseline", "ratio"
    ));
    for (label, cell) in &ROWS {
        let (a, at) = cell.show(op);
        let (b, bt) = cell.show(base);
        let ratio = if a.is_finite() && b.is_finite() && b != 0.0 {
            format!("{:.3}", a / b)
        } else {
            "-".into()
        };
        out.push_str(&format!("{label:<40} {at:>12} {bt:>12} {ratio:>9}\n"));
    }
    for (name, r) in [("operator", op), ("baseline", base)] {
        if let Some(r) = r {
            out.push_str(&format!(
                "  {name} requests at start-up: {}\n",
                compact(&r["startup_requests"])
            ));
            out.push_str(&format!(
                "  {name} requests in quiet period: {}\n",
                compact(&r["quiet"]["requests"])
            ));
            out.push_str(&format!(
                "  {name} requests in churn: {}\n",
                compact(&r["churn"]["requests"])
            ));
        }
    }
}
