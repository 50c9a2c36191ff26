//! A node's DRA devices in its entry: what DRA says of the node's GPUs replaces what the device plugin's view
//! says, since both describe the same GPUs (a node migrating from the device plugin to DRA is counted once).

use crate::inventory::dra::DraNode;
use crate::inventory::model::{Amount, NodeInventory, Source};

/// `derivedFrom.product` of a product the DRA devices name.
pub(crate) const PRODUCT_FROM_DRA: &str = "DRA attribute productName";

/// Moves the node's DRA devices into its entry: `sources` gains `dra`; `product`, `count` and `memoryMiB`
/// come from the devices when they say; `capacity`, `allocatable`, `allocated` and `free` gain the DRA
/// resources (the pods' accounting keeps them: it fills in the extended resources). Moved, not copied: on
/// thousands of nodes the device lists are most of a scan's memory.
pub(super) fn merge(entry: &mut NodeInventory, dra: DraNode) {
    entry.sources.push(Source::Dra);
    entry.sources.sort();
    entry.sources.dedup();
    if let Some(product) = &dra.product {
        entry.product = Some(product.clone());
        entry.product_from_dra = true;
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
        entry.capacity.insert(resource.clone(), Amount::count(*n));
    }
    for (resource, n) in &dra.allocatable {
        entry
            .allocatable
            .insert(resource.clone(), Amount::count(*n));
    }
    entry.allocated.extend(dra.allocated);
    entry.free.extend(dra.free);
    entry.dra_extended = dra.extended;
    entry.still_fit = dra.still_fit;
    entry.devices = dra.devices;
}
