//! The node entry's described fields from their sources, in precedence order: GPU Feature Discovery (and
//! NFD) labels first, then cloud-provider labels, then the device plugin's resources. Where a value did not
//! come from its own GFD label, `derived_from` records where it came from.

use std::collections::BTreeMap;

use super::has_positive;
use super::labels::{self, LabelReader, MemoryMib};
use crate::inventory::model::{Amount, Source};

/// `derived_from`: field name -> the label or resource it was read from.
pub(super) type DerivedFrom = BTreeMap<String, String>;

/// The product: `nvidia.com/gpu.product`, else a MIG profile's product label, else the cloud label's.
pub(super) fn product(
    labels: &mut LabelReader<'_>,
    cloud: Option<(String, String)>,
    derived: &mut DerivedFrom,
) -> Option<String> {
    if let Some(product) = labels.text(labels::GPU_PRODUCT) {
        return Some(product.to_owned());
    }
    let (product, key) = super::mig_profile_product(labels).or(cloud)?;
    derived.insert("product".to_owned(), key);
    Some(product)
}

/// The GPU count: `nvidia.com/gpu.count`, else the cloud label's, else the device plugin's; 0 when unknown.
pub(super) fn count(
    labels: &mut LabelReader<'_>,
    cloud: Option<(u64, String)>,
    device_plugin: Option<(u64, String)>,
    derived: &mut DerivedFrom,
) -> u64 {
    if let Some(count) = labels.count(labels::GPU_COUNT) {
        return count;
    }
    match cloud.or(device_plugin) {
        Some((count, from)) => {
            derived.insert("count".to_owned(), from);
            count
        }
        None => 0,
    }
}

/// Memory of one GPU in MiB: `nvidia.com/gpu.memory` (bytes recognised and said so), else the cloud label's.
pub(super) fn memory_mib(
    labels: &mut LabelReader<'_>,
    cloud: Option<(MemoryMib, String)>,
    derived: &mut DerivedFrom,
) -> Option<u64> {
    if let Some(memory) = labels.memory_mib(labels::GPU_MEMORY) {
        if memory.was_bytes {
            let from = format!("{} (bytes)", labels::GPU_MEMORY);
            derived.insert("memoryMiB".to_owned(), from);
        }
        return Some(memory.mib);
    }
    let (memory, key) = cloud?;
    derived.insert("memoryMiB".to_owned(), key);
    Some(memory.mib)
}

/// What described this node, sorted: `cloud`, `device-plugin`, `labels` (DRA is added by its own source).
pub(super) fn sources(
    labels: &LabelReader<'_>,
    cloud_present: bool,
    capacity: &BTreeMap<String, Amount>,
    allocatable: &BTreeMap<String, Amount>,
) -> Vec<Source> {
    let mut sources = Vec::new();
    if cloud_present {
        sources.push(Source::Cloud);
    }
    if has_positive(capacity) || has_positive(allocatable) {
        sources.push(Source::DevicePlugin);
    }
    let nvidia_label = labels.iter().any(|(k, v)| {
        (k.starts_with(labels::NVIDIA_LABEL_PREFIX) && !v.trim().is_empty())
            || labels::is_nvidia_pci_label(k, v)
    });
    if nvidia_label {
        sources.push(Source::Labels);
    }
    sources
}
