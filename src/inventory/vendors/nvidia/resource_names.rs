//! The names of the extended resources NVIDIA's device plugins advertise. A leaf: the vendor table, the
//! scanner and the allocation's whole-GPU rule (`inventory::resources`) all name them.

/// Prefix of every resource the NVIDIA device plugins advertise.
pub const NVIDIA_RESOURCE_PREFIX: &str = "nvidia.com/";
/// The plain GPU resource.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The GPU resource renamed by time-slicing/MPS with `renameByDefault: true`.
pub const SHARED_GPU_RESOURCE: &str = "nvidia.com/gpu.shared";
/// Prefix of MIG resources under MIG strategy `mixed` (`nvidia.com/mig-1g.10gb`).
pub const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";
