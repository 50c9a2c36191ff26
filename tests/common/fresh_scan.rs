//! The promise of the chaos tests: once the cluster is quiet, the operator's status, ConfigMap and metrics
//! equal a fresh one-shot `scan` of the same cluster.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use gpu_inventory_operator::crd::GpuInventoryStatus;
use gpu_inventory_operator::inventory::allocation::GpuPod;
use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
use gpu_inventory_operator::inventory::{NodeUniverse, ScanInput, scan};
use gpu_inventory_operator::publish::content::configmap::{DATA_BUDGET_BYTES, configmap_data};
use gpu_inventory_operator::sources::pods::UNFINISHED_PODS;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use serde_json::Value;
use testkit::waits::Deadline;

use super::cluster_access::kubeconfig_path;
use super::operator_process::{OperatorProcess, metric};
use super::test_env::{TEST_LABEL, TestEnv};

/// The status `gpu-inventory-operator scan -o json` reports for the test's nodes now.
pub fn scan_status(env: &TestEnv) -> GpuInventoryStatus {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args([
            "scan",
            "-o",
            "json",
            "-l",
            &format!("{TEST_LABEL}={}", env.id),
        ])
        .args(["--kubeconfig", &kubeconfig_path().display().to_string()])
        .output()
        .expect("scan runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "scan -o json: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The ConfigMap data the operator's code makes of a fresh list of the test's nodes and all unfinished pods.
pub async fn scan_configmap(env: &TestEnv) -> BTreeMap<String, String> {
    let selector = format!("{TEST_LABEL}={}", env.id);
    let nodes = Api::<Node>::all(env.client.clone())
        .list(&ListParams::default().labels(&selector))
        .await
        .expect("list nodes")
        .items
        .iter()
        .map(ClusterNode::of)
        .collect::<Vec<_>>();
    let pods: Vec<GpuPod> = Api::<Pod>::all(env.client.clone())
        .list(&ListParams::default().fields(UNFINISHED_PODS))
        .await
        .expect("list pods")
        .items
        .iter()
        .filter_map(GpuPod::from_pod)
        .collect();
    let inventory = scan(
        ScanInput::nodes(&nodes)
            .pods(&pods)
            .universe(NodeUniverse::Subset),
    );
    configmap_data(&inventory, DATA_BUDGET_BYTES).0
}

/// A status or ConfigMap entry as JSON without the times only the writer stamps.
fn without_times(mut value: Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for key in [
                    "observedTime",
                    "lastTransitionTime",
                    "observedGeneration",
                    "lastUpdateTime",
                ] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut value);
    value
}

fn configmap_json(data: &BTreeMap<String, String>) -> Value {
    Value::Object(
        data.iter()
            .map(|(k, v)| {
                let v = serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.clone()));
                (k.clone(), without_times(v))
            })
            .collect(),
    )
}

/// Waits (up to `deadline`) until the test's inventory status, its ConfigMap and the operator's inventory
/// gauges equal a fresh scan, all read in one round; panics with the last difference.
pub async fn wait_equal_to_fresh_scan(
    env: &TestEnv,
    operator: &OperatorProcess,
    deadline: impl Into<Deadline>,
) {
    let deadline = deadline.into();
    let started = Instant::now();
    loop {
        let difference = match difference_from_fresh_scan(env, operator).await {
            None => return,
            Some(difference) => difference,
        };
        if started.elapsed() > deadline.limit() {
            panic!(
                "not equal to a fresh scan after {:.1?}, past the deadline of {deadline}; last difference: \
                 {difference}",
                started.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// What differs between the operator's outputs and a fresh scan (`None`: nothing).
async fn difference_from_fresh_scan(env: &TestEnv, operator: &OperatorProcess) -> Option<String> {
    let inventory = env.inventory_name();
    let scanned = scan_status(env);
    let Some(status) = env.inventory(&inventory).await.and_then(|i| i.status) else {
        return Some("no status yet".to_owned());
    };
    let (mut want, got) = (
        without_times(serde_json::to_value(&scanned).unwrap()),
        without_times(serde_json::to_value(&status).unwrap()),
    );
    // `scan` lists each node as its GpuNode does; the GpuInventory's nodes[] leaves out the holders and their
    // sum (the namespaces' sums are in both).
    for node in want["nodes"].as_array_mut().into_iter().flatten() {
        if let Some(entry) = node.as_object_mut() {
            entry.remove("holders");
            entry.remove("gpuEquivalents");
        }
    }
    if want != got {
        return Some(format!("status:\n  scan:     {want}\n  operator: {got}"));
    }
    let want = configmap_json(&scan_configmap(env).await);
    let got = configmap_json(
        &env.configmap()
            .await
            .and_then(|c| c.data)
            .unwrap_or_default(),
    );
    if want != got {
        return Some(format!("ConfigMap:\n  scan:     {want}\n  operator: {got}"));
    }
    let (_, metrics) = operator.http_get("/metrics").await;
    let gauge = |name: &str| {
        metric(
            &metrics,
            &format!("gpu_inventory_{name}{{inventory=\"{inventory}\"}}"),
        )
    };
    let want = [
        scanned.total_gpu_nodes as f64,
        scanned.ready_gpu_nodes as f64,
        scanned.total_gpus as f64,
        scanned.free_gpus as f64,
    ];
    let got = ["gpu_nodes", "ready_gpu_nodes", "gpus", "free_gpus"].map(gauge);
    (got != want.map(Some))
        .then(|| format!("metrics (gpu_nodes, ready, gpus, free): scan {want:?}, operator {got:?}"))
}
