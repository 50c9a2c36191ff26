//! The allocation scenario's measurements from what the driver saw: latency percentiles, the status's
//! summary fields against the truth, and the program's writes from the audit log (when, how many per
//! second, how long the API server took for each).

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};
use testkit::audit::{AuditPos, AuditTail};
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::alloc_observe::{SeenStatus, Timing};
use crate::alloc_truth::Expected;
use crate::measure::percentile;

pub fn ms_stats(mut ms: Vec<f64>) -> Value {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    json!({
        "n": ms.len(), "p50": percentile(&ms, 50.0), "p90": percentile(&ms, 90.0), "p95": percentile(&ms, 95.0),
        "p99": percentile(&ms, 99.0),
        "max": ms.last().copied().unwrap_or(f64::NAN),
    })
}

/// Percentiles of the latencies to each output; to the GpuNode "n/a" unless the program writes `gpunodes`.
/// `both` is the later of the status and the ConfigMap (the status alone where the ConfigMap is not watched).
pub fn latency_json(timings: &[Timing], gpunodes: bool) -> Value {
    let ms = |f: fn(&Timing) -> Option<Duration>| -> Vec<f64> {
        timings
            .iter()
            .filter_map(f)
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect()
    };
    let gpunode = ms(|t| t.gpunode);
    json!({
        "status": ms_stats(ms(|t| t.status)),
        "configmap": ms_stats(ms(|t| t.cm)),
        "both": ms_stats(ms(|t| t.cm.map_or(t.status, |cm| t.status.map(|s| s.max(cm))))),
        // "n/a": the program writes no GpuNodes.
        "gpunode": if gpunodes { ms_stats(gpunode) } else { json!("n/a") },
    })
}

/// The status's products, freeGpus and GpusAvailable condition, and what the truth says they should be:
/// counting every MIG-disabled GPU as a whole GPU, and by the operator's rule (a node labelled
/// `mig.strategy=single` offers no whole GPUs).
pub fn summary_check(exp: &Expected, seen: &SeenStatus) -> Value {
    let products = |want: BTreeMap<String, (u64, u64, u64)>| -> BTreeMap<String, Value> {
        want.into_iter()
            .map(|(k, (nodes, gpus, free))| {
                (k, json!({ "nodes": nodes, "gpus": gpus, "freeGpus": free }))
            })
            .collect()
    };
    let seen_products: BTreeMap<String, Value> = seen
        .products
        .iter()
        .map(|(k, (nodes, gpus, free))| {
            (
                k.clone(),
                json!({ "nodes": nodes, "gpus": gpus, "freeGpus": free }),
            )
        })
        .collect();
    let (whole, rule) = (products(exp.products(false)), products(exp.products(true)));
    let gpus_available_want = match exp.pending {
        0 => json!({ "status": "True", "reason": "NoPendingGpuPods" }),
        _ => json!({ "status": "False", "reason": "GpuDemandExceedsSupply" }),
    };
    json!({
        "free_gpus": {
            "seen": seen.free_gpus,
            "want_whole_gpus": exp.free_gpus(false),
            "want_operator_rule": exp.free_gpus(true),
        },
        "products": {
            "seen": seen_products,
            "want_whole_gpus": whole, "agree_whole_gpus": seen_products == whole,
            "want_operator_rule": rule, "agree_operator_rule": seen_products == rule,
        },
        "gpus_available": seen.gpus_available.as_ref().map(|(s, r)| json!({ "status": s, "reason": r })),
        "gpus_available_want": gpus_available_want,
    })
}

/// A write of the program: when it was received (seconds after the window's start) and how long the API
/// server took to answer it (ms).
pub type Write = (f64, f64);

/// The program's writes to the status and to the ConfigMap received in [from, to].
pub fn writes(
    s: &Settings,
    offset: AuditPos,
    from: Timestamp,
    to: Timestamp,
) -> (Vec<Write>, Vec<Write>) {
    let ua = Program::Operator.user_agent_prefix();
    let (mut status, mut cm) = (Vec::new(), Vec::new());
    AuditTail::at(&s.audit_log, offset).read_new(&[ua], |v| {
        let stage_ok = v["stage"] == "ResponseComplete";
        let write = matches!(v["verb"].as_str(), Some("create" | "update" | "patch"));
        let ours = v["userAgent"].as_str().is_some_and(|u| u.starts_with(ua));
        let time = |k: &str| v[k].as_str().and_then(|t| t.parse::<Timestamp>().ok());
        let (Some(at), Some(done), true) = (
            time("requestReceivedTimestamp"),
            time("stageTimestamp"),
            stage_ok && write && ours,
        ) else {
            return;
        };
        if at < from || at > to {
            return;
        }
        let w = (
            at.duration_since(from).as_secs_f64(),
            done.duration_since(at).as_secs_f64() * 1000.0,
        );
        let o = &v["objectRef"];
        match (o["resource"].as_str(), o["subresource"].as_str()) {
            (Some("gpuinventories"), Some("status")) => status.push(w),
            (Some("configmaps"), None) => cm.push(w),
            _ => {}
        }
    });
    (status, cm)
}

/// How long the API server took for the writes.
pub fn server_ms(status: &[Write], cm: &[Write]) -> Value {
    let ms = |w: &[Write]| ms_stats(w.iter().map(|w| w.1).collect());
    json!({ "status": ms(status), "configmap": ms(cm) })
}

/// Writes per second: the mean over `secs`, and the most in any whole second.
pub fn rate_json(times: &[Write], secs: f64) -> Value {
    let mut per_second: BTreeMap<u64, u64> = BTreeMap::new();
    for (t, _) in times {
        *per_second.entry(*t as u64).or_default() += 1;
    }
    json!({
        "writes": times.len(), "per_sec": times.len() as f64 / secs,
        "busiest_second": per_second.values().max().copied().unwrap_or(0),
    })
}
