//! What the nodes add up to (pure): per resource, per product, per namespace.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::inventory::allocation::{Demand, free_whole_gpus};
use crate::inventory::model::{
    Holder, JobFit, NamespaceTotals, NodeInventory, ProductTotals, ResourceMap, ResourceTotals,
};
use crate::inventory::vendors::vendor_of;

/// The job sizes `nodesWithFreeGpus` answers for: how many nodes could start a job of N GPUs.
pub(crate) const JOB_SIZES: [u32; 4] = [1, 2, 4, 8];

/// Every resource of the nodes, summed, by name.
pub(crate) fn resources(nodes: &[Arc<NodeInventory>]) -> Vec<ResourceTotals> {
    let mut sums: BTreeMap<&str, ResourceTotals> = BTreeMap::new();
    for node in nodes {
        let names = node
            .capacity
            .keys()
            .chain(node.allocatable.keys())
            .chain(node.allocated.keys());
        for name in names {
            sums.entry(name).or_insert_with(|| ResourceTotals {
                name: name.clone(),
                ..Default::default()
            });
        }
        for (name, sum) in sums.iter_mut() {
            let whole = |m: &ResourceMap<crate::inventory::model::Amount>| {
                m.get(*name).and_then(|q| q.whole()).unwrap_or(0)
            };
            let count = |m: &ResourceMap<u64>| m.get(*name).copied().unwrap_or(0);
            sum.capacity = sum.capacity.saturating_add(whole(&node.capacity));
            sum.allocatable = sum.allocatable.saturating_add(whole(&node.allocatable));
            sum.allocated = sum.allocated.saturating_add(count(&node.allocated));
            sum.free = sum.free.saturating_add(count(&node.free));
        }
    }
    sums.into_values().collect()
}

/// Whole devices free now per vendor (as the API names it; `None` for nodes no rule attributes), every
/// vendor with a GPU node listed, by name: vendors are never summed with one another.
pub(crate) fn free_by_vendor(nodes: &[Arc<NodeInventory>]) -> BTreeMap<Option<&'static str>, u64> {
    let mut free = BTreeMap::new();
    for node in nodes {
        let sum = free.entry(vendor_of(node)).or_insert(0u64);
        *sum = sum.saturating_add(free_whole_gpus(node));
    }
    free
}

/// GPUs per model, by name: nodes no source names the model of are left out.
pub(crate) fn products(nodes: &[Arc<NodeInventory>]) -> Vec<ProductTotals> {
    let mut products: BTreeMap<(Option<&'static str>, String), ProductTotals> = BTreeMap::new();
    for node in nodes {
        let Some(name) = node.product.as_deref() else {
            continue;
        };
        // Per vendor and model: two vendors' products are never summed, even under one name.
        let product = products
            .entry((vendor_of(node), same_product_key(name)))
            .or_insert_with(|| ProductTotals {
                name: name.to_owned(),
                nodes_with_free_gpus: JOB_SIZES
                    .iter()
                    .map(|&at_least| JobFit { at_least, nodes: 0 })
                    .collect(),
                ..Default::default()
            });
        // One model under the spelling DRA shows, whichever node came first.
        if node.product_from_dra {
            product.name = name.to_owned();
        }
        product.nodes = product.nodes.saturating_add(1);
        product.gpus = product.gpus.saturating_add(node.count);
        let free = free_whole_gpus(node);
        product.free_gpus = product.free_gpus.saturating_add(free);
        product.occupancy.add(node.occupancy);
        if product.vendor.is_none() {
            product.vendor = vendor_of(node);
        }
        for size in &mut product.nodes_with_free_gpus {
            if free >= u64::from(size.at_least) {
                size.nodes = size.nodes.saturating_add(1);
            }
        }
    }
    let mut list: Vec<ProductTotals> = products.into_values().collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

/// Per namespace, what its pods and claims hold on the nodes (a device shared by two claims of one namespace
/// is one device to it) and what its pending pods wait for, by name.
pub(crate) fn namespaces(nodes: &[Arc<NodeInventory>], demand: &Demand) -> Vec<NamespaceTotals> {
    let mut namespaces: BTreeMap<String, NamespaceTotals> = BTreeMap::new();
    fn entry<'m>(
        namespaces: &'m mut BTreeMap<String, NamespaceTotals>,
        name: &str,
    ) -> &'m mut NamespaceTotals {
        // Looked up before the key is made: a namespace holds many pods' holdings (one lookup a holding).
        if !namespaces.contains_key(name) {
            namespaces.insert(
                name.to_owned(),
                NamespaceTotals {
                    name: name.to_owned(),
                    ..Default::default()
                },
            );
        }
        namespaces.get_mut(name).expect("inserted above")
    }
    for node in nodes {
        let mut devices_seen: BTreeSet<(&str, &str)> = BTreeSet::new();
        for holding in &node.holdings {
            let counted = match (&holding.holder, &holding.device) {
                (Holder::Claim(claim), Some(device)) => {
                    devices_seen.insert((claim.namespace.as_str(), device.as_str()))
                }
                _ => true,
            };
            let usage = entry(&mut namespaces, holding.holder.namespace());
            if counted {
                match usage.allocated.get_mut(&holding.resource) {
                    Some(held) => *held += holding.amount,
                    None => {
                        usage
                            .allocated
                            .insert(holding.resource.clone(), holding.amount);
                    }
                }
            }
            // Each claim's part of a device they share is its own (the device is counted once above).
            if let Some(part) = holding.equivalent {
                let sum = usage.gpu_equivalents_milli.get_or_insert(0);
                *sum = sum.saturating_add(part.milli);
                // A namespace holds on a product or two: the key is made only the first time.
                let product = node.product.as_deref().unwrap_or("unknown");
                let by_product = &mut usage.gpu_equivalents_by_product;
                match by_product.get_mut(product) {
                    Some(by) => *by = by.saturating_add(part.milli),
                    None => {
                        by_product.insert(product.to_owned(), part.milli);
                    }
                }
            }
        }
    }
    for (name, (pods, wants)) in &demand.per_namespace {
        let usage = entry(&mut namespaces, name);
        usage.pending_pods = usage.pending_pods.saturating_add(*pods);
        for (resource, n) in wants {
            *usage.pending.entry(resource.clone()).or_insert(0) += n;
        }
    }
    namespaces.into_values().collect()
}

/// Products are the same model when they differ only in spaces, dashes or case: DRA writes
/// `NVIDIA A100-SXM4-80GB` where GPU Feature Discovery writes `NVIDIA-A100-SXM4-80GB`.
pub(crate) fn same_product_key(product: &str) -> String {
    product
        .trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}
