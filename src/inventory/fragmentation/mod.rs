//! Fragmentation: per product, how much of the free GPUs a request of each size can use (on one node, and in
//! one domain of each topology level), and which pending pods wait only because the free GPUs are in pieces
//! (`FragmentedCapacity`). Bounded whatever the fleet: a ladder of a few sizes per product and level, and the
//! first few blocked pods (all counted).
//!
//! The measure is the gang rule's (`topology::gang::offer`): a node offers `floor(free / k) * k` of its free
//! whole GPUs to pods of `k`, nothing where it is not Ready, cordoned or tainted. A request of `g` GPUs on
//! one node can use `floor(free / g) * g` of a node's free GPUs; summed over the nodes and divided by the
//! free GPUs, that is the share a stream of such requests could take (1.0: no fragmentation for that size).

mod blocked;
mod gang_index;
pub mod gang_plan;
#[cfg(test)]
mod gang_plan_tests;
mod gang_search;
mod gang_why;
pub mod plan;
mod plan_place;
#[cfg(test)]
mod plan_tests;
mod plan_types;
mod plan_why;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use crate::inventory::model::{
    Fragmentation, LevelFragmentation, NodeInventory, ProductFragmentation, SizeUse,
    TopologySummary,
};
use crate::inventory::topology::gang::offer;

pub use blocked::{BLOCKED_LISTED, blocked_pods};

/// The one-node sizes every product's ladder holds (those no larger than its largest node; 1 always).
pub const LADDER: [u64; 4] = [1, 2, 4, 8];

/// At most this many sizes asked for by pending pods join a ladder (the largest asked for first).
pub const ASKED_SIZES: usize = 8;

/// The fragmentation of every product (`products`: `gang::product_groups` of `nodes`), with the blocked
/// pods (`blocked`: `blocked_pods`' answer, which also gives the sizes asked for per product) and the levels'
/// ladders (`topology`: the scan's topology summaries).
pub fn measure(
    nodes: &[std::sync::Arc<NodeInventory>],
    products: &[(String, Vec<usize>)],
    blocked: blocked::Blocked,
    topology: &[TopologySummary],
) -> Fragmentation {
    let products = products
        .iter()
        .map(|(name, at)| {
            let nodes: Vec<&NodeInventory> = at.iter().map(|i| nodes[*i].as_ref()).collect();
            let asked = blocked.asked.get(name).cloned().unwrap_or_default();
            product(name, &nodes, &asked, topology)
        })
        .collect();
    Fragmentation {
        products,
        blocked_pods: blocked.count,
        blocked: blocked.listed,
    }
}

/// One product's fragmentation; `asked`: the one-node sizes its pending pods ask for; `topology`: the scan's
/// topology summaries, whose levels' ladders are the product's.
pub fn product(
    name: &str,
    nodes: &[&NodeInventory],
    asked: &BTreeSet<u64>,
    topology: &[TopologySummary],
) -> ProductFragmentation {
    let pieces: Vec<u64> = nodes
        .iter()
        .map(|n| offer(n, 1, &[]))
        .filter(|f| *f > 0)
        .collect();
    let widest = nodes.iter().map(|n| n.count).max().unwrap_or(0);
    let sizes = ladder(widest, asked)
        .map(|(gpus, asked)| SizeUse {
            gpus,
            usable_gpus: usable(&pieces, gpus),
            asked,
        })
        .collect();
    ProductFragmentation {
        product: name.to_owned(),
        free_gpus: pieces.iter().fold(0, |s, p| s.saturating_add(*p)),
        largest_piece: pieces.iter().copied().max().unwrap_or(0),
        pieces: u32::try_from(pieces.len()).unwrap_or(u32::MAX),
        sizes,
        levels: levels(name, topology),
    }
}

/// The one-node sizes: the base ladder up to the widest node (1 always), and the sizes asked for (the
/// largest [`ASKED_SIZES`]), ascending, each with whether it was asked for.
fn ladder(widest: u64, asked: &BTreeSet<u64>) -> impl Iterator<Item = (u64, bool)> {
    let mut sizes: BTreeSet<u64> = LADDER
        .iter()
        .copied()
        .filter(|s| *s == 1 || *s <= widest)
        .collect();
    let asked: BTreeSet<u64> = asked.iter().rev().take(ASKED_SIZES).copied().collect();
    sizes.extend(asked.iter().copied());
    sizes.into_iter().map(move |s| (s, asked.contains(&s)))
}

/// What requests of `size` can take of `pieces`, all at once.
fn usable(pieces: &[u64], size: u64) -> u64 {
    pieces
        .iter()
        .map(|p| p.checked_div(size).map_or(0, |n| n * size))
        .fold(0, u64::saturating_add)
}

/// Per topology level of the product's nodes (not the hostname level: that is the one-node ladder), what
/// gangs of the product's pods could use: the topology summaries' ladders (`TopologySummary::usable`), whose
/// gang sizes are whole pods doubling, and 18 pods and doublings (an NVL72 rack), up to the largest domain.
/// Taken from the summaries, not counted again: they group the nodes by domain once per level.
fn levels(product: &str, topology: &[TopologySummary]) -> Vec<LevelFragmentation> {
    topology
        .iter()
        .filter(|s| s.product == product)
        .map(|s| LevelFragmentation {
            level: s.level.to_string(),
            gpus_per_pod: s.gpus_per_pod,
            largest_piece: s.largest_free_gpus,
            sizes: s.usable.clone(),
        })
        .collect()
}
