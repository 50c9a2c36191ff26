//! A Kubernetes `Pod` into the core's [`GpuPod`]: the scheduler's effective request of each accounted
//! resource, the claims it uses, and what the kubelet says of its devices. The methods sit on the core's
//! type, but here at the edge, so that `src/inventory/` names no Kubernetes type.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::inventory::allocation::GpuPod;
use crate::inventory::allocation::device_health::DeviceHealth;
use crate::inventory::allocation::equivalents::{KAI_FRACTION, KAI_GPU_GROUP, KAI_MEMORY};
use crate::inventory::allocation::pod::{PodShare, add};
use crate::inventory::model::quantity_value;
use crate::inventory::resources::is_accounted_request;
use crate::inventory::vendors::sharing_layer::{POD_DEVICE_ANNOTATIONS, pod_devices};

/// The health value the kubelet writes for a device that failed.
const UNHEALTHY: &str = "Unhealthy";
/// The health value the kubelet writes when the plugin or driver stopped reporting the device's health.
const UNKNOWN: &str = "Unknown";

impl GpuPod {
    /// The pod's accounting view, or `None` when it asks for no `nvidia.com/*` resource and names no
    /// ResourceClaim.
    pub fn from_pod(pod: &Pod) -> Option<GpuPod> {
        let requests = effective_requests(pod.spec.as_ref()?);
        let claims = claim_names(pod);
        let annotation = |key: &str| {
            pod.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .map(String::as_str)
        };
        let share = PodShare::from_annotations(annotation(KAI_FRACTION), annotation(KAI_MEMORY));
        // The layer's record after binding, else its scheduler's decision.
        let placed = POD_DEVICE_ANNOTATIONS
            .iter()
            .find_map(|key| annotation(key))
            .map(pod_devices)
            .unwrap_or_default();
        let gpu_group = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(KAI_GPU_GROUP))
            .filter(|g| !g.is_empty())
            .cloned();
        if requests.is_empty() && claims.is_empty() && share.is_none() {
            return None;
        }
        let status = pod.status.as_ref();
        let extended_claim = status
            .and_then(|s| s.extended_resource_claim_status.as_ref())
            .map(|e| e.resource_claim_name.clone())
            .filter(|n| !n.is_empty());
        let unschedulable = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            });
        let spec = pod.spec.as_ref()?;
        let node = spec.node_name.clone().filter(|n| !n.is_empty());
        Some(GpuPod {
            namespace: pod.metadata.namespace.clone().unwrap_or_default(),
            name: pod.metadata.name.clone().unwrap_or_default(),
            node_selector: match node {
                Some(_) => BTreeMap::new(),
                None => spec.node_selector.clone().unwrap_or_default(),
            },
            node,
            phase: status
                .and_then(|s| s.phase.clone())
                .unwrap_or_else(|| "Pending".to_owned()),
            unschedulable,
            // Flat: a pod asks for one or two resources, and a B-tree leaf is 360 B (docs/scale.md).
            requests: requests.into_iter().collect(),
            claims,
            extended_claim,
            unhealthy_devices: status.map(unhealthy_devices).unwrap_or_default(),
            unknown_devices: status.map(unknown_devices).unwrap_or_default(),
            share,
            placed,
            gpu_group,
        })
    }
}

/// The ResourceClaims a pod uses, by name (see [`GpuPod::claims`]).
fn claim_names(pod: &Pod) -> Vec<String> {
    let direct = pod
        .spec
        .iter()
        .flat_map(|s| s.resource_claims.iter().flatten())
        .filter_map(|c| c.resource_claim_name.clone());
    let generated = pod
        .status
        .iter()
        .flat_map(|s| s.resource_claim_statuses.iter().flatten())
        .filter_map(|c| c.resource_claim_name.clone());
    let mut names: Vec<String> = direct.chain(generated).filter(|n| !n.is_empty()).collect();
    names.sort();
    names.dedup();
    names
}

/// The scheduler's request of each `nvidia.com/*` resource (kube-scheduler's `computePodResourceRequest`):
/// the larger of (app containers + restartable init containers, i.e. sidecars) and (each regular init
/// container plus the sidecars started before it), plus `overhead`. A container's request is its
/// `requests` entry, else its `limits` entry (the API server defaults one from the other for extended
/// resources; offline dumps may hold either). Zero requests are dropped.
pub fn effective_requests(spec: &PodSpec) -> BTreeMap<String, u64> {
    let mut apps: BTreeMap<String, u64> = BTreeMap::new();
    for container in &spec.containers {
        add(&mut apps, &container_requests(container));
    }
    let mut sidecars: BTreeMap<String, u64> = BTreeMap::new();
    let mut init_peak: BTreeMap<String, u64> = BTreeMap::new();
    for init in spec.init_containers.iter().flatten() {
        let requests = container_requests(init);
        if init.restart_policy.as_deref() == Some("Always") {
            // A sidecar keeps running: it adds to every later init container and to the app containers.
            add(&mut sidecars, &requests);
            max_into(&mut init_peak, &sidecars);
        } else {
            let mut during = sidecars.clone();
            add(&mut during, &requests);
            max_into(&mut init_peak, &during);
        }
    }
    add(&mut apps, &sidecars);
    max_into(&mut apps, &init_peak);
    if let Some(overhead) = &spec.overhead {
        add(&mut apps, &nvidia_counts(overhead));
    }
    apps.retain(|_, v| *v > 0);
    apps
}

fn container_requests(container: &Container) -> BTreeMap<String, u64> {
    let Some(resources) = &container.resources else {
        return BTreeMap::new();
    };
    let mut counts = resources
        .limits
        .as_ref()
        .map(nvidia_counts)
        .unwrap_or_default();
    // `requests` wins where both name a resource.
    counts.extend(
        resources
            .requests
            .as_ref()
            .map(nvidia_counts)
            .unwrap_or_default(),
    );
    counts
}

/// The accounted entries of a resource list (see [`is_accounted_request`]) as whole numbers (extended resources are integers; a
/// fraction is rounded up, the way it would block a whole device).
fn nvidia_counts(list: &BTreeMap<String, Quantity>) -> BTreeMap<String, u64> {
    list.iter()
        .filter(|(name, _)| is_accounted_request(name))
        .filter_map(|(name, q)| {
            let value = quantity_value(&q.0)?;
            (value.is_finite() && value >= 0.0).then(|| (name.clone(), value.ceil() as u64))
        })
        .collect()
}

fn max_into(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (name, value) in from {
        let slot = into.entry(name.clone()).or_default();
        *slot = (*slot).max(*value);
    }
}

/// The `Unhealthy` devices of every container, init container and ephemeral container, sorted. `Unknown`
/// (the plugin stopped reporting: [`unknown_devices`]) and `Healthy` are not kept.
fn unhealthy_devices(status: &PodStatus) -> Vec<DeviceHealth> {
    devices_reported(status, UNHEALTHY)
}

/// The devices whose health the kubelet reports `Unknown` (normal for a moment after a plugin restart; an
/// issue once it lasts the operator's grace period), sorted.
fn unknown_devices(status: &PodStatus) -> Vec<DeviceHealth> {
    devices_reported(status, UNKNOWN)
}

fn devices_reported(status: &PodStatus, health: &str) -> Vec<DeviceHealth> {
    let containers = [
        status.init_container_statuses.as_ref(),
        status.container_statuses.as_ref(),
        status.ephemeral_container_statuses.as_ref(),
    ];
    let mut unhealthy: Vec<DeviceHealth> = containers
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|c| container_devices(c, health))
        .collect();
    unhealthy.sort();
    unhealthy.dedup();
    unhealthy
}

fn container_devices(container: &ContainerStatus, health: &str) -> Vec<DeviceHealth> {
    let mut found = Vec::new();
    for status in container.allocated_resources_status.iter().flatten() {
        for device in status.resources.iter().flatten() {
            if device.health.as_deref() == Some(health) {
                found.push(DeviceHealth {
                    container: container.name.clone(),
                    resource: status.name.clone(),
                    device: device.resource_id.clone(),
                });
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::allocation::GpuPod;
    use crate::inventory::allocation::device_health::unknown_issue;
    use crate::inventory::model::IssueReason;

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn gpus(n: u32) -> serde_json::Value {
        serde_json::json!({"requests": {"nvidia.com/gpu": n.to_string()}})
    }

    fn requests(p: &Pod) -> BTreeMap<String, u64> {
        effective_requests(p.spec.as_ref().unwrap())
    }

    #[test]
    fn app_containers_add_up() {
        let p = pod(serde_json::json!({"containers": [
            {"name": "a", "resources": gpus(1)},
            {"name": "b", "resources": gpus(2)},
            {"name": "c", "resources": {"requests": {"cpu": "1"}}},
        ]}));
        assert_eq!(requests(&p), BTreeMap::from([("nvidia.com/gpu".into(), 3)]));
    }

    #[test]
    fn the_scheduler_rule_for_init_containers_and_sidecars() {
        // Naive sum: 1 + 4 + 1 + 2 = 8. The scheduler: init "setup" runs alone with the sidecar started
        // before it (1 + 4 = 5); afterwards app (2) + sidecar (1) + later sidecar (1) = 4. max(5, 4) = 5.
        let p = pod(serde_json::json!({
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": gpus(1)},
                {"name": "setup", "resources": gpus(4)},
                {"name": "logger", "restartPolicy": "Always", "resources": gpus(1)},
            ],
            "containers": [{"name": "app", "resources": gpus(2)}],
        }));
        assert_eq!(requests(&p), BTreeMap::from([("nvidia.com/gpu".into(), 5)]));
        // A small init container: the app side wins (1 + 1 + 2 = 4).
        let p = pod(serde_json::json!({
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": gpus(1)},
                {"name": "setup", "resources": gpus(1)},
                {"name": "logger", "restartPolicy": "Always", "resources": gpus(1)},
            ],
            "containers": [{"name": "app", "resources": gpus(2)}],
        }));
        assert_eq!(requests(&p), BTreeMap::from([("nvidia.com/gpu".into(), 4)]));
    }

    #[test]
    fn overhead_and_limits_only_and_other_resources() {
        let p = pod(serde_json::json!({
            "containers": [{"name": "a", "resources": {"limits": {"nvidia.com/mig-1g.10gb": "2"}}}],
            "overhead": {"nvidia.com/mig-1g.10gb": "1", "cpu": "250m"},
        }));
        assert_eq!(
            requests(&p),
            BTreeMap::from([("nvidia.com/mig-1g.10gb".into(), 3)])
        );
    }

    #[test]
    fn cpu_only_pods_are_not_kept_and_status_is_read() {
        let cpu = pod(serde_json::json!({"containers": [{"name": "a"}]}));
        assert_eq!(GpuPod::from_pod(&cpu), None);
        let mut p = pod(serde_json::json!({"containers": [{"name": "a", "resources": gpus(1)}]}));
        p.status = serde_json::from_value(serde_json::json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                            "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]
        }))
        .unwrap();
        let gpu = GpuPod::from_pod(&p).unwrap();
        assert!(gpu.is_pending_unschedulable());
        assert_eq!((gpu.namespace.as_str(), gpu.name.as_str()), ("ns", "p"));
        let done = GpuPod {
            phase: "Succeeded".into(),
            node: Some("n".into()),
            ..gpu
        };
        assert!(!done.holds_on("n") && !done.is_pending_unschedulable());
    }

    #[test]
    fn odd_quantities_never_panic() {
        let p = pod(serde_json::json!({"containers": [
            {"name": "a", "resources": {"requests": {"nvidia.com/gpu": "banana"}}},
            {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "0"}}},
            {"name": "c", "resources": {"requests": {"nvidia.com/gpu.shared": "500m"}}},
        ]}));
        assert_eq!(
            requests(&p),
            BTreeMap::from([("nvidia.com/gpu.shared".into(), 1)])
        );
    }

    #[test]
    fn only_unhealthy_devices_are_kept_from_every_kind_of_container() {
        let status: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{
                "name": "train", "image": "cuda", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [
                        { "resourceID": "GPU-b", "health": "Unhealthy" },
                        { "resourceID": "GPU-a", "health": "Healthy" },
                        { "resourceID": "GPU-c", "health": "Unknown" } ] },
                    { "name": "claim:gpus/gpu", "resources": [
                        { "resourceID": "gpu.nvidia.com/node-a/gpu-3", "health": "Unhealthy" } ] }
                ]
            }],
            "initContainerStatuses": [{
                "name": "warmup", "image": "cuda", "imageID": "", "ready": false, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [{ "resourceID": "GPU-b", "health": "Unhealthy" }] }
                ]
            }]
        }))
        .unwrap();
        let found = unhealthy_devices(&status);
        let seen: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|d| (d.container.as_str(), d.resource.as_str(), d.device.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("train", "claim:gpus/gpu", "gpu.nvidia.com/node-a/gpu-3"),
                ("train", "nvidia.com/gpu", "GPU-b"),
                ("warmup", "nvidia.com/gpu", "GPU-b"),
            ]
        );
    }

    #[test]
    fn unknown_devices_are_kept_apart_and_make_their_own_issue() {
        let status: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{
                "name": "train", "image": "cuda", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [
                        { "resourceID": "GPU-b", "health": "Unhealthy" },
                        { "resourceID": "GPU-c", "health": "Unknown" } ] }
                ]
            }]
        }))
        .unwrap();
        let unknown = unknown_devices(&status);
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].device, "GPU-c");
        let issue = unknown_issue([("ns", "p", &unknown[..])].into_iter()).unwrap();
        assert_eq!(issue.reason, IssueReason::AllocatedDeviceHealthUnknown);
        assert!(issue.reason.needs_grace());
        assert!(
            issue.message.contains("pod ns/p: nvidia.com/gpu GPU-c"),
            "{}",
            issue.message
        );
        assert_eq!(unknown_issue([("ns", "p", &[][..])].into_iter()), None);
    }
}
