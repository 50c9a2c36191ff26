//! A cluster's GPUs in a few numbers ([`summarize`]) and a fleet of them added up ([`add_up`]): pure, so the
//! operator's `ClusterProperty`, the plugin across contexts and the hub's `fleet` agree by construction.

use std::collections::BTreeMap;

use crate::inventory::Inventory;
use crate::inventory::allocation::free_whole_gpus;
use crate::inventory::model::{
    ClusterSummary, FleetProduct, FleetTotals, NVLINK, NodeInventory, ProductSummary, Severity,
};
use crate::inventory::totals::same_product_key;
use crate::inventory::vendors::vendor_of;

#[cfg(test)]
mod tests;

/// The product of GPU nodes that name none.
pub const UNKNOWN_PRODUCT: &str = "unknown";

/// Whether the node's GPUs count as unhealthy: it is not Ready, or it has an issue that loses capacity (a
/// `Degraded` one: a cordon is one, as the inventory counts it). Planned work alone (`Info`) is not.
pub fn unhealthy(node: &NodeInventory) -> bool {
    !node.ready
        || node
            .issues
            .iter()
            .any(|i| i.severity() == Severity::Degraded)
}

/// The summary of one cluster's inventory: totals, and per vendor and product (most GPUs first, then by
/// name).
pub fn summarize(inventory: &Inventory) -> ClusterSummary {
    let mut products: BTreeMap<(Option<&'static str>, String), ProductSummary> = BTreeMap::new();
    let mut summary = ClusterSummary::default();
    for node in &inventory.nodes {
        let vendor = vendor_of(node);
        let name = node.product.as_deref().unwrap_or(UNKNOWN_PRODUCT);
        let product = products
            .entry((vendor, same_product_key(name)))
            .or_insert_with(|| ProductSummary {
                vendor: vendor.map(str::to_owned),
                product: name.to_owned(),
                ..ProductSummary::default()
            });
        let free = free_whole_gpus(node);
        let lost = if unhealthy(node) { node.count } else { 0 };
        product.nodes = product.nodes.saturating_add(1);
        product.gpus = product.gpus.saturating_add(node.count);
        product.free = product.free.saturating_add(free);
        product.unhealthy = product.unhealthy.saturating_add(lost);
        product.largest_free_gang = product.largest_free_gang.max(free);
        summary.nodes = summary.nodes.saturating_add(1);
        summary.gpus = summary.gpus.saturating_add(node.count);
        summary.free = summary.free.saturating_add(free);
        summary.unhealthy = summary.unhealthy.saturating_add(lost);
    }
    let mut products: Vec<ProductSummary> = products.into_values().collect();
    // The core's product totals name a model once (the spelling DRA shows wins); the NVLink level's
    // summaries are keyed by that name.
    for product in &mut products {
        let key = same_product_key(&product.product);
        if let Some(totals) = inventory
            .products
            .iter()
            .find(|p| same_product_key(&p.name) == key && p.vendor == product.vendor.as_deref())
        {
            product.product.clone_from(&totals.name);
        }
        let nvlink = inventory
            .topology
            .iter()
            .filter(|t| t.level == NVLINK && t.product == product.product)
            .map(|t| t.largest_free_gpus)
            .max()
            .unwrap_or(0);
        product.largest_free_gang = product.largest_free_gang.max(nvlink);
    }
    products.sort_by(|a, b| b.gpus.cmp(&a.gpus).then_with(|| a.product.cmp(&b.product)));
    summary.products = products;
    summary
}

/// The fleet's totals over the clusters read, each named: per vendor and product, the sums, how many
/// clusters have it, and the largest free gang in any one of them.
pub fn add_up<'a>(
    clusters: impl IntoIterator<Item = (&'a str, &'a ClusterSummary)>,
) -> FleetTotals {
    let mut totals = FleetTotals::default();
    let mut products: BTreeMap<(Option<String>, String), FleetProduct> = BTreeMap::new();
    let mut named: Vec<(&str, &ClusterSummary)> = clusters.into_iter().collect();
    named.sort_by(|a, b| a.0.cmp(b.0));
    for (cluster, summary) in named {
        totals.clusters = totals.clusters.saturating_add(1);
        totals.nodes = totals.nodes.saturating_add(summary.nodes);
        totals.gpus = totals.gpus.saturating_add(summary.gpus);
        totals.free = totals.free.saturating_add(summary.free);
        totals.unhealthy = totals.unhealthy.saturating_add(summary.unhealthy);
        for product in &summary.products {
            let key = (product.vendor.clone(), same_product_key(&product.product));
            let fleet = products.entry(key).or_insert_with(|| FleetProduct {
                vendor: product.vendor.clone(),
                product: product.product.clone(),
                ..FleetProduct::default()
            });
            fleet.clusters = fleet.clusters.saturating_add(1);
            fleet.gpus = fleet.gpus.saturating_add(product.gpus);
            fleet.free = fleet.free.saturating_add(product.free);
            fleet.unhealthy = fleet.unhealthy.saturating_add(product.unhealthy);
            if product.largest_free_gang > fleet.largest_free_gang {
                fleet.largest_free_gang = product.largest_free_gang;
                fleet.largest_in = Some(cluster.to_owned());
            }
        }
    }
    totals.products = products.into_values().collect();
    totals
}
