//! The `nvidia.com/*` extended resources: their names, and a node's capacity and allocatable read from them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::inventory::model::Amount;

/// Prefix of every resource the NVIDIA device plugins advertise.
pub const NVIDIA_RESOURCE_PREFIX: &str = "nvidia.com/";
/// The plain GPU resource.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The GPU resource renamed by time-slicing/MPS with `renameByDefault: true`.
pub const SHARED_GPU_RESOURCE: &str = "nvidia.com/gpu.shared";
/// Prefix of MIG resources under MIG strategy `mixed` (`nvidia.com/mig-1g.10gb`).
pub const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";

/// The `nvidia.com/*` entries of a resource list, as the API server printed them, each read once.
pub fn nvidia_resources(list: Option<&BTreeMap<String, Quantity>>) -> BTreeMap<String, Amount> {
    list.into_iter()
        .flatten()
        .filter(|(name, _)| name.starts_with(NVIDIA_RESOURCE_PREFIX))
        .map(|(name, q)| (name.clone(), Amount::parse(q.0.as_str())))
        .collect()
}

/// Whether a pod's request of `name` is one the accounting counts: an `nvidia.com/*` resource, or a
/// DeviceClass's implicit extended resource (`deviceclass.resource.kubernetes.io/<class>`, KEP-5004).
pub fn is_accounted_request(name: &str) -> bool {
    name.starts_with(NVIDIA_RESOURCE_PREFIX)
        || name.starts_with(crate::inventory::dra::model::IMPLICIT_EXTENDED_RESOURCE_PREFIX)
}

/// Whether a resource name is one that schedules GPU work (whole, shared or MIG slices).
pub fn is_gpu_resource(name: &str) -> bool {
    name == GPU_RESOURCE || name == SHARED_GPU_RESOURCE || name.starts_with(MIG_RESOURCE_PREFIX)
}
