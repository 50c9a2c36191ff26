//! The fragmentation gauges: per product the largest free piece (the largest one-node request that starts
//! now) and, per size of its ladder, the free GPUs requests of that size could use; per inventory the pending
//! pods blocked only by fragmentation. Bounded as `status.fragmentation` is: a ladder of a few sizes per
//! product (1, 2, 4, 8 and at most 8 sizes pending pods ask for). The levels' ladders stay in the status:
//! they would multiply the series by the levels for what `topology_largest_free_gpus` already says.

use prometheus_client::registry::Registry;

use super::families::{InventoryGauges, InventoryLabels, ProductLabels, SizeLabels};
use crate::inventory::model::{Inventory, ProductFragmentation};

fn product_labels(inventory: &str, product: &ProductFragmentation) -> ProductLabels {
    ProductLabels {
        inventory: inventory.to_owned(),
        product: product.product.clone(),
    }
}

fn size_labels(inventory: &str, product: &ProductFragmentation, gpus: u64) -> SizeLabels {
    SizeLabels {
        inventory: inventory.to_owned(),
        product: product.product.clone(),
        gpus: gpus.to_string(),
    }
}

fn inventory_labels(inventory: &str) -> InventoryLabels {
    InventoryLabels {
        inventory: inventory.to_owned(),
    }
}

/// Registers the fragmentation families.
pub(super) fn register(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
        "fragmentation_largest_piece_gpus",
        "The most free whole GPUs of the product on one node: the largest one-node request that starts now \
         (status.fragmentation.products[].largestPiece)",
        gauges.fragmentation_largest_piece.clone(),
    );
    registry.register(
        "fragmentation_usable_gpus",
        "Free GPUs of the product that requests of `gpus` GPUs on one node could take, all at once; over the \
         free GPUs, the share usable at that size (status.fragmentation.products[].sizes[])",
        gauges.fragmentation_usable_gpus.clone(),
    );
    registry.register(
        "fragmented_pending_pods",
        "Pending GPU pods whose request fits the free GPUs in total but no node: blocked only by \
         fragmentation (FragmentedCapacity; status.fragmentation.blockedPods)",
        gauges.fragmented_pending_pods.clone(),
    );
}

/// Sets the fragmentation series of `status`.
pub(super) fn export_fragmentation(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    for product in &status.fragmentation.products {
        metrics
            .fragmentation_largest_piece
            .get_or_create(&product_labels(inventory, product))
            .set(gauge(product.largest_piece));
        for size in &product.sizes {
            metrics
                .fragmentation_usable_gpus
                .get_or_create(&size_labels(inventory, product, size.gpus))
                .set(gauge(size.usable_gpus));
        }
    }
    metrics
        .fragmented_pending_pods
        .get_or_create(&inventory_labels(inventory))
        .set(i64::from(status.fragmentation.blocked_pods));
}

/// Removes the fragmentation series `status` set.
pub(super) fn remove_fragmentation(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    for product in &status.fragmentation.products {
        metrics
            .fragmentation_largest_piece
            .remove(&product_labels(inventory, product));
        for size in &product.sizes {
            metrics
                .fragmentation_usable_gpus
                .remove(&size_labels(inventory, product, size.gpus));
        }
    }
    metrics
        .fragmented_pending_pods
        .remove(&inventory_labels(inventory));
}
