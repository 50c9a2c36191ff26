//! A pod as the accounting reads it: who it is, where it runs, whether the scheduler gave up on it, and the
//! scheduler's effective request of each `nvidia.com/*` resource. The pod source keeps only this.

use crate::inventory::text_map::TextMap;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::device_health::{DeviceHealth, unhealthy_devices, unknown_devices};
use crate::inventory::model::quantity_value;
use crate::inventory::resources::is_accounted_request;

/// A pod that asks for at least one `nvidia.com/*` resource or names a ResourceClaim, stripped to what the
/// accounting needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuPod {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.nodeName`: where the scheduler (or whoever) bound it.
    pub node: Option<String>,
    /// `status.phase` (`Pending` when absent).
    pub phase: String,
    /// `PodScheduled` is `False` with reason `Unschedulable`: the scheduler tried and found no node.
    pub unschedulable: bool,
    /// The effective request per `nvidia.com/*` resource (see [`effective_requests`]); empty only for a pod
    /// that names ResourceClaims.
    pub requests: BTreeMap<String, u64>,
    /// The ResourceClaims (in the pod's namespace) the pod uses: `spec.resourceClaims[].resourceClaimName`,
    /// and for claims made from a template the name the claim controller recorded in
    /// `status.resourceClaimStatuses`. Sorted. Whether they ask for GPUs is the DRA accounting's question.
    pub claims: Vec<String>,
    /// `spec.nodeSelector` of a pod not bound yet (which nodes it waits for); empty once bound.
    pub node_selector: BTreeMap<String, String>,
    /// `status.extendedResourceClaimStatus.resourceClaimName`: the claim the scheduler made for the pod's
    /// extended-resource requests that DRA serves (KEP-5004); those requests are counted by its devices.
    pub extended_claim: Option<String>,
    /// Allocated devices the kubelet reports not healthy (`allocatedResourcesStatus`, KEP-4680), sorted.
    pub unhealthy_devices: Vec<DeviceHealth>,
    /// Allocated devices whose health the kubelet reports `Unknown`, sorted.
    pub unknown_devices: Vec<DeviceHealth>,
}

impl GpuPod {
    /// The pod's accounting view, or `None` when it asks for no `nvidia.com/*` resource and names no
    /// ResourceClaim.
    pub fn from_pod(pod: &Pod) -> Option<GpuPod> {
        let requests = effective_requests(pod.spec.as_ref()?);
        let claims = claim_names(pod);
        if requests.is_empty() && claims.is_empty() {
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
            requests,
            claims,
            extended_claim,
            unhealthy_devices: status.map(unhealthy_devices).unwrap_or_default(),
            unknown_devices: status.map(unknown_devices).unwrap_or_default(),
        })
    }

    /// Finished pods (`Succeeded`, `Failed`) hold nothing.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase.as_str(), "Succeeded" | "Failed")
    }

    /// Holds its requests on `node`: bound there and not finished (the scheduler's rule).
    pub fn holds_on(&self, node: &str) -> bool {
        self.node.as_deref() == Some(node) && !self.is_finished()
    }

    /// Waits for GPUs: not bound, not finished, and the scheduler said no node fits.
    pub fn is_pending_unschedulable(&self) -> bool {
        self.node.is_none() && !self.is_finished() && self.unschedulable
    }

    /// Whether a node with these labels is one this pod asks for (`spec.nodeSelector`; node affinity is not
    /// evaluated).
    pub fn selects(&self, labels: Option<&TextMap>) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v.as_str()))
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

/// Adds `from` into `into`, resource by resource.
pub(super) fn add(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (name, value) in from {
        let slot = into.entry(name.clone()).or_default();
        *slot = slot.saturating_add(*value);
    }
}

fn max_into(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (name, value) in from {
        let slot = into.entry(name.clone()).or_default();
        *slot = (*slot).max(*value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
