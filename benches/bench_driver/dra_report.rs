//! The DRA scenario's block of the table (BENCH_TABLE), from results.json's `dra` section: the programs side
//! by side (operator / previous when both ran), then the one-shot scan.

use serde_json::Value;

use crate::table::{Side, compact, gpunode_cell, num, pair, row};

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
    let side = Side::of(dra);
    if side.any() {
        program_rows(out, &side, dra);
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

fn program_rows(out: &mut String, side: &Side, dra: &Value) {
    side.header(out, "programs (run), side by side");
    if let Some(label) = dra["previous_label"].as_str()
        && side.runs().any(|(n, _)| n == "previous")
    {
        out.push_str(&format!("  previous = the operator at {label}\n"));
    }
    side.num_row(out, "converged after start (s)", &["converge_secs"], 2, "");
    side.row(
        out,
        "  status nodes listed / omitted",
        |r| format!("{} / {}", r["nodes_listed"], r["nodes_omitted"]),
        "",
    );
    let d = |r: &Value, k: &str| r["detail"]["gpunodes"][k].clone();
    side.row(
        out,
        "every node's detail: GpuNodes / DRA nodes",
        |r| {
            gpunode_cell(r, |r| {
                format!(
                    "{} / {}",
                    d(r, "gpunodes_of_those_nodes"),
                    d(r, "nodes_with_devices")
                )
            })
        },
        "all",
    );
    side.row(
        out,
        "  GpuNodes with all devices (per node)",
        |r| {
            gpunode_cell(r, |r| {
                format!(
                    "{} ({})",
                    d(r, "with_all_devices"),
                    d(r, "devices_per_node")
                )
            })
        },
        "all",
    );
    side.row(
        out,
        "  omittedNodes: status / ConfigMap summary",
        |r| {
            format!(
                "{} / {}",
                r["detail"]["status_omitted_nodes"], r["detail"]["configmap_omitted_nodes"]
            )
        },
        "",
    );
    side.row(
        out,
        "  every node's full detail readable",
        |r| gpunode_cell(r, |r| d(r, "all_readable").to_string()),
        "true",
    );
    side.common_rows(out, "<= 128");
    for (what, key) in [("status", "latency_ms"), ("GpuNode", "latency_gpunode_ms")] {
        for p in ["p50", "p90", "p99"] {
            let cell = |r: &Value| match key {
                "latency_gpunode_ms" => gpunode_cell(r, |r| num(&r[key][p], 0)),
                _ => num(&r[key][p], 0),
            };
            let value = |r: &Value| r[key][p].as_f64();
            side.row_ratio(
                out,
                &format!("claim change -> {what} {p} (ms)"),
                cell,
                value,
                "",
            );
        }
    }
    side.num_row(out, "  max to status (ms)", &["latency_ms", "max"], 0, "");
    side.row(
        out,
        "  API server ms per status write p50 / p99",
        |r| {
            pair(
                &r["latency_server_ms"]["status"]["p50"],
                &r["latency_server_ms"]["status"]["p99"],
                0,
            )
        },
        "",
    );
    side.row(
        out,
        "  changes (alloc + dealloc), not seen",
        |r| {
            let lc = &r["latency_changes"];
            format!(
                "{} + {}, {}",
                lc["allocations"], lc["deallocations"], lc["lost"]
            )
        },
        "",
    );
    side.row(
        out,
        "churn: claim changes sent, failed",
        |r| format!("{}, {}", r["churn"]["changes"], r["churn"]["failed"]),
        "",
    );
    side.num_row(
        out,
        "churn: claim changes/s",
        &["churn", "changes_per_sec"],
        1,
        "",
    );
    side.churn_rows(out);
    for (name, r) in side.runs().filter(|(_, r)| r.is_object()) {
        out.push_str(&format!(
            "  {name} requests at start-up: {}\n",
            compact(&r["startup_requests"])
        ));
    }
}
