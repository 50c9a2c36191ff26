//! The gang rule, stated once: a job of G GPUs runs as pods of K GPUs each; a node offers
//! `floor(free / K) * K` of its free whole GPUs to it (`free` as `allocation::free_whole_gpus` counts it:
//! Ready, not cordoned, whole devices free, DRA devices included); a domain fits the job when what its nodes
//! offer adds up to at least G. K defaults to the product's GPUs per node: the most common `count` among its
//! nodes. Following Kueue, the referee (docs/kueue-referee.md), a node with a `NoSchedule` or `NoExecute` taint
//! the job does not tolerate offers nothing; a taint keyed by an extended resource the node advertises
//! (`nvidia.com/gpu=present:NoSchedule`, GKE's and many operators') is tolerated, as Kubernetes'
//! ExtendedResourceToleration admission tolerates it for every pod asking for that resource.

use std::collections::HashMap;
use std::sync::Arc;

use crate::inventory::allocation::free_whole_gpus;
use crate::inventory::model::NodeInventory;
use crate::inventory::totals::same_product_key;
use crate::inventory::vendors::vendor_of;

/// A toleration of the job's pods: `KEY[=VALUE][:EFFECT]` as `kubectl taint` writes a taint; `*` tolerates
/// every taint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Toleration {
    /// The taint's key; `None`: every key.
    pub key: Option<String>,
    /// The taint's value; `None`: any value.
    pub value: Option<String>,
    /// The taint's effect; `None`: any effect.
    pub effect: Option<String>,
}

impl Toleration {
    /// Parses `KEY[=VALUE][:EFFECT]` or `*`.
    pub fn parse(text: &str) -> Result<Toleration, String> {
        let text = text.trim();
        if text == "*" {
            return Ok(Toleration::default());
        }
        let (rest, effect) = match text.rsplit_once(':') {
            Some((rest, effect)) => (rest, Some(effect)),
            None => (text, None),
        };
        if let Some(effect) = effect
            && !["NoSchedule", "NoExecute", "PreferNoSchedule"].contains(&effect)
        {
            return Err(format!(
                "{text:?}: the effect {effect:?} is none of NoSchedule, NoExecute, PreferNoSchedule"
            ));
        }
        let (key, value) = match rest.split_once('=') {
            Some((key, value)) => (key, Some(value.to_owned())),
            None => (rest, None),
        };
        if key.is_empty() {
            return Err(format!(
                "{text:?}: no key (write KEY[=VALUE][:EFFECT], or * for every taint)"
            ));
        }
        Ok(Toleration {
            key: Some(key.to_owned()),
            value,
            effect: effect.map(str::to_owned),
        })
    }

    fn tolerates(&self, (key, value, effect): &(String, String, String)) -> bool {
        self.key.as_ref().is_none_or(|k| k == key)
            && self.value.as_ref().is_none_or(|v| v == value)
            && self.effect.as_ref().is_none_or(|e| e == effect)
    }
}

/// The first `NoSchedule`/`NoExecute` taint of `node` that neither `tolerations` nor the node's own
/// extended resources tolerate.
pub fn untolerated_taint<'n>(
    node: &'n NodeInventory,
    tolerations: &[Toleration],
) -> Option<&'n (String, String, String)> {
    node.blocking_taints.iter().find(|taint| {
        !node.allocatable.contains_key(&taint.0) && !tolerations.iter().any(|t| t.tolerates(taint))
    })
}

/// What a node offers to pods of `k` GPUs that tolerate `tolerations`: its free whole GPUs, rounded down to
/// whole pods; nothing where a taint keeps the pods off.
pub fn offer(node: &NodeInventory, k: u64, tolerations: &[Toleration]) -> u64 {
    if !node.blocking_taints.is_empty() && untolerated_taint(node, tolerations).is_some() {
        return 0;
    }
    let free = free_whole_gpus(node);
    free.checked_div(k).map_or(0, |pods| pods * k)
}

/// The GPUs per node most common among `nodes` (the larger on a tie; nodes counting none are left out): the
/// pods' size a job of this product is assumed to run as. `None` when no node counts a GPU.
pub fn gpus_per_node<'n>(nodes: impl IntoIterator<Item = &'n NodeInventory>) -> Option<u64> {
    // A product's nodes count a handful of distinct values: a list beats a map.
    let mut counts: Vec<(u64, u32)> = Vec::new();
    for node in nodes {
        if node.count == 0 {
            continue;
        }
        match counts.iter_mut().find(|(count, _)| *count == node.count) {
            Some((_, n)) => *n += 1,
            None => counts.push((node.count, 1)),
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

/// The GPU nodes grouped by product, by name; nodes no source names the product of are left out.
pub fn by_product(nodes: &[Arc<NodeInventory>]) -> Vec<ProductNodes<'_>> {
    product_groups(nodes)
        .into_iter()
        .map(|(name, at)| ProductNodes {
            name,
            nodes: at.iter().map(|i| nodes[*i].as_ref()).collect(),
        })
        .collect()
}

/// Per product (by name), the indices of its nodes in `nodes`: made once per scan and used for the clique
/// check and the summary alike. The product key (`same_product_key`) is made once per spelling, not once per
/// node.
pub fn product_groups(nodes: &[Arc<NodeInventory>]) -> Vec<(String, Vec<usize>)> {
    type Vendor = Option<&'static str>;
    let mut by_spelling: HashMap<(Vendor, &str), usize> = HashMap::new();
    let mut by_key: HashMap<(Vendor, String), usize> = HashMap::new();
    let mut products: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
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
                        products.push((name.to_owned(), Vec::new()));
                        products.len() - 1
                    });
                by_spelling.insert((vendor, name), at);
                at
            }
        };
        let product = &mut products[at];
        // One model under the spelling DRA shows, whichever node came first.
        if node.product_from_dra && product.0 != name {
            product.0 = name.to_owned();
        }
        product.1.push(i);
    }
    products.sort_by(|a, b| a.0.cmp(&b.0));
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
            allocatable: crate::inventory::model::ResourceMap::from_iter([(
                "nvidia.com/gpu".to_owned(),
                crate::inventory::model::Amount::from(count.to_string()),
            )]),
            free: crate::inventory::model::ResourceMap::from_iter([(
                "nvidia.com/gpu".to_owned(),
                free,
            )]),
            ..Default::default()
        }
    }

    #[test]
    fn a_node_offers_whole_pods_of_its_free_gpus_and_nothing_when_not_ready_or_cordoned() {
        assert_eq!(offer(&node(4, 3), 2, &[]), 2);
        assert_eq!(offer(&node(4, 3), 4, &[]), 0);
        assert_eq!(offer(&node(4, 4), 4, &[]), 4);
        assert_eq!(offer(&node(4, 4), 0, &[]), 0, "pods of no GPUs are no pods");
        let mut cordoned = node(4, 4);
        cordoned.unschedulable = true;
        assert_eq!(offer(&cordoned, 1, &[]), 0);
        let mut not_ready = node(4, 4);
        not_ready.ready = false;
        assert_eq!(offer(&not_ready, 1, &[]), 0);
    }

    #[test]
    fn an_untolerated_no_schedule_taint_offers_nothing_and_the_gpu_resource_s_own_taint_is_tolerated()
     {
        let taint = |key: &str, value: &str, effect: &str| {
            (key.to_owned(), value.to_owned(), effect.to_owned())
        };
        let mut reserved = node(4, 4);
        reserved.blocking_taints = vec![taint("example.com/reserved-for", "team-a", "NoSchedule")];
        assert_eq!(offer(&reserved, 4, &[]), 0);
        let team_a = Toleration::parse("example.com/reserved-for=team-a:NoSchedule").unwrap();
        assert_eq!(offer(&reserved, 4, &[team_a]), 4);
        let team_b = Toleration::parse("example.com/reserved-for=team-b").unwrap();
        assert_eq!(offer(&reserved, 4, &[team_b]), 0);
        assert_eq!(offer(&reserved, 4, &[Toleration::parse("*").unwrap()]), 4);
        let mut gke = node(4, 4);
        gke.blocking_taints = vec![taint("nvidia.com/gpu", "present", "NoSchedule")];
        assert_eq!(
            offer(&gke, 4, &[]),
            4,
            "ExtendedResourceToleration tolerates it"
        );
        assert!(Toleration::parse("k:Sometimes").is_err());
        assert!(Toleration::parse("=v").is_err());
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
