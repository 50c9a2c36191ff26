//! The gang rule, stated once: a job of G GPUs runs as pods of K GPUs each; a node offers
//! `floor(free / K) * K` of its free whole GPUs to it (`free` as `allocation::free_whole_gpus` counts it:
//! Ready, not cordoned, whole devices free, DRA devices included); a domain fits the job when what its nodes
//! offer adds up to at least G. K defaults to the product's GPUs per node: the most common `count` among its
//! nodes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::inventory::allocation::free_whole_gpus;
use crate::inventory::model::NodeInventory;
use crate::inventory::totals::same_product_key;
use crate::inventory::vendors::vendor_of;

/// What a node offers to pods of `k` GPUs: its free whole GPUs, rounded down to whole pods.
pub fn offer(node: &NodeInventory, k: u64) -> u64 {
    let free = free_whole_gpus(node);
    free.checked_div(k).map_or(0, |pods| pods * k)
}

/// The GPUs per node most common among `nodes` (the larger on a tie; nodes counting none are left out): the
/// pods' size a job of this product is assumed to run as. `None` when no node counts a GPU.
pub fn gpus_per_node<'n>(nodes: impl IntoIterator<Item = &'n NodeInventory>) -> Option<u64> {
    let mut counts: BTreeMap<u64, u32> = BTreeMap::new();
    for node in nodes {
        if node.count > 0 {
            *counts.entry(node.count).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|&(count, nodes)| (nodes, count))
        .map(|(count, _)| count)
}

/// The nodes of one product (of one vendor: two vendors' products are never summed, even under one name).
pub struct ProductNodes<'n> {
    /// The product as `products[]` names it (DRA's spelling where a node shows it).
    pub name: String,
    /// Its nodes, by name.
    pub nodes: Vec<&'n NodeInventory>,
}

/// The GPU nodes grouped by product, by name; nodes no source names the product of are left out. The
/// product key (`same_product_key`) is made once per spelling, not once per node.
pub fn by_product(nodes: &[Arc<NodeInventory>]) -> Vec<ProductNodes<'_>> {
    type Vendor = Option<&'static str>;
    let mut by_spelling: HashMap<(Vendor, &str), usize> = HashMap::new();
    let mut by_key: HashMap<(Vendor, String), usize> = HashMap::new();
    let mut products: Vec<ProductNodes<'_>> = Vec::new();
    for node in nodes {
        let Some(name) = node.product.as_deref() else {
            continue;
        };
        let vendor = vendor_of(node);
        let at = match by_spelling.get(&(vendor, name)) {
            Some(at) => *at,
            None => {
                let at = *by_key
                    .entry((vendor, same_product_key(name)))
                    .or_insert_with(|| {
                        products.push(ProductNodes {
                            name: name.to_owned(),
                            nodes: Vec::new(),
                        });
                        products.len() - 1
                    });
                by_spelling.insert((vendor, name), at);
                at
            }
        };
        let product = &mut products[at];
        // One model under the spelling DRA shows, whichever node came first.
        if node.product_from_dra && product.name != name {
            product.name = name.to_owned();
        }
        product.nodes.push(node);
    }
    products.sort_by(|a, b| a.name.cmp(&b.name));
    products
}

/// Whether `name` names this product (as `products[]` does, or differing only in spaces, dashes or case).
pub fn names_product(product: &ProductNodes<'_>, name: &str) -> bool {
    same_product_key(&product.name) == same_product_key(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(count: u64, free: u64) -> NodeInventory {
        NodeInventory {
            name: format!("n-{count}-{free}"),
            ready: true,
            count,
            allocatable: [(
                "nvidia.com/gpu".to_owned(),
                crate::inventory::model::Amount::from(count.to_string()),
            )]
            .into(),
            free: [("nvidia.com/gpu".to_owned(), free)].into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_node_offers_whole_pods_of_its_free_gpus_and_nothing_when_not_ready_or_cordoned() {
        assert_eq!(offer(&node(4, 3), 2), 2);
        assert_eq!(offer(&node(4, 3), 4), 0);
        assert_eq!(offer(&node(4, 4), 4), 4);
        assert_eq!(offer(&node(4, 4), 0), 0, "pods of no GPUs are no pods");
        let mut cordoned = node(4, 4);
        cordoned.unschedulable = true;
        assert_eq!(offer(&cordoned, 1), 0);
        let mut not_ready = node(4, 4);
        not_ready.ready = false;
        assert_eq!(offer(&not_ready, 1), 0);
    }

    #[test]
    fn the_pods_size_is_the_most_common_count_and_the_larger_on_a_tie() {
        let nodes = [node(4, 0), node(4, 0), node(8, 0), node(0, 0)];
        assert_eq!(gpus_per_node(&nodes), Some(4));
        let tie = [node(4, 0), node(8, 0)];
        assert_eq!(gpus_per_node(&tie), Some(8));
        assert_eq!(gpus_per_node(&[node(0, 0)]), None);
    }
}
