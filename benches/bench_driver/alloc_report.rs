//! The allocation scenario's block of the table (BENCH_TABLE), from results.json's `allocation` section.

use serde_json::Value;

use crate::table::{churn_write_rows, compact, num, pair, row};

/// Appends the block when the document has an allocation section.
pub fn append(out: &mut String, doc: &Value) {
    let al = &doc["allocation"];
    if !al.is_object() {
        return;
    }
    if !out.is_empty() {
        out.push('\n');
    }
    let (st, su) = (&al["settings"], &al["setup"]);
    out.push_str(&format!(
        "allocation: {} nodes ({} GPU nodes of {} nvidia.com/gpu, {} tainted), {} pods ({} request GPUs, {} of them pending)\n",
        st["nodes"], su["gpu_nodes"], st["gpus_per_node"], su["tainted_gpu_nodes"], st["pods"], st["gpu_pods"], su["pending_gpu_pods"]
    ));
    out.push_str(&format!(
        "  set-up: nodes in {}s, pods in {}s (create + status, {} in flight); nvidia.com/gpu {} allocatable, {} allocated, {} free\n",
        num(&su["node_create_secs"], 0), num(&su["pod_create_secs"], 0), st["create_concurrency"],
        su["gpus"]["allocatable"], su["gpus"]["allocated"], su["gpus"]["free"]
    ));
    let op = &al["operator"];
    if op.is_object() {
        operator_rows(out, op, st);
    }
    let peers = &al["peers"];
    if peers["scan"].is_object() {
        peer_rows(out, peers);
    } else if let Some(skipped) = peers["skipped"].as_str() {
        out.push_str(&format!("  peers skipped: {skipped}\n"));
    }
    for failure in al["failures"].as_array().into_iter().flatten() {
        out.push_str(&format!("  FAILED: {failure}\n"));
    }
}

fn operator_rows(out: &mut String, op: &Value, st: &Value) {
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
        "peak RSS after convergence (MiB)",
        num(&op["rss_converged_mib"], 1),
        "<= 96",
    );
    row(
        out,
        "peak RSS at the end (MiB)",
        num(&op["rss_peak_mib"], 1),
        "<= 96",
    );
    let lat = &op["latency_ms"];
    row(
        out,
        "pod change -> status p50 / p99 (ms)",
        pair(&lat["status"]["p50"], &lat["status"]["p99"], 0),
        "p99 <= 1000",
    );
    row(
        out,
        "pod change -> ConfigMap p50 / p99 (ms)",
        pair(&lat["configmap"]["p50"], &lat["configmap"]["p99"], 0),
        "",
    );
    row(
        out,
        "  max to status / ConfigMap (ms)",
        pair(&lat["status"]["max"], &lat["configmap"]["max"], 0),
        "",
    );
    let sv = &op["latency_server_ms"];
    row(
        out,
        "  API server time per write: status / CM p50",
        pair(&sv["status"]["p50"], &sv["configmap"]["p50"], 0),
        "",
    );
    row(
        out,
        "  ... p99 (ms)",
        pair(&sv["status"]["p99"], &sv["configmap"]["p99"], 0),
        "",
    );
    let sz = &op["sizes"];
    let kib = |v: &Value| Value::from(v.as_f64().map(|b| b / 1024.0));
    row(
        out,
        "  size: status / whole inventory / CM (KiB)",
        format!(
            "{} / {} / {}",
            num(&kib(&sz["status_bytes"]), 0),
            num(&kib(&sz["inventory_bytes"]), 0),
            num(&kib(&sz["configmap_bytes"]), 0)
        ),
        "",
    );
    let lc = &op["latency_changes"];
    row(
        out,
        "  changes (binds + deletes), not seen",
        format!("{} + {}, {}", lc["binds"], lc["deletes"], lc["lost"]),
        "",
    );
    let ch = &op["churn"];
    row(
        out,
        "churn: pod changes sent (of them GPU), failed",
        format!(
            "{} ({}), {}",
            ch["changes"], ch["gpu_changes"], ch["failed"]
        ),
        "",
    );
    row(
        out,
        &format!("churn: pod changes/s (asked {})", st["churn_rate"]),
        num(&ch["changes_per_sec"], 1),
        "",
    );
    churn_write_rows(out, ch);
    row(
        out,
        "churn: converged after (s)",
        if ch["converged"] == true {
            num(&ch["settle_secs"], 2)
        } else {
            "never".into()
        },
        "",
    );
    let sm = &op["summary"];
    let fg = &sm["free_gpus"];
    row(out, "freeGpus seen", num(&fg["seen"], 0), "");
    row(
        out,
        "  want: whole GPUs / by mig.strategy=single rule",
        pair(&fg["want_whole_gpus"], &fg["want_operator_rule"], 0),
        "",
    );
    let pr = &sm["products"];
    row(
        out,
        "products[] agree: whole GPUs / by that rule",
        format!("{} / {}", pr["agree_whole_gpus"], pr["agree_operator_rule"]),
        "",
    );
    let cond = |c: &Value| match (c["status"].as_str(), c["reason"].as_str()) {
        (Some(s), Some(r)) => format!("{s}/{r}"),
        _ => "-".into(),
    };
    row(
        out,
        "GpusAvailable: seen",
        cond(&sm["gpus_available"]),
        &cond(&sm["gpus_available_want"]),
    );
    out.push_str(&format!(
        "  operator requests at start-up: {}\n  operator requests in churn: {}\n",
        compact(&op["startup_requests"]),
        compact(&ch["requests"])
    ));
}

fn peer_rows(out: &mut String, p: &Value) {
    let (a, b) = (&p["scan"], &p["view_allocations"]);
    out.push_str(&format!(
        "{:<44} {:>12} {:>12} {:>9}\n",
        format!("peers, one shot (median of {})", a["runs"]),
        "scan",
        "view-alloc",
        "ratio"
    ));
    for (label, key, decimals) in [
        ("wall time (s)", "wall_secs", 2),
        ("peak RSS (MiB)", "rss_mib", 1),
        ("CPU s", "cpu_secs", 2),
    ] {
        let ratio = match (a[key].as_f64(), b[key].as_f64()) {
            (Some(x), Some(y)) if y > 0.0 => format!("{:.3}", x / y),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "{label:<44} {:>12} {:>12} {ratio:>9}\n",
            num(&a[key], decimals),
            num(&b[key], decimals)
        ));
    }
    for (label, key) in [
        (
            "per node nvidia.com/gpu, scan vs view-alloc",
            "scan_vs_view_allocations",
        ),
        ("  scan vs the driver's truth", "scan_vs_truth"),
        (
            "  view-alloc vs the driver's truth",
            "view_allocations_vs_truth",
        ),
    ] {
        let c = &p[key];
        out.push_str(&format!(
            "{label:<44} {} nodes: {} agree, {} differ\n",
            c["nodes"], c["agree"], c["differ"]
        ));
        for d in c["differences"].as_array().into_iter().flatten().take(5) {
            out.push_str(&format!("    {d}\n"));
        }
    }
    let d = &p["view_allocations_default_flags"];
    out.push_str(&format!(
        "  view-alloc with its default flags (no --ignore-taints, no -z) shows {} of {} GPU nodes ({} nvidia.com/gpu allocatable)\n",
        d["gpu_nodes_shown"], d["gpu_nodes"], d["allocatable_shown"]
    ));
}
