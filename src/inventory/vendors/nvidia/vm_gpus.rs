//! NVIDIA GPUs the device plugin does not advertise as `nvidia.com/gpu`: handed to virtual machines by
//! KubeVirt's sandbox device plugin (a passthrough GPU as `nvidia.com/<PCI device name>`, vGPUs as
//! `nvidia.com/<vGPU type>`), or to Windows containers by the DirectX device plugin (`microsoft.com/directx`).
//! GPU Feature Discovery and the GPU device plugin do not run on such nodes by design.

use std::collections::BTreeMap;

use crate::inventory::model::{Amount, Sharing};
use crate::inventory::vendors::{gpus_under_vgpus, passthrough_product, vgpu_type};

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
pub(crate) fn read(
    capacity: &BTreeMap<String, Amount>,
    allocatable: &BTreeMap<String, Amount>,
) -> VmGpus {
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
        vm.count = Some((passthrough, "passthrough GPU resources".to_owned()));
    }
    vm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Amount> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
            .collect()
    }

    #[test]
    fn vgpus_are_shares_of_the_physical_gpus() {
        let vm = read(
            &BTreeMap::new(),
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
        let vm = read(&list(&[("nvidia.com/GA102GL_A10", "2")]), &BTreeMap::new());
        assert_eq!(vm.count.as_ref().map(|c| c.0), Some(2));
        assert_eq!(vm.device_resources, ["nvidia.com/GA102GL_A10"]);
        assert_eq!(vm.sharing, None);
    }
}
