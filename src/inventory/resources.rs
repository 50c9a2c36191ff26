//! NVIDIA's extended resources by name, and a node's accelerator capacity and allocatable (every vendor's,
//! as the vendor tables say).

use crate::inventory::model::ResourceMap;

use crate::inventory::model::Amount;
use crate::inventory::text_map::TextMap;
use crate::inventory::vendors::vendor_table::Unit;
use crate::inventory::vendors::{is_read_resource, unit_of};

pub use crate::inventory::vendors::nvidia::resource_names::{
    GPU_RESOURCE, MIG_RESOURCE_PREFIX, NVIDIA_RESOURCE_PREFIX, SHARED_GPU_RESOURCE,
};

/// The accelerator entries of a resource list (every vendor's, as `vendors::is_read_resource` says), as the
/// API server printed them, each read once.
pub fn accelerator_resources(list: Option<&TextMap>) -> ResourceMap<Amount> {
    list.into_iter()
        .flat_map(TextMap::iter)
        .filter(|(name, _)| is_read_resource(name))
        .map(|(name, q)| (name.to_owned(), Amount::parse(q)))
        .collect()
}

/// Whether a pod's request of `name` is one the accounting counts: an accelerator resource of any vendor,
/// or a DeviceClass's implicit extended resource (`deviceclass.resource.kubernetes.io/<class>`, KEP-5004).
pub fn is_accounted_request(name: &str) -> bool {
    is_read_resource(name)
        || name.starts_with(crate::inventory::dra::model::IMPLICIT_EXTENDED_RESOURCE_PREFIX)
}

/// Whether a resource name is one that schedules accelerator work: a device, a share or a partition of one
/// (`nvidia.com/gpu`, `nvidia.com/gpu.shared`, `nvidia.com/mig-*`, `amd.com/gpu`, `amd.com/cpx_nps4`, a
/// vGPU), whoever makes it. Cores (`aws.amazon.com/neuroncore`) are not: they are listed, not judged.
pub fn is_gpu_resource(name: &str) -> bool {
    name == GPU_RESOURCE
        || name == SHARED_GPU_RESOURCE
        || name.starts_with(MIG_RESOURCE_PREFIX)
        || matches!(
            unit_of(name),
            Some(Unit::Device | Unit::Partition | Unit::Share)
        )
}
