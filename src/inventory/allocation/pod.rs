//! A pod as the accounting reads it: who it is, where it runs, whether the scheduler gave up on it, and the
//! scheduler's effective request of each `nvidia.com/*` resource. The pod source keeps only this
//! (`GpuPod::from_pod`, in `sources::convert`).

use crate::inventory::model::ResourceMap;
use crate::inventory::text_map::TextMap;
use std::collections::BTreeMap;

use super::device_health::DeviceHealth;
use crate::inventory::vendors::sharing_layer::PodDevice;

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
    /// The effective request per `nvidia.com/*` resource (the scheduler's rule:
    /// `sources::convert::k8s_pod::effective_requests`); empty only for a pod that names ResourceClaims.
    pub requests: ResourceMap<u64>,
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
    /// The share of one GPU a GPU-sharing scheduler's pod annotation asks for (KAI-Scheduler's
    /// `gpu-fraction`, `gpu-memory`): the pod may ask for no GPU resource at all.
    pub share: Option<PodShare>,
    /// The devices a sharing layer's pod annotation says it gave the pod (HAMi's
    /// `hami.io/vgpu-devices-allocated`), each with the MiB it holds there; empty where none says.
    pub placed: Vec<PodDevice>,
    /// The GPU group a GPU-sharing scheduler ties the pod to (KAI-Scheduler's `runai-gpu-group` label): its
    /// fraction pods and the reservation pod holding their GPU carry the same.
    pub gpu_group: Option<String>,
}

/// A share of one GPU, as a pod's annotation asks for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodShare {
    /// A fraction of the GPU, in thousandths (`gpu-fraction: "0.5"`).
    Fraction {
        /// Thousandths of a GPU.
        milli: u64,
    },
    /// MiB of its memory (`gpu-memory: "4096"`).
    MemoryMib(u64),
}

impl PodShare {
    /// The share a pod's annotations ask for, if they name a valid one: `gpu-fraction` in (0, 1], else
    /// `gpu-memory` in MiB above 0.
    pub fn from_annotations(fraction: Option<&str>, memory: Option<&str>) -> Option<PodShare> {
        let fraction = fraction
            .and_then(|f| f.trim().parse::<f64>().ok())
            .filter(|f| f.is_finite() && *f > 0.0 && *f <= 1.0)
            .map(|f| PodShare::Fraction {
                milli: ((f * 1000.0).round() as u64).max(1),
            });
        fraction.or_else(|| {
            memory
                .and_then(|m| m.trim().parse::<u64>().ok())
                .filter(|m| *m > 0)
                .map(PodShare::MemoryMib)
        })
    }
}

impl GpuPod {
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

/// Adds `from` into `into`, resource by resource.
pub(crate) fn add<'a>(
    into: &mut BTreeMap<String, u64>,
    from: impl IntoIterator<Item = (&'a String, &'a u64)>,
) {
    for (name, value) in from {
        let slot = into.entry(name.clone()).or_default();
        *slot = slot.saturating_add(*value);
    }
}
