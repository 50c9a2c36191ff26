//! Where `fit --plan`'s moved pods go (best fit, largest first, over [`Pieces`] made once per plan) and which
//! sets of units the search tries (every combination of a few, the cheapest prefixes of many): the plan's two
//! bounded loops.

use std::collections::{BTreeSet, HashMap};

use super::plan_types::Held;

/// At most this many units on one node are tried in every combination; past it, the cheapest first.
const EXHAUSTIVE_UNITS: usize = 12;

/// Every combination of `movable` (few units), or its cheapest prefixes (many).
pub(super) fn subsets(movable: &[usize]) -> Box<dyn Iterator<Item = Vec<usize>> + '_> {
    if movable.len() <= EXHAUSTIVE_UNITS {
        Box::new((1u32..(1 << movable.len())).map(move |mask| {
            (0..movable.len())
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| movable[b])
                .collect()
        }))
    } else {
        Box::new((1..=movable.len()).map(move |n| movable[..n].to_vec()))
    }
}

/// Every node's free GPUs, and the nodes with some free by how many: made once per plan, read by every
/// placement tried (a placement only overlays the few nodes it changes, so no try copies the fleet).
pub(super) struct Pieces<'f> {
    free: &'f [u64],
    by_size: BTreeSet<(u64, usize)>,
}

impl<'f> Pieces<'f> {
    /// The pieces of `free` (a node's free GPUs, by index).
    pub(super) fn of(free: &'f [u64]) -> Pieces<'f> {
        let by_size = free
            .iter()
            .enumerate()
            .filter(|(_, f)| **f > 0)
            .map(|(i, f)| (*f, i))
            .collect();
        Pieces { free, by_size }
    }

    /// A node's free GPUs.
    pub(super) fn free(&self, node: usize) -> u64 {
        self.free[node]
    }

    /// Where each of `pods` goes (index in `pods`, node), largest first, best fit, never `target`; `None`
    /// when one does not fit. The pods' own GPUs on other nodes are free for them.
    pub(super) fn place(&self, pods: &[&Held<'_>], target: usize) -> Option<Vec<(usize, usize)>> {
        // What the try changes: the moved pods' nodes (with what they free) and the nodes given pods.
        let mut changed: HashMap<usize, u64> = HashMap::new();
        for pod in pods.iter().filter(|p| p.node != target) {
            *changed.entry(pod.node).or_insert(self.free[pod.node]) += pod.gpus;
        }
        let mut order: Vec<usize> = (0..pods.len()).collect();
        order.sort_by_key(|i| std::cmp::Reverse(pods[*i].gpus));
        let mut places = Vec::with_capacity(pods.len());
        for i in order {
            let gpus = pods[i].gpus;
            let node = self.best_fit(gpus, target, &changed)?;
            let left = changed.get(&node).copied().unwrap_or(self.free[node]);
            changed.insert(node, left - gpus);
            places.push((i, node));
        }
        places.sort_by_key(|(i, _)| (std::cmp::Reverse(pods[*i].gpus), *i));
        Some(places)
    }

    /// The node whose free GPUs fit `gpus` most tightly (the fewer free, then the lower index), never
    /// `target`, reading `changed` over the fleet's pieces.
    fn best_fit(&self, gpus: u64, target: usize, changed: &HashMap<usize, u64>) -> Option<usize> {
        let unchanged = self
            .by_size
            .range((gpus, 0)..)
            .find(|(_, node)| *node != target && !changed.contains_key(node))
            .copied();
        let overlaid = changed
            .iter()
            .filter(|(node, free)| **node != target && **free >= gpus)
            .map(|(node, free)| (*free, *node))
            .min();
        unchanged
            .into_iter()
            .chain(overlaid)
            .min()
            .map(|(_, node)| node)
    }
}
