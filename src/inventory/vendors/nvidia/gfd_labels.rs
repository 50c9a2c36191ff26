//! The label keys of NVIDIA's components the scanner reads, and what they say.
//!
//! Label formats follow NVIDIA GPU Feature Discovery (GFD) and the GPU Operator, plus the PCI labels of
//! Node Feature Discovery (NFD).

/// `"true"` when GFD or the GPU Operator found an NVIDIA GPU.
pub(crate) const GPU_PRESENT: &str = "nvidia.com/gpu.present";
/// GFD's vGPU guest label: the node runs NVIDIA vGPUs.
pub(crate) const VGPU_PRESENT: &str = "nvidia.com/vgpu.present";
/// GFD's system model (`DGXH100`, `PIO-4124GS-TNR-01-NC24B`): written only on nodes it found GPUs on.
pub(crate) const GPU_MACHINE: &str = "nvidia.com/gpu.machine";
/// GFD's (or the ComputeDomain plugin's) NVLink partition: only GPUs have one.
pub(crate) const GPU_CLIQUE: &str = "nvidia.com/gpu.clique";
/// The GPU model, e.g. `NVIDIA-H100-80GB-HBM3`; `-SHARED` and `-MIG-<profile>` suffixes are GFD's.
pub(crate) const GPU_PRODUCT: &str = "nvidia.com/gpu.product";
/// Number of GPUs (MIG devices under MIG strategy `single`).
pub(crate) const GPU_COUNT: &str = "nvidia.com/gpu.count";
/// Memory of one GPU in MiB.
pub(crate) const GPU_MEMORY: &str = "nvidia.com/gpu.memory";
/// The GPU's architecture family (`hopper`, `ampere`), as GFD labels it.
pub(crate) const GPU_FAMILY: &str = "nvidia.com/gpu.family";
/// Whether the GPU supports MIG (`true`/`false`), as GFD labels it: either value says a GPU is there.
pub(crate) const MIG_CAPABLE: &str = "nvidia.com/mig.capable";
/// What the GPU Operator runs on the node: `container`, `vm-passthrough` or `vm-vgpu`.
pub(crate) const GPU_WORKLOAD_CONFIG: &str = "nvidia.com/gpu.workload.config";
/// `time-slicing`, `mps` or `none`.
pub(crate) const GPU_SHARING_STRATEGY: &str = "nvidia.com/gpu.sharing-strategy";
/// How many replicas each GPU is advertised as under sharing.
pub(crate) const GPU_REPLICAS: &str = "nvidia.com/gpu.replicas";
/// `single`, `mixed` or `none`.
pub(crate) const MIG_STRATEGY: &str = "nvidia.com/mig.strategy";
/// The mig-parted configuration requested for the node.
pub(crate) const MIG_CONFIG: &str = "nvidia.com/mig.config";
/// The MIG manager's progress: `pending`, `rebooting`, `success` or `failed`.
pub(crate) const MIG_CONFIG_STATE: &str = "nvidia.com/mig.config.state";
/// Prefix of GFD's per-profile MIG labels (`nvidia.com/mig-1g.10gb.count`).
pub(crate) const MIG_PROFILE_PREFIX: &str = "nvidia.com/mig-";
/// Prefix of NFD's PCI device labels.
pub(crate) const NFD_PCI_PREFIX: &str = "feature.node.kubernetes.io/pci-";
/// NVIDIA's PCI vendor id.
pub(crate) const NVIDIA_PCI_VENDOR: &str = "10de";

/// Whether an NFD PCI label says an NVIDIA device is present.
///
/// NFD writes `pci-<vendor>.present`, `pci-<class>_<vendor>.present` and variants with device ids; all of them
/// carry the vendor id as the last `_`-separated field before `.present`, or as the only field.
pub(crate) fn is_nvidia_pci_label(key: &str, value: &str) -> bool {
    let Some(device) = key
        .strip_prefix(NFD_PCI_PREFIX)
        .and_then(|rest| rest.strip_suffix(".present"))
    else {
        return false;
    };
    value == "true" && device.split('_').any(|part| part == NVIDIA_PCI_VENDOR)
}

/// Labels only GPU Feature Discovery writes (or, for `gpu.deploy.gpu-feature-discovery=true`, the GPU Operator
/// when it runs GFD on the node). A node carrying one shows that GFD is installed in the cluster.
pub(crate) const GFD_LABELS: [&str; 13] = [
    "nvidia.com/gfd.timestamp",
    GPU_PRODUCT,
    GPU_COUNT,
    GPU_MEMORY,
    GPU_FAMILY,
    "nvidia.com/gpu.machine",
    GPU_REPLICAS,
    GPU_SHARING_STRATEGY,
    "nvidia.com/gpu.mode",
    MIG_CAPABLE,
    MIG_STRATEGY,
    "nvidia.com/mps.capable",
    "nvidia.com/vgpu.present",
];
/// Prefixes of GFD's label families (`nvidia.com/cuda.driver.major`, `nvidia.com/mig-1g.10gb.count`, ...).
pub(crate) const GFD_LABEL_PREFIXES: [&str; 4] = [
    "nvidia.com/cuda.",
    "nvidia.com/gpu.compute.",
    MIG_PROFILE_PREFIX,
    "nvidia.com/vgpu.host-driver-",
];
/// Set by the GPU Operator on nodes where it runs GFD.
pub(crate) const GFD_DEPLOY: &str = "nvidia.com/gpu.deploy.gpu-feature-discovery";
/// A label people add by hand (`kubectl label node n nvidia.com/gpu=true`); no NVIDIA component writes it.
pub(crate) const HAND_MADE_GPU: &str = "nvidia.com/gpu";
/// The label namespace of NVIDIA's components.
pub(crate) const NVIDIA_LABEL_PREFIX: &str = "nvidia.com/";

/// Whether a label shows that GPU Feature Discovery runs in the cluster (an empty value shows nothing).
pub(crate) fn is_gfd_label(key: &str, value: &str) -> bool {
    // Every GFD label is under `nvidia.com/`: the rest are ruled out without a lookup or a trim.
    if !key.starts_with("nvidia.com/") || value.trim().is_empty() {
        return false;
    }
    if key == GFD_DEPLOY {
        return value == "true";
    }
    GFD_LABELS.contains(&key) || GFD_LABEL_PREFIXES.iter().any(|p| key.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_nvidia_pci_labels() {
        for key in [
            "feature.node.kubernetes.io/pci-10de.present",
            "feature.node.kubernetes.io/pci-0300_10de.present",
            "feature.node.kubernetes.io/pci-0302_10de.present",
            "feature.node.kubernetes.io/pci-0302_10de_20b5.present",
        ] {
            assert!(is_nvidia_pci_label(key, "true"), "{key}");
            assert!(!is_nvidia_pci_label(key, "false"), "{key}");
        }
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-15b3.present",
            "true"
        ));
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-10de.sriov.capable",
            "true"
        ));
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-110de.present",
            "true"
        ));
    }
}
