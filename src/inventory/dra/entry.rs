//! A node entry with its DRA devices: what DRA says of the node's GPUs replaces what the device plugin's
//! view says, since both describe the same GPUs (a node migrating from the device plugin to DRA is
//! counted once).

use crate::crd::GpuNodeEntry;
use crate::inventory::scanner::SOURCE_DRA;

use super::DraNode;

/// Moves the node's DRA devices into its entry: `sources` gains `dra`; `product`, `count` and `memoryMiB`
/// come from the devices when they say; `capacity`, `allocatable`, `allocated` and `free` gain the DRA
/// resources (the pods' accounting keeps them: `allocation::account_node` fills in the extended resources).
/// Moved, not copied: on thousands of nodes the device lists are most of a scan's memory.
pub fn merge(entry: &mut GpuNodeEntry, dra: DraNode) {
    entry.sources.push(SOURCE_DRA.to_owned());
    entry.sources.sort();
    entry.sources.dedup();
    if let Some(product) = &dra.product {
        entry.product = Some(product.clone());
        entry
            .derived_from
            .insert("product".to_owned(), PRODUCT_FROM_DRA.to_owned());
    }
    if dra.gpus > 0 {
        entry.count = dra.gpus;
        entry.derived_from.insert(
            "count".to_owned(),
            "DRA devices (whole GPUs and the parents of MIG devices)".to_owned(),
        );
    }
    if let Some(memory) = dra.memory_mib {
        entry.memory_mib = Some(memory);
        entry
            .derived_from
            .insert("memoryMiB".to_owned(), "DRA capacity memory".to_owned());
    }
    for (resource, n) in &dra.capacity {
        entry.capacity.insert(resource.clone(), n.to_string());
    }
    for (resource, n) in &dra.allocatable {
        entry.allocatable.insert(resource.clone(), n.to_string());
    }
    entry.allocated.extend(dra.allocated);
    entry.free.extend(dra.free);
    entry.devices = dra.devices;
}

/// Whether the entry's product is the DRA devices' `productName`.
pub fn product_from_dra(entry: &GpuNodeEntry) -> bool {
    entry.derived_from.get("product").map(String::as_str) == Some(PRODUCT_FROM_DRA)
}

const PRODUCT_FROM_DRA: &str = "DRA attribute productName";

/// (namespace, resource) for every device of the entry a claim holds, once per namespace and device (a
/// device shared by two claims of one namespace is one device to it).
pub fn holdings(entry: &GpuNodeEntry) -> Vec<(&str, &str)> {
    let mut held = Vec::new();
    for device in &entry.devices {
        let mut namespaces: Vec<&str> = device
            .allocated_to
            .iter()
            .filter_map(|claim| claim.split_once('/').map(|(ns, _)| ns))
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        held.extend(
            namespaces
                .into_iter()
                .map(|ns| (ns, device.resource.as_str())),
        );
    }
    held
}

/// Free whole GPUs of a DRA node (`<driver>/gpu` free), `None` when DRA serves no GPUs there.
pub fn free_whole_gpus(entry: &GpuNodeEntry) -> Option<u64> {
    let mut whole = entry
        .devices
        .iter()
        .filter(|d| d.resource.ends_with("/gpu"))
        .peekable();
    whole.peek()?;
    Some(whole.filter(|d| d.free).count() as u64)
}
