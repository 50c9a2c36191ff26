//! NVIDIA: the device plugin's `nvidia.com/*` resources, GPU Feature Discovery's labels ([`labels`]), sharing
//! and MIG ([`features`]), the clouds' NVIDIA labels ([`cloud`]), and GPUs handed to VMs and Windows
//! ([`vm_gpus`]). The scanner's NVIDIA path (`scanner::scan_node_in`, `scanner::fields`, `scanner::diagnose`)
//! puts them together, as it did before other vendors came; its results are unchanged.

pub(crate) mod cloud;
pub(crate) mod features;
pub(crate) mod labels;
pub(crate) mod vm_gpus;

use super::{Unit, VendorRules};
use crate::inventory::labels::LabelReader;
use crate::inventory::model::Vendor;

/// Prefix of every resource NVIDIA's device plugins advertise.
pub(crate) const RESOURCE_PREFIX: &str = "nvidia.com/";

pub(super) const RULES: VendorRules = VendorRules {
    vendor: Vendor::Nvidia,
    unit_of,
    labelled,
    read: None,
};

/// `nvidia.com/gpu` is a device (a share under time-slicing, which the scanner's NVIDIA path works out),
/// `gpu.shared` a share, `mig-*` a partition; KubeVirt's `nvidia.com/<PCI device name>` a passthrough device
/// and `nvidia.com/<vGPU type>` a share. Other `nvidia.com/*` resources (the network operator's RDMA and
/// SR-IOV ones) are read as before but are no devices.
fn unit_of(name: &str) -> Option<Unit> {
    let rest = name.strip_prefix(RESOURCE_PREFIX)?;
    match rest {
        "gpu" => Some(Unit::Device),
        "gpu.shared" => Some(Unit::Share),
        _ if rest.starts_with("mig-") && rest.len() > 4 => Some(Unit::Partition),
        _ if vgpu_type(name).is_some() => Some(Unit::Share),
        _ if passthrough_product(name).is_some() => Some(Unit::Device),
        _ => None,
    }
}

/// Labels GPU Feature Discovery and the GPU Operator write are the scanner's NVIDIA path's to judge (it
/// reports the node as NVIDIA's when they say so); no extra rule here.
fn labelled(_labels: &LabelReader<'_>) -> bool {
    false
}

/// The NVIDIA chip codes that start a PCI device name (GA102GL, TU104GL, GH100, AD102, GB202, GV100 ...):
/// `G` and a family letter, or Turing's `TU`, then three digits.
fn is_chip_code(code: &str) -> bool {
    let b = code.as_bytes();
    let family = matches!(b, [b'G', f, ..] if f.is_ascii_uppercase()) || code.starts_with("TU");
    family && b.len() >= 5 && b[2..5].iter().all(u8::is_ascii_digit)
}

/// A passthrough GPU of KubeVirt's sandbox device plugin, `nvidia.com/<chip>_<board>` (`GA102GL_A10`,
/// `TU104GL_TESLA_T4`): the product named from the board part, spelled as GPU Feature Discovery spells
/// products (`NVIDIA-A10`, `NVIDIA-TESLA-T4`).
pub(crate) fn passthrough_product(name: &str) -> Option<String> {
    let rest = name.strip_prefix(RESOURCE_PREFIX)?;
    let (chip, board) = rest.split_once('_')?;
    let plain = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    (is_chip_code(chip) && !board.is_empty() && board.chars().all(plain))
        .then(|| format!("NVIDIA-{}", board.replace('_', "-")))
}

/// A vGPU type of KubeVirt's sandbox device plugin, `nvidia.com/NVIDIA_A10-4Q` or `nvidia.com/GRID_T4-16Q`:
/// the physical GPU's product (`NVIDIA-A10`) and the vGPU's frame buffer in GB (`4`).
pub(crate) fn vgpu_type(name: &str) -> Option<(String, u64)> {
    let rest = name.strip_prefix(RESOURCE_PREFIX)?;
    let board = rest
        .strip_prefix("NVIDIA_")
        .or_else(|| rest.strip_prefix("GRID_"))?;
    let (gpu, profile) = board.rsplit_once('-')?;
    // `4Q`, `16Q`, `8C`, `2B`, `1A`: frame buffer in GB, then the vGPU series letter.
    let series = profile.chars().last()?;
    let gb: u64 = profile[..profile.len() - 1].parse().ok()?;
    let plain = |c: char| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_';
    (series.is_ascii_uppercase() && gb > 0 && !gpu.is_empty() && gpu.chars().all(plain))
        .then(|| (format!("NVIDIA-{}", gpu.replace('_', "-")), gb))
}

/// Frame buffer per GPU in GB of the boards vGPU runs on, to count physical GPUs from vGPUs (NVIDIA's vGPU
/// user guide lists the frame buffer per board; a board of several GPUs, such as the A16, per GPU).
const VGPU_BOARD_GB: [(&str, u64); 14] = [
    ("NVIDIA-A10", 24),
    ("NVIDIA-A16", 16),
    ("NVIDIA-A2", 16),
    ("NVIDIA-A30", 24),
    ("NVIDIA-A40", 48),
    ("NVIDIA-A100", 40),
    ("NVIDIA-A100D", 80),
    ("NVIDIA-H100", 80),
    ("NVIDIA-L4", 24),
    ("NVIDIA-L40", 48),
    ("NVIDIA-L40S", 48),
    ("NVIDIA-T4", 16),
    ("NVIDIA-V100", 16),
    ("NVIDIA-V100DX", 32),
];

/// Physical GPUs under `vgpus` vGPUs of `product` with `gb` each, when the board's frame buffer is known and
/// divides evenly: 12 x A10-4Q on 24 GB A10s are 2 GPUs (6 per GPU).
pub(crate) fn gpus_under_vgpus(product: &str, gb: u64, vgpus: u64) -> Option<(u64, u64)> {
    let (_, board_gb) = VGPU_BOARD_GB.iter().find(|(p, _)| *p == product)?;
    let per_gpu = board_gb / gb;
    (per_gpu > 0 && board_gb.is_multiple_of(gb) && vgpus.is_multiple_of(per_gpu))
        .then(|| (vgpus / per_gpu, per_gpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubevirt_resources_are_read_by_their_shape() {
        assert_eq!(
            passthrough_product("nvidia.com/GA102GL_A10").as_deref(),
            Some("NVIDIA-A10")
        );
        assert_eq!(
            passthrough_product("nvidia.com/TU104GL_TESLA_T4").as_deref(),
            Some("NVIDIA-TESLA-T4")
        );
        assert_eq!(
            vgpu_type("nvidia.com/NVIDIA_A10-4Q"),
            Some(("NVIDIA-A10".to_owned(), 4))
        );
        assert_eq!(
            vgpu_type("nvidia.com/GRID_T4-16Q"),
            Some(("NVIDIA-T4".to_owned(), 16))
        );
        for not_a_gpu in [
            "nvidia.com/rdma_shared_device_a",
            "nvidia.com/hostdev",
            "nvidia.com/mlnx_sriov_rdma",
            "nvidia.com/gpu",
            "nvidia.com/NVIDIA_A10",
        ] {
            assert_eq!(passthrough_product(not_a_gpu), None, "{not_a_gpu}");
            assert_eq!(vgpu_type(not_a_gpu), None, "{not_a_gpu}");
        }
        assert_eq!(unit_of("nvidia.com/rdma_shared_device_a"), None);
        assert_eq!(unit_of("nvidia.com/mig-1g.10gb"), Some(Unit::Partition));
        assert_eq!(unit_of("nvidia.com/NVIDIA_A10-4Q"), Some(Unit::Share));
        assert_eq!(unit_of("nvidia.com/GA102GL_A10"), Some(Unit::Device));
    }

    #[test]
    fn vgpus_count_physical_gpus_only_when_the_board_is_known() {
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 4, 12), Some((2, 6)));
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 5, 12), None);
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 4, 13), None);
        assert_eq!(gpus_under_vgpus("NVIDIA-RTX-PRO-6000", 4, 12), None);
    }
}
