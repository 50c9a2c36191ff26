//! What the allocation and DRA tests read and wait for: a node's entry, its allocated/free counts, the
//! `GpusAvailable` condition.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpu_inventory_operator::crd::{GpuInventoryStatus, GpuNodeEntry};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde_json::{Value, json};

use super::test_env::TestEnv;

/// A Ready KWOK node with `labels` and `resources` as capacity and allocatable, plus what the scheduler needs
/// to place pods (cpu, memory, pods).
pub fn node(name: &str, labels: Value, resources: &[(&str, &str)]) -> Node {
    let mut list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110" });
    for (k, v) in resources {
        list[*k] = json!(v);
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": labels },
        "status": { "capacity": list, "allocatable": list,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "kubelet is posting ready status" }] }
    }))
    .unwrap()
}

/// The entry of `node` in a status.
pub fn entry<'a>(status: &'a GpuInventoryStatus, node: &str) -> Option<&'a GpuNodeEntry> {
    status.nodes.iter().find(|n| n.name == node)
}

/// `(resource, n)` pairs as the status's per-resource map.
pub fn counts(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// Waits up to `within` after `since` for `node`'s allocated and free (in the test's default inventory) to
/// be `allocated` and `free`; says how long after `since` it was seen.
pub async fn node_holds(
    env: &TestEnv,
    since: Instant,
    within: Duration,
    node: &str,
    allocated: &[(&str, u64)],
    free: &[(&str, u64)],
) -> GpuInventoryStatus {
    let (allocated, free) = (counts(allocated), counts(free));
    let what = format!("{node}: allocated {allocated:?}, free {free:?}");
    let left = within.saturating_sub(since.elapsed());
    let inventory = env
        .wait_inventory(&env.inventory_name(), left, &what, |s| {
            entry(s, node).is_some_and(|e| e.allocated == allocated && e.free == free)
        })
        .await;
    eprintln!(
        "{what}: seen {} ms after the change",
        since.elapsed().as_millis()
    );
    inventory.status.unwrap()
}

/// The status's `GpusAvailable` condition.
pub fn gpus_available(status: &GpuInventoryStatus) -> Option<&Condition> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "GpusAvailable")
}

/// Waits up to `timeout` until the default inventory's `GpusAvailable` is `want` (and `also` holds); returns
/// the status and that condition.
pub async fn wait_gpus_available(
    env: &TestEnv,
    timeout: Duration,
    want: &str,
    also: impl Fn(&GpuInventoryStatus) -> bool,
) -> (GpuInventoryStatus, Condition) {
    let what = format!("GpusAvailable {want}");
    let inventory = env
        .wait_inventory(&env.inventory_name(), timeout, &what, |s| {
            gpus_available(s).is_some_and(|c| c.status == want) && also(s)
        })
        .await;
    let status = inventory.status.unwrap();
    let condition = gpus_available(&status).unwrap().clone();
    (status, condition)
}

/// What `namespace` holds in GPU-equivalents, as `status.namespaces[].gpuEquivalents` says.
pub fn equivalents(status: &GpuInventoryStatus, namespace: &str) -> Option<String> {
    status
        .namespaces
        .iter()
        .find(|n| n.name == namespace)
        .and_then(|n| n.gpu_equivalents.clone())
}
