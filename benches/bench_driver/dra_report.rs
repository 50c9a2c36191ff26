//! The DRA scenario's block of the table (BENCH_TABLE), from results.json's `dra` section.

use serde_json::Value;

use crate::table::{churn_write_rows, num, pair, row};

/// Appends the block when the document has a dra section.
pub fn append(out: &mut String, doc: &Value) {
    let dra = &doc["dra"];
    if !dra.is_object() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let (st, su) = (&dra["settings"], &dra["setup"]);
    out.push_str(&format!(
        "dra: {} nodes, one ResourceSlice each of {} whole GPUs (gpu.nvidia.com), {} claims allocated one device each\n",
        st["nodes"], st["gpus_per_node"], st["claims"]
    ));
    out.push_str(&format!(
        "  set-up: nodes in {}s, slices in {}s, claims in {}s (create + allocation, {} in flight); gpu.nvidia.com/gpu {} allocatable, {} allocated, {} free\n",
        num(&su["node_create_secs"], 0), num(&su["slice_create_secs"], 0), num(&su["claim_create_secs"], 0),
        st["create_concurrency"], su["gpus"]["allocatable"], su["gpus"]["allocated"], su["gpus"]["free"]
    ));
    let op = &dra["operator"];
    if op.is_object() {
        operator_rows(out, op);
    }
    let scan = &dra["scan"];
    if scan.is_object() {
        let runs = &scan["runs"];
        out.push_str(&format!(
            "{:<44} {:>16} {:>14}\n",
            format!("scan -o json, one shot (median of {})", runs["runs"]),
            "measured",
            ""
        ));
        row(out, "wall time (s)", num(&runs["wall_secs"], 2), "");
        row(out, "peak RSS (MiB)", num(&runs["rss_mib"], 1), "");
        row(out, "CPU s", num(&runs["cpu_secs"], 2), "");
        row(
            out,
            "nodes listed / omitted / agree with truth",
            format!(
                "{} / {} / {}",
                scan["nodes_listed"], scan["nodes_omitted"], scan["nodes_agree_with_truth"]
            ),
            "",
        );
        if let Some(m) = scan["mismatch"].as_str() {
            out.push_str(&format!("  scan differs from the truth: {m}\n"));
        }
    }
    for failure in dra["failures"].as_array().into_iter().flatten() {
        out.push_str(&format!("  FAILED: {failure}\n"));
    }
}

fn operator_rows(out: &mut String, op: &Value) {
    out.push_str(&format!(
        "{:<44} {:>16} {:>14}\n",
        "operator (run)", "measured", "target"
    ));
    row(
        out,
        "converged after start (s)",
        num(&op["converge_secs"], 2),
        "",
    );
    row(
        out,
        "  status nodes listed / omitted",
        format!("{} / {}", op["nodes_listed"], op["nodes_omitted"]),
        "",
    );
    row(
        out,
        "peak RSS after convergence (MiB)",
        num(&op["rss_converged_mib"], 1),
        "<= 128",
    );
    row(
        out,
        "peak RSS at the end (MiB)",
        num(&op["rss_peak_mib"], 1),
        "<= 128",
    );
    let lat = &op["latency_ms"];
    row(
        out,
        "claim change -> status p50 / p99 (ms)",
        pair(&lat["p50"], &lat["p99"], 0),
        "",
    );
    row(out, "  max (ms)", num(&lat["max"], 0), "");
    let sv = &op["latency_server_ms"];
    row(
        out,
        "  API server time per status write p50 / p99",
        pair(&sv["status"]["p50"], &sv["status"]["p99"], 0),
        "",
    );
    let lc = &op["latency_changes"];
    row(
        out,
        "  changes (alloc + dealloc), not seen",
        format!(
            "{} + {}, {}",
            lc["allocations"], lc["deallocations"], lc["lost"]
        ),
        "",
    );
    let ch = &op["churn"];
    row(
        out,
        "churn: claim changes sent, failed",
        format!("{}, {}", ch["changes"], ch["failed"]),
        "",
    );
    row(
        out,
        "churn: claim changes/s",
        num(&ch["changes_per_sec"], 1),
        "",
    );
    churn_write_rows(out, ch);
    row(
        out,
        "churn: converged after (s)",
        num(&ch["settle_secs"], 2),
        "",
    );
    if let Some(requests) = op["startup_requests"].as_object() {
        let list: Vec<String> = requests.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!(
            "  operator requests at start-up: {}\n",
            list.join(", ")
        ));
    }
}
