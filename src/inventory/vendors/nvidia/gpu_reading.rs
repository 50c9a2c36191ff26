//! How NVIDIA's table reads a node, in precedence order: GPU Feature Discovery (and NFD) labels first, then
//! cloud-provider labels, then the device plugin's and the VM GPUs' resources. Where a value did not come from
//! its own GFD label, the reading says where it came from (the entry's `derivedFrom`).

use super::gfd_labels as labels;
use super::resource_names::{GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX, SHARED_GPU_RESOURCE};
use super::{cloud, features, vm_gpus};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::Vendor;
use crate::inventory::model::{Amount, Mig, MigProfile, ResourceMap};
use crate::inventory::vendors::registered::layer_count;
use crate::inventory::vendors::vendor_table::{NodeResources, Reading, Sensed};

/// What says any node has NVIDIA GPUs before it is attributed: the hand-made label, the clouds' labels,
/// GFD's, NFD's and the GPU operator's labels, an `nvidia.com/*` resource. Read on every node (its notes too).
pub(super) fn sense(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Sensed {
    let hand_made = hand_made_gpu_label(labels);
    let cloud = cloud::read(labels);
    Sensed {
        present: is_gpu_node(labels, resources.capacity) || cloud.present || hand_made,
        cloud,
    }
}

/// Reads a node attributed to NVIDIA (or described by DRA alone).
pub(super) fn read(
    labels: &mut LabelReader<'_>,
    resources: &NodeResources<'_>,
    sensed: Option<Sensed>,
) -> Reading {
    let (capacity, allocatable) = (resources.capacity, resources.allocatable);
    let cloud = sensed.map(|s| s.cloud).unwrap_or_default();
    let vm = vm_gpus::read(capacity, allocatable);
    for note in &vm.notes {
        labels.note(note.clone());
    }
    let product = product(labels, cloud.product.or(vm.product));
    let sharing = features::sharing(labels, capacity, cloud.sharing.as_ref()).or(vm.sharing);
    let replicas = sharing.as_ref().and_then(|s| s.replicas);
    let count = labels
        .count(labels::GPU_COUNT)
        .map(|n| (n, labels::GPU_COUNT.to_owned()))
        .or(cloud.count)
        .or_else(|| {
            let plugin = device_plugin_gpus(capacity, allocatable, replicas).or(vm.count);
            match plugin {
                Some((n, _)) if n > 0 => plugin,
                // MIG resources alone (the mixed strategy, `nvidia.com/gpu: 0`): never 0 GPUs.
                _ => mig_lower_bound(capacity, allocatable)
                    // A sharing layer's count of the GPUs (Aliyun's `aliyun.com/gpu-count`).
                    .or_else(|| layer_count(Vendor::Nvidia, resources))
                    .or(plugin),
            }
        });
    let memory_mib = match labels.memory_mib(labels::GPU_MEMORY) {
        Some(memory) if memory.was_bytes => {
            Some((memory.mib, format!("{} (bytes)", labels::GPU_MEMORY)))
        }
        Some(memory) => Some((memory.mib, labels::GPU_MEMORY.to_owned())),
        None => cloud.memory.map(|(memory, key)| (memory.mib, key)),
    };
    let mut mig = features::mig(labels, product.as_ref().map(|p| p.0.as_str()), capacity);
    if let Some(size) = cloud.partition_size.as_deref()
        && mig.is_none()
    {
        mig = Some(gke_partitions(size, count.as_ref().map_or(0, |c| c.0)));
    }
    let labelled = labels.iter().any(|(k, v)| {
        (k.starts_with(labels::NVIDIA_LABEL_PREFIX) && !v.trim().is_empty())
            || labels::is_nvidia_pci_label(k, v)
    });
    Reading {
        product,
        count,
        memory_mib,
        partitions: mig,
        sharing,
        device_resources: vm.device_resources,
        labelled,
        cloud: cloud.present,
        issues: Vec::new(),
        unhealthy: Vec::new(),
        shared_gpus: Vec::new(),
    }
}

/// The product: `nvidia.com/gpu.product`, else a MIG profile's product label, else the cloud's or the VM
/// resource's (with where it came from).
fn product(
    labels: &mut LabelReader<'_>,
    other: Option<(String, String)>,
) -> Option<(String, Option<String>)> {
    if let Some(product) = labels.text(labels::GPU_PRODUCT) {
        return Some((product.to_owned(), None));
    }
    let (product, key) = mig_profile_product(labels).or(other)?;
    Some((product, Some(key)))
}

/// The count the device plugin shows when no label gives one: `nvidia.com/gpu` capacity (total registered
/// devices), else allocatable, else the renamed `nvidia.com/gpu.shared`; divided by the sharing replicas when
/// they are known and divide it (a shared GPU is advertised once per replica). `None` when none lists it.
fn device_plugin_gpus(
    capacity: &ResourceMap<Amount>,
    allocatable: &ResourceMap<Amount>,
    replicas: Option<u64>,
) -> Option<(u64, String)> {
    let whole = |v: f64| v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX);
    let (value, from) = [
        ("capacity", capacity, GPU_RESOURCE),
        ("allocatable", allocatable, GPU_RESOURCE),
        ("capacity", capacity, SHARED_GPU_RESOURCE),
    ]
    .into_iter()
    .find_map(|(field, list, resource)| {
        let value = list.get(resource)?.value()?;
        // Extended resources are whole numbers; anything else is not a count. A renamed node keeps
        // `nvidia.com/gpu: 0`, so the shared resource is read when the plain one is 0.
        (whole(value)
            && (value > 0.0
                || resource == SHARED_GPU_RESOURCE
                || !capacity.contains_key(SHARED_GPU_RESOURCE)))
        .then(|| (value as u64, format!("{field} {resource}")))
    })?;
    match replicas {
        Some(r) if r > 1 && value > 0 && value % r == 0 => {
            Some((value / r, format!("{from} / {r} replicas")))
        }
        _ => Some((value, from)),
    }
}

/// The most compute slices one GPU holds (A100, H100, H200, B200: 7; an A30 has 4, so 7 gives a lower bound
/// for every family).
const MIG_SLICES_PER_GPU: u64 = 7;

/// At least how many GPUs a node's MIG resources (`nvidia.com/mig-<N>g.<memory>`, capacity else allocatable)
/// take: their compute slices (the `<N>g` of each profile, times its count) over [`MIG_SLICES_PER_GPU`],
/// rounded up. `None` when the node advertises no MIG device.
pub(crate) fn mig_lower_bound(
    capacity: &ResourceMap<Amount>,
    allocatable: &ResourceMap<Amount>,
) -> Option<(u64, String)> {
    let list = if capacity.keys().any(|k| mig_slices(k).is_some()) {
        capacity
    } else {
        allocatable
    };
    let slices: u64 = list
        .iter()
        .filter_map(|(name, amount)| Some(mig_slices(name)? * amount.whole()?))
        .sum();
    (slices > 0).then(|| {
        (
            slices.div_ceil(MIG_SLICES_PER_GPU),
            format!(
                "at least: {slices} MIG compute slices in nvidia.com/mig-* resources, at most \
                 {MIG_SLICES_PER_GPU} per GPU"
            ),
        )
    })
}

/// The compute slices of one device of a MIG resource: the `3` of `nvidia.com/mig-3g.40gb` (or
/// `mig-1g.10gb+me`); `None` for any other resource.
fn mig_slices(resource: &str) -> Option<u64> {
    let profile = resource.strip_prefix("nvidia.com/mig-")?;
    let (slices, _) = profile.split_once("g.")?;
    slices.parse().ok().filter(|n| *n > 0)
}

/// GKE's MIG: partitions of one size advertised as `nvidia.com/gpu`, so `count` counts partitions.
fn gke_partitions(size: &str, count: u64) -> Mig {
    Mig {
        count_meaning: Some(format!(
            "count is the number of MIG partitions of size {size} (GKE gpu-partition-size), not physical GPUs"
        )),
        devices: vec![MigProfile {
            profile: size.to_owned(),
            count,
            memory_mib: None,
            resource: Some(GPU_RESOURCE.to_owned()),
        }],
        ..Default::default()
    }
}

/// The product of GFD's per-profile MIG labels (`nvidia.com/mig-7g.40gb.product`) when the node has no
/// `nvidia.com/gpu.product`: one profile's product as written, or the parent GPU several profiles share.
fn mig_profile_product(labels: &mut LabelReader<'_>) -> Option<(String, String)> {
    let keys: Vec<&str> = labels
        .iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(labels::MIG_PROFILE_PREFIX) && k.ends_with(".product"))
        .collect();
    let mut products: Vec<(&str, &str)> = keys
        .into_iter()
        .filter_map(|k| Some((labels.text(k)?, k)))
        .collect();
    products.dedup_by(|a, b| a.0 == b.0);
    let (first, key) = *products.first()?;
    if products.iter().all(|(p, _)| *p == first) {
        return Some((first.to_owned(), key.to_owned()));
    }
    let parent = |p: &str| {
        p.split_once("-MIG-")
            .map_or(p, |(parent, _)| parent)
            .to_owned()
    };
    let common = parent(first);
    products
        .iter()
        .all(|(p, _)| parent(p) == common)
        .then(|| (common, key.to_owned()))
        .or_else(|| Some((first.to_owned(), key.to_owned())))
}

/// The hand-made `nvidia.com/gpu` label: `true` (or a number) marks a GPU node; it is noted either way, since
/// no NVIDIA component writes it and it gives no count or model.
fn hand_made_gpu_label(labels: &mut LabelReader<'_>) -> bool {
    let Some(raw) = labels.get(labels::HAND_MADE_GPU) else {
        return false;
    };
    let value = raw.trim();
    let marks_gpu = value.eq_ignore_ascii_case("true") || value.parse::<u64>().is_ok_and(|n| n > 0);
    let shown: String = value.chars().take(64).collect();
    labels.note(if marks_gpu {
        format!(
            "label {}={shown} is hand-made (no NVIDIA component writes it): read as \"has a GPU\", it gives no count or model",
            labels::HAND_MADE_GPU
        )
    } else {
        format!(
            "label {}={shown:?} is hand-made (no NVIDIA component writes it) and says nothing usable; ignored",
            labels::HAND_MADE_GPU
        )
    });
    marks_gpu
}

/// Whether a label is there with a value (an empty label counts as absent).
fn has_value(labels: &LabelReader<'_>, key: &str) -> bool {
    labels.get(key).is_some_and(|v| !v.trim().is_empty())
}

/// GFD's per-profile MIG labels (`nvidia.com/mig-1g.10gb.count` above 0, `.product`) exist only on GPU nodes.
fn is_mig_profile_evidence(key: &str, value: &str) -> bool {
    let Some(rest) = key.strip_prefix(labels::MIG_PROFILE_PREFIX) else {
        return false;
    };
    let value = value.trim();
    (rest.ends_with(".count") && value.parse::<u64>().is_ok_and(|n| n > 0))
        || (rest.ends_with(".product") && !value.is_empty())
}

/// Any one signal makes a GPU node, even alone (an unknown model is "unknown", not "no GPU"):
/// `gpu.present=false` alone makes nothing.
fn is_gpu_node(labels: &LabelReader<'_>, nvidia_capacity: &ResourceMap<Amount>) -> bool {
    labels.get(labels::GPU_PRESENT) == Some("true")
        || labels.get(labels::VGPU_PRESENT) == Some("true")
        || has_value(labels, labels::GPU_MACHINE)
        || has_value(labels, labels::GPU_CLIQUE)
        || has_value(labels, labels::GPU_PRODUCT)
        || has_value(labels, labels::GPU_COUNT)
        || has_value(labels, labels::GPU_WORKLOAD_CONFIG)
        // GPU Feature Discovery's labels of a GPU whose product and count labels are missing.
        || has_value(labels, labels::GPU_FAMILY)
        || has_value(labels, labels::MIG_CAPABLE)
        || has_value(labels, labels::GPU_MEMORY)
        // One pass over the labels for those found by their shape (every node of a fleet takes it).
        || labels.iter().any(|(k, v)| {
            labels::is_nvidia_pci_label(k, v)
                || is_mig_profile_evidence(k, v)
                // The MIG manager's labels: the GPU operator runs it only on nodes with MIG-capable GPUs,
                // and it labels them before the device plugin registers (GPU Operator docs, "GPU Operator
                // with MIG").
                || ((k == labels::MIG_CONFIG_STATE || k == labels::MIG_CONFIG) && !v.trim().is_empty())
        })
        || nvidia_capacity
            .iter()
            .any(|(name, q)| name.starts_with(NVIDIA_RESOURCE_PREFIX) && q.is_positive())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amounts(pairs: &[(&str, &str)]) -> ResourceMap<Amount> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
            .collect()
    }

    #[test]
    fn mig_resources_alone_count_at_least_their_slices_over_seven() {
        // cocalc#8161: 5 x 1g.5gb + 1 x 2g.10gb on one A100-40GB, 7 slices.
        let cocalc = amounts(&[
            ("nvidia.com/gpu", "0"),
            ("nvidia.com/mig-1g.5gb", "5"),
            ("nvidia.com/mig-2g.10gb", "1"),
            ("nvidia.com/mig-3g.20gb", "0"),
        ]);
        let (n, from) = mig_lower_bound(&cocalc, &ResourceMap::new()).unwrap();
        assert_eq!(n, 1);
        assert!(from.starts_with("at least: 7 MIG compute slices"), "{from}");
        // 14 slices (gpu-operator#637): at least 2; 8 slices: at least 2 (never rounded down).
        let two = amounts(&[
            ("nvidia.com/mig-1g.10gb", "6"),
            ("nvidia.com/mig-2g.20gb", "4"),
        ]);
        assert_eq!(mig_lower_bound(&two, &ResourceMap::new()).unwrap().0, 2);
        let eight = amounts(&[
            ("nvidia.com/mig-1g.10gb+me", "1"),
            ("nvidia.com/mig-7g.80gb", "1"),
        ]);
        assert_eq!(mig_lower_bound(&eight, &ResourceMap::new()).unwrap().0, 2);
        // Allocatable when capacity has none; nothing when no MIG device is advertised.
        assert_eq!(mig_lower_bound(&ResourceMap::new(), &cocalc).unwrap().0, 1);
        let none = amounts(&[("nvidia.com/gpu", "0"), ("nvidia.com/mig-3g.20gb", "0")]);
        assert_eq!(mig_lower_bound(&none, &ResourceMap::new()), None);
        assert_eq!(mig_slices("nvidia.com/gpu.shared"), None);
        assert_eq!(mig_slices("nvidia.com/mig-abc"), None);
    }
}
