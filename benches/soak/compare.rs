//! The promise, checked: the GpuInventory status, the ConfigMap (each node's entry and `_summary`) and the
//! leader's `/metrics` gauges equal what a fresh `scan -o json` of the same cluster says, field by field. The
//! status is compared with `scan --status-nodes-budget` at the operators' budget (SOAK_STATUS_NODES_BUDGET),
//! which lists the very nodes the operator's status lists (one cut for both: `size_budget::status_cut`);
//! the ConfigMap and the gauges with a scan of every node.
//! Only bookkeeping is left out: `observedTime`, `observedGeneration` and conditions' `lastTransitionTime`
//! and `observedGeneration` (a scan observes no object, so it has no generation), and the DRA devices one by
//! one that `scan` lists and the published objects leave out (they keep the counts).
//! The expected gauges are the operator's own export of the scanned status into a fresh registry, so a
//! stale, missing or ghost series on the leader shows as a difference.

use std::collections::BTreeMap;
use std::process::Command;

use gpu_inventory_operator::crd::{GpuInventory, GpuInventoryStatus};
use gpu_inventory_operator::publish::content::configmap::{CONFIGMAP_NAME, SUMMARY_KEY};
use gpu_inventory_operator::publish::content::wire::published_inventory;
use gpu_inventory_operator::publish::metrics::{InventoryGauges, export_inventory};
use gpu_inventory_operator::runtime::metrics::Metrics;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::Api;
use serde_json::{Value, json};
use testkit::settings::soak::Settings;

use crate::Res;
use crate::operators::{INVENTORY, NAMESPACE, Operators};

/// What the operators published, as read now.
pub struct Outputs {
    pub status: Value,
    pub configmap: BTreeMap<String, String>,
    pub metrics: String,
}

/// Two fresh scans of the cluster: every GPU node (the ConfigMap lists each, the gauges count each), and the
/// nodes the status lists (`scan --status-nodes-budget`, the operators' budget: the operator's own cut).
pub struct Scans {
    pub all: GpuInventoryStatus,
    pub listed: GpuInventoryStatus,
}

/// Both scans, run side by side.
pub async fn scan(s: &Settings) -> Res<Scans> {
    let budget = ["--status-nodes-budget", s.status_nodes_budget.as_str()];
    let (all, listed) = tokio::join!(scan_with(s, &[]), scan_with(s, &budget));
    Ok(Scans {
        all: all?,
        listed: listed?,
    })
}

/// `scan -o json <extra>` of the cluster, by the operator binary (exit 0 or 1: healthy or issues found).
async fn scan_with(s: &Settings, extra: &[&str]) -> Res<GpuInventoryStatus> {
    let (bin, kubeconfig) = (s.operator_bin.clone(), s.kubeconfig.clone());
    let extra: Vec<String> = extra.iter().map(|a| (*a).to_owned()).collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin)
            .args(["scan", "-o", "json", "--kubeconfig"])
            .arg(kubeconfig)
            .args(extra)
            .output()
    })
    .await??;
    if !matches!(out.status.code(), Some(0 | 1)) {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("scan failed ({}): {}", out.status, err.trim()).into());
    }
    Ok(serde_json::from_slice(&out.stdout).map_err(|e| format!("scan's JSON: {e}"))?)
}

/// The inventory's status, the ConfigMap's data and the leader's /metrics.
pub async fn outputs(client: &Client, ops: &mut Operators) -> Res<Outputs> {
    let inventory = Api::<GpuInventory>::all(client.clone())
        .get(INVENTORY)
        .await
        .map_err(|e| format!("reading GpuInventory {INVENTORY}: {e}"))?;
    let configmap = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE)
        .get(CONFIGMAP_NAME)
        .await
        .map_err(|e| format!("reading ConfigMap {NAMESPACE}/{CONFIGMAP_NAME}: {e}"))?;
    let leader = ops
        .leader(client)
        .await
        .ok_or("no live replica holds the Lease")?;
    Ok(Outputs {
        status: serde_json::to_value(inventory.status)?,
        configmap: configmap.data.unwrap_or_default(),
        metrics: ops.metrics(leader).await?,
    })
}

/// The first difference between the scans and the outputs ("path: scan X, operator Y"), if any: the status
/// against the scan cut as the status is (its `nodes[]`, `omittedNodes` and `nodesMessage` too), the
/// ConfigMap and the gauges against the scan of every node.
pub fn first_difference(scans: &Scans, out: &Outputs) -> Option<String> {
    let listed = without_devices(&scans.listed);
    let all = without_devices(&scans.all);
    diff(
        "status",
        &without_bookkeeping(&listed),
        &without_bookkeeping(&out.status),
    )
    .or_else(|| configmap_difference(&all, &out.configmap))
    .or_else(|| metrics_difference(&scans.all, &out.metrics))
}

/// `scan` lists each node as its GpuNode does: each DRA device one by one, and the holders with their
/// GPU-equivalents; the status and the ConfigMap keep only the counts (and the namespaces' sums).
fn without_devices(scan: &GpuInventoryStatus) -> Value {
    let mut want = serde_json::to_value(scan).expect("a status serializes");
    for node in want["nodes"].as_array_mut().into_iter().flatten() {
        if let Some(node) = node.as_object_mut() {
            node.remove("devices");
            node.remove("holders");
            node.remove("gpuEquivalents");
        }
    }
    want
}

/// `status` without the times and generation the comparison leaves out.
fn without_bookkeeping(status: &Value) -> Value {
    let mut status = status.clone();
    if let Some(o) = status.as_object_mut() {
        o.remove("observedTime");
        o.remove("observedGeneration");
    }
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            c.remove("lastTransitionTime");
            c.remove("observedGeneration");
        }
    }
    status
}

/// Every node entry of the scan under its name, `_summary` as the scan's totals, nothing else.
fn configmap_difference(want: &Value, data: &BTreeMap<String, String>) -> Option<String> {
    let nodes = want["nodes"].as_array().cloned().unwrap_or_default();
    let summary = json!({
        "totalGpuNodes": want["totalGpuNodes"],
        "readyGpuNodes": want["readyGpuNodes"],
        "totalGpus": want["totalGpus"],
        "freeGpus": want["freeGpus"],
        "pendingGpuPods": want["pendingGpuPods"],
        "nodesWithIssues": nodes.iter().filter(|n| n["issues"].as_array().is_some_and(|i| !i.is_empty())).count(),
        "truncated": false,
    });
    let mut expected: BTreeMap<String, Value> = nodes
        .into_iter()
        .map(|n| (n["name"].as_str().unwrap_or_default().to_owned(), n))
        .collect();
    expected.insert(SUMMARY_KEY.to_owned(), summary);
    let keys: std::collections::BTreeSet<&String> = expected.keys().chain(data.keys()).collect();
    keys.into_iter().find_map(|key| {
        let path = format!("configmap[{key}]");
        let got = data
            .get(key)
            .map(|v| serde_json::from_str(v).unwrap_or(Value::String(v.clone())));
        match (expected.get(key), got) {
            (Some(w), Some(g)) => diff(&path, w, &g),
            (Some(_), None) => Some(format!("{path}: in the scan, missing from the ConfigMap")),
            (None, Some(_)) => Some(format!("{path}: in the ConfigMap, not in the scan")),
            (None, None) => None,
        }
    })
}

/// The inventory's series (`inventory="..."`) the scan's status exports, against the leader's.
fn metrics_difference(scan: &GpuInventoryStatus, leader_text: &str) -> Option<String> {
    let gauges = InventoryGauges::default();
    let fresh = Metrics::with_families(|registry| gauges.register(registry));
    export_inventory(
        &fresh,
        &gauges,
        INVENTORY,
        &std::sync::Arc::new(published_inventory(scan)),
    );
    let want = inventory_series(&fresh.encode());
    let got = inventory_series(leader_text);
    let keys: std::collections::BTreeSet<&String> = want.keys().chain(got.keys()).collect();
    keys.into_iter()
        .find_map(|k| match (want.get(k), got.get(k)) {
            (Some(w), Some(g)) if w == g => None,
            (w, g) => Some(format!(
                "metrics {k}: scan {}, leader {}",
                w.map_or("absent".into(), |v| v.to_string()),
                g.map_or("absent".into(), |v| v.to_string())
            )),
        })
}

/// `series -> value` of the lines of an OpenMetrics text that belong to the soak's inventory.
fn inventory_series(text: &str) -> BTreeMap<String, f64> {
    let label = format!("inventory=\"{INVENTORY}\"");
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains(&label))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse().ok()?))
        })
        .collect()
}

/// The first path where `want` (the scan) and `got` (the operator) differ. Arrays of objects that all have a
/// `name` are compared by name, so a difference reads `nodes[bench-gpu-00010].ready`.
pub fn diff(path: &str, want: &Value, got: &Value) -> Option<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            let keys: std::collections::BTreeSet<&String> = w.keys().chain(g.keys()).collect();
            keys.into_iter().find_map(|k| {
                let (w, g) = (
                    w.get(k).unwrap_or(&Value::Null),
                    g.get(k).unwrap_or(&Value::Null),
                );
                let sep = if k.starts_with('[') { "" } else { "." };
                diff(&format!("{path}{sep}{k}"), w, g)
            })
        }
        (Value::Array(w), Value::Array(g)) => match (by_name(w), by_name(g)) {
            (Some(w), Some(g)) => diff(path, &Value::Object(w), &Value::Object(g)),
            _ => {
                let n = w.len().max(g.len());
                (0..n).find_map(|i| {
                    let (w, g) = (
                        w.get(i).unwrap_or(&Value::Null),
                        g.get(i).unwrap_or(&Value::Null),
                    );
                    diff(&format!("{path}[{i}]"), w, g)
                })
            }
        },
        (w, g) if w == g => None,
        (w, g) => Some(format!("{path}: scan {w}, operator {g}")),
    }
}

/// The array as a map by each element's `name`, when every element is an object with one.
fn by_name(items: &[Value]) -> Option<serde_json::Map<String, Value>> {
    items
        .iter()
        .map(|v| Some((format!("[{}]", v.get("name")?.as_str()?), v.clone())))
        .collect()
}
