//! NVIDIA GPUs the device plugin does not advertise as `nvidia.com/gpu`: handed to virtual machines by
//! KubeVirt's sandbox device plugin (a passthrough GPU as `nvidia.com/<PCI device name>`, vGPUs as
//! `nvidia.com/<vGPU type>`), or to Windows containers by the DirectX device plugin (`microsoft.com/directx`).
//! GPU Feature Discovery and the GPU device plugin do not run on such nodes by design.

use super::resource_names::NVIDIA_RESOURCE_PREFIX as RESOURCE_PREFIX;
use crate::inventory::model::{Amount, ResourceMap, Sharing};

/// Windows' DirectX device plugin: one GPU per unit.
const DIRECTX: &str = "microsoft.com/directx";

/// What a node's VM and Windows GPU resources say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VmGpus {
    /// The product the resource names, and the resource.
    pub(crate) product: Option<(String, String)>,
    /// Physical GPUs, and how they were counted.
    pub(crate) count: Option<(u64, String)>,
    /// vGPUs: shares of a physical GPU.
    pub(crate) sharing: Option<Sharing>,
    /// Resources of which one unit is one GPU (passthrough, DirectX).
    pub(crate) device_resources: Vec<String>,
    /// What could not be told, in words.
    pub(crate) notes: Vec<String>,
}

/// Reads the resources (capacity, else allocatable: a dump may show one).
pub(crate) fn read(capacity: &ResourceMap<Amount>, allocatable: &ResourceMap<Amount>) -> VmGpus {
    let mut names: Vec<&String> = capacity.keys().chain(allocatable.keys()).collect();
    names.sort();
    names.dedup();
    let count = |name: &str| {
        capacity
            .get(name)
            .or_else(|| allocatable.get(name))
            .and_then(Amount::whole)
            .filter(|n| *n > 0)
    };
    let mut vm = VmGpus::default();
    let mut passthrough = 0;
    for name in names {
        let Some(n) = count(name) else { continue };
        if let Some(product) = passthrough_product(name) {
            passthrough = n.saturating_add(passthrough);
            vm.product.get_or_insert((product, name.clone()));
            vm.device_resources.push(name.clone());
        } else if let Some((product, gb)) = vgpu_type(name) {
            vm.product.get_or_insert((product.clone(), name.clone()));
            match gpus_under_vgpus(&product, gb, n) {
                Some((gpus, per_gpu)) => {
                    vm.count.get_or_insert((
                        gpus,
                        format!("{name}: {n} vGPUs of {gb} GB, {per_gpu} per {product}"),
                    ));
                    vm.sharing = Some(Sharing {
                        strategy: Some("vgpu".to_owned()),
                        replicas: Some(per_gpu),
                        renamed_resource: false,
                    });
                }
                None => vm.notes.push(format!(
                    "{name}: {n} vGPUs of {gb} GB; how many physical GPUs they share is unknown (the board's \
                     frame buffer is not in this version's table)"
                )),
            }
        } else if name == DIRECTX {
            vm.count.get_or_insert((n, format!("capacity {DIRECTX}")));
            vm.device_resources.push(name.clone());
        }
    }
    if passthrough > 0 {
        // Named, so that `derivedFrom.count` says which passthrough resources were summed.
        let names: Vec<&str> = vm
            .device_resources
            .iter()
            .map(String::as_str)
            .filter(|name| passthrough_product(name).is_some())
            .collect();
        vm.count = Some((
            passthrough,
            format!("passthrough GPU resources ({})", names.join(" + ")),
        ));
    }
    vm
}

/// The NVIDIA chip codes that start a PCI device name (GA102GL, TU104GL, GH100, AD102, GB202, GV100 ...):
/// `G` and a family letter, or Turing's `TU`, then three digits.
fn is_chip_code(code: &str) -> bool {
    let b = code.as_bytes();
    let family = matches!(b, [b'G', f, ..] if f.is_ascii_uppercase()) || code.starts_with("TU");
    family && b.len() >= 5 && b[2..5].iter().all(u8::is_ascii_digit)
}

/// A passthrough GPU of KubeVirt's sandbox device plugin, `nvidia.com/<chip>_<board>` (`GA102GL_A10`,
/// `TU104GL_TESLA_T4`, `GM107M_GeForce_GTX_860M`: the plugin keeps pci.ids' spelling): the product named from
/// the board part, spelled as GPU Feature Discovery spells products (`NVIDIA-A10`, `NVIDIA-TESLA-T4`).
pub(crate) fn passthrough_product(name: &str) -> Option<String> {
    let rest = name.strip_prefix(RESOURCE_PREFIX)?;
    let (chip, board) = rest.split_once('_')?;
    let plain = |c: char| c.is_ascii_alphanumeric() || c == '_';
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

/// The frame buffer of one GPU of a vGPU board, in GB (`NVIDIA-A10`: 24), if the table has the board.
pub(crate) fn board_gb(product: &str) -> Option<u64> {
    VGPU_BOARD_GB
        .iter()
        .find(|(p, _)| *p == product)
        .map(|(_, gb)| *gb)
}

/// Physical GPUs under `vgpus` vGPUs of `product` with `gb` each, when the board's frame buffer is known and
/// divides evenly: 12 x A10-4Q on 24 GB A10s are 2 GPUs (6 per GPU).
pub(crate) fn gpus_under_vgpus(product: &str, gb: u64, vgpus: u64) -> Option<(u64, u64)> {
    let board_gb = board_gb(product)?;
    let per_gpu = board_gb / gb;
    (per_gpu > 0 && board_gb.is_multiple_of(gb) && vgpus.is_multiple_of(per_gpu))
        .then(|| (vgpus / per_gpu, per_gpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> ResourceMap<Amount> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
            .collect()
    }

    #[test]
    fn vgpus_are_shares_of_the_physical_gpus() {
        let vm = read(
            &ResourceMap::new(),
            &list(&[("nvidia.com/NVIDIA_A10-4Q", "12")]),
        );
        assert_eq!(vm.count.as_ref().map(|c| c.0), Some(2));
        assert_eq!(
            vm.product.as_ref().map(|p| p.0.as_str()),
            Some("NVIDIA-A10")
        );
        assert_eq!(vm.sharing.as_ref().and_then(|s| s.replicas), Some(6));
        assert!(vm.device_resources.is_empty());
    }

    #[test]
    fn passthrough_gpus_are_devices() {
        let vm = read(
            &list(&[("nvidia.com/GA102GL_A10", "2")]),
            &ResourceMap::new(),
        );
        assert_eq!(vm.count.as_ref().map(|c| c.0), Some(2));
        assert_eq!(vm.device_resources, ["nvidia.com/GA102GL_A10"]);
        assert_eq!(vm.sharing, None);
    }

    #[test]
    fn vgpus_count_physical_gpus_only_when_the_board_is_known() {
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 4, 12), Some((2, 6)));
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 5, 12), None);
        assert_eq!(gpus_under_vgpus("NVIDIA-A10", 4, 13), None);
        assert_eq!(gpus_under_vgpus("NVIDIA-RTX-PRO-6000", 4, 12), None);
    }
}
