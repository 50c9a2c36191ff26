//! What the utilization tests share (tests/utilization.rs, tests/utilization_cli.rs): their KWOK GPU nodes, pods
//! holding GPUs, dcgm-exporter history that reads the same for the length of a test, and what the outputs say
//! about idle GPUs.

use std::collections::BTreeMap;
use std::time::Duration;

use gpu_inventory_operator::crd::{GpuInventoryStatus, IdleEntry};
use jiff::{Timestamp, ToSpan};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::PrometheusProcess;
use super::Series;
use crate::common::allocation::node;
use crate::common::{OperatorProcess, TestEnv, eventually};

pub const CONVERGE: Duration = Duration::from_secs(30);
/// A change of the idle set: the next round (`--utilization-interval 2s`), the coalescing window, one scan.
pub const ROUND: Duration = Duration::from_secs(15);
/// Prometheus back after a stop: the source's backoff (5 s, 10 s, ...) and a round.
pub const BACK: Duration = Duration::from_secs(40);
/// The operator's `--utilization-hold`: how long the last answer stands after a failed round.
pub const HOLD: Duration = Duration::from_secs(8);
pub const GPU: &str = "nvidia.com/gpu";
pub const MIG: &str = "nvidia.com/mig-1g.10gb";
/// dcgm-exporter's sampling step, in seconds.
pub const STEP: i64 = 30;

/// A series of `value` from `from` ago until twenty minutes ahead.
pub fn history(series: Series, value: f64, from: jiff::Span) -> Series {
    let now = Timestamp::now();
    series.constant(value, now - from, now + 20.minutes(), STEP)
}

pub fn h100_node(name: &str, gpus: u32) -> k8s_openapi::api::core::v1::Node {
    let labels = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": gpus.to_string() });
    node(name, labels, &[(GPU, &gpus.to_string())])
}

/// An H100 with MIG strategy `mixed`: seven 1g.10gb instances.
pub fn mig_node(name: &str) -> k8s_openapi::api::core::v1::Node {
    let labels = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "7" });
    node(name, labels, &[(MIG, "7")])
}

/// Pod `name` pinned to `node`, asking for `amount` of `resource`; waits until the scheduler bound it.
pub async fn held(env: &TestEnv, name: &str, node: &str, resource: &str, amount: u32) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "nodeSelector": { "kubernetes.io/hostname": node },
                  "automountServiceAccountToken": false,
                  "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                   "resources": { "limits": { resource: amount.to_string() } } }] }
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(CONVERGE, &format!("creating pod {name}"), || async {
        pods.create(&PostParams::default(), &pod)
            .await
            .map_err(|e| eprintln!("creating pod {name}: {e} (retrying)"))
            .ok()
    })
    .await;
    env.wait_bound(name).await;
}

/// Pod `namespace/name` bound to `node` by `spec.nodeName`, as a sharing layer's scheduler binds (HAMi's), with
/// `annotations` and the container's `limits`.
pub async fn bound_pod(
    env: &TestEnv,
    namespace: &str,
    name: &str,
    node: &str,
    annotations: Value,
    limits: Value,
) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name, "annotations": annotations },
        "spec": { "nodeName": node, "automountServiceAccountToken": false,
                  "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                   "resources": { "limits": limits } }] }
    }))
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    eventually(
        CONVERGE,
        &format!("creating pod {namespace}/{name}"),
        || async {
            pods.create(&PostParams::default(), &pod)
                .await
                .map_err(|e| eprintln!("creating pod {name}: {e} (retrying)"))
                .ok()
        },
    )
    .await;
}

/// A second namespace of the test, `<id>-<suffix>`; delete it at the end (the test's cleanup removes its own
/// namespace only).
pub async fn other_namespace(env: &TestEnv, suffix: &str) -> String {
    let name = format!("{}-{suffix}", env.id);
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    Api::<Namespace>::all(env.client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    name
}

pub fn idle_of<'s>(
    status: &'s GpuInventoryStatus,
    namespace: &str,
) -> Option<&'s BTreeMap<String, u64>> {
    status
        .namespaces
        .iter()
        .find(|n| n.name == namespace)
        .map(|n| &n.idle)
        .filter(|idle| !idle.is_empty())
}

pub fn state(status: &GpuInventoryStatus) -> &str {
    status.utilization.as_ref().map_or("", |u| u.state.as_str())
}

/// The GpuNode's idle entries as they are written.
pub async fn gpunode_idle_entries(env: &TestEnv, node: &str) -> Vec<IdleEntry> {
    let Some(gpunode) = env.gpunode(node).await else {
        return Vec::new();
    };
    gpunode.status.map(|s| s.node.idle).unwrap_or_default()
}

/// The GpuNode's idle entries as `(pod, resource, amount)`.
pub async fn gpunode_idle(env: &TestEnv, node: &str) -> Vec<(String, String, u64)> {
    gpunode_idle_entries(env, node)
        .await
        .into_iter()
        .map(|e| {
            let holder = e.pod.or(e.claim).unwrap_or_default();
            (holder, e.resource, e.amount)
        })
        .collect()
}

/// The GpuNode's idle entries once it lists `entries` of them: the GpuNode is written after the inventory (its own
/// publisher), so a test that saw the inventory's idle figures waits here rather than reading at once.
pub async fn wait_gpunode_idle(
    env: &TestEnv,
    node: &str,
    entries: usize,
) -> Vec<(String, String, u64)> {
    let mut idle = eventually(
        ROUND,
        &format!("{entries} idle entries in GpuNode {node}"),
        || async {
            let idle = gpunode_idle(env, node).await;
            (idle.len() == entries).then_some(idle)
        },
    )
    .await;
    idle.sort();
    idle
}

pub fn operator_for(env: &TestEnv, prometheus: &PrometheusProcess) -> OperatorProcess {
    env.start_operator_with(
        "30s",
        &[
            "--prometheus-url",
            &prometheus.url(),
            "--utilization-interval",
            "2s",
            "--utilization-hold",
            &format!("{}s", HOLD.as_secs()),
        ],
    )
}
