//! The allocation scenario's block of the table (BENCH_TABLE), from results.json's `allocation` section: the
//! programs side by side (operator / previous when both ran), then the peers.

use serde_json::Value;

use crate::table::{Side, compact, gpunode_cell, num, pair};

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
    let side = Side::of(al);
    if side.any() {
        program_rows(out, &side, al);
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

fn program_rows(out: &mut String, side: &Side, al: &Value) {
    let st = &al["settings"];
    side.header(out, "programs (run), side by side");
    if let Some(label) = al["previous_label"].as_str()
        && side.runs().any(|(n, _)| n == "previous")
    {
        out.push_str(&format!("  previous = the operator at {label}\n"));
    }
    side.num_row(out, "converged after start (s)", &["converge_secs"], 2, "");
    side.common_rows(out, "<= 96");
    for (what, key, target) in [
        ("status", "status", "p99 <= 1000"),
        ("GpuNode", "gpunode", "p99 <= 1000"),
        ("ConfigMap", "configmap", ""),
    ] {
        for p in ["p50", "p90", "p99"] {
            let label = format!("pod change -> {what} {p} (ms)");
            let cell = |r: &Value| match key {
                "gpunode" => gpunode_cell(r, |r| num(&r["latency_ms"][key][p], 0)),
                _ => num(&r["latency_ms"][key][p], 0),
            };
            let value = |r: &Value| r["latency_ms"][key][p].as_f64();
            side.row_ratio(
                out,
                &label,
                cell,
                value,
                if p == "p99" { target } else { "" },
            );
        }
    }
    side.row(
        out,
        "  max to status / ConfigMap (ms)",
        |r| {
            pair(
                &r["latency_ms"]["status"]["max"],
                &r["latency_ms"]["configmap"]["max"],
                0,
            )
        },
        "",
    );
    side.row(
        out,
        "  API server ms per write: status / CM p50",
        |r| {
            pair(
                &r["latency_server_ms"]["status"]["p50"],
                &r["latency_server_ms"]["configmap"]["p50"],
                0,
            )
        },
        "",
    );
    side.row(
        out,
        "  ... p99 (ms)",
        |r| {
            pair(
                &r["latency_server_ms"]["status"]["p99"],
                &r["latency_server_ms"]["configmap"]["p99"],
                0,
            )
        },
        "",
    );
    let kib = |v: &Value| num(&Value::from(v.as_f64().map(|b| b / 1024.0)), 0);
    side.row(
        out,
        "  size: status / inventory / CM (KiB)",
        |r| {
            let sz = &r["sizes"];
            format!(
                "{}/{}/{}",
                kib(&sz["status_bytes"]),
                kib(&sz["inventory_bytes"]),
                kib(&sz["configmap_bytes"])
            )
        },
        "",
    );
    side.row(
        out,
        "  changes (binds + deletes), not seen",
        |r| {
            let lc = &r["latency_changes"];
            format!("{} + {}, {}", lc["binds"], lc["deletes"], lc["lost"])
        },
        "",
    );
    side.row(
        out,
        "churn: pod changes sent (GPU), failed",
        |r| {
            format!(
                "{} ({}), {}",
                r["churn"]["changes"], r["churn"]["gpu_changes"], r["churn"]["failed"]
            )
        },
        "",
    );
    side.num_row(
        out,
        &format!("churn: pod changes/s (asked {})", st["churn_rate"]),
        &["churn", "changes_per_sec"],
        1,
        "",
    );
    side.churn_rows(out);
    side.row(
        out,
        "freeGpus seen",
        |r| num(&r["summary"]["free_gpus"]["seen"], 0),
        "",
    );
    side.row(
        out,
        "  want: whole GPUs / mig.strategy=single rule",
        |r| {
            let fg = &r["summary"]["free_gpus"];
            pair(&fg["want_whole_gpus"], &fg["want_operator_rule"], 0)
        },
        "",
    );
    side.row(
        out,
        "products[] agree: whole GPUs / by that rule",
        |r| {
            let pr = &r["summary"]["products"];
            format!("{} / {}", pr["agree_whole_gpus"], pr["agree_operator_rule"])
        },
        "",
    );
    let cond = |c: &Value| match (c["status"].as_str(), c["reason"].as_str()) {
        (Some(s), Some(r)) => format!("{s}/{r}"),
        _ => "-".into(),
    };
    for (name, r) in side.runs().filter(|(_, r)| r.is_object()) {
        let sm = &r["summary"];
        out.push_str(&format!(
            "  {name}: GpusAvailable {} (want {})\n  {name} requests at start-up: {}\n  {name} requests in churn: {}\n",
            cond(&sm["gpus_available"]),
            cond(&sm["gpus_available_want"]),
            compact(&r["startup_requests"]),
            compact(&r["churn"]["requests"])
        ));
    }
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
