//! The gang plan's two indexes, made once per plan and never rebuilt per attempt: the units (gangs whole,
//! wherever their pods run; single pods alone) with, per node, the units holding GPUs there; and the free
//! pieces, sorted, that moved pods are placed into (best fit, largest first), changed for one attempt and
//! restored after it.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::plan_types::{PodTraits, Unit};
use crate::inventory::model::NodeInventory;

/// The units and where they hold GPUs.
pub(super) struct Index<'n> {
    pub(super) units: Vec<Unit<'n>>,
    /// Per node, (unit, the GPUs it holds there).
    pub(super) on_node: Vec<Vec<(usize, u64)>>,
    /// Per unit, the GPUs of all its pods.
    pub(super) total: Vec<u64>,
}

/// Every pod's holding of whole GPUs, grouped into units, indexed by node.
pub(super) fn index<'n>(
    nodes: &'n [Arc<NodeInventory>],
    traits: &impl Fn(&str, &str) -> PodTraits,
) -> Index<'n> {
    // The single-node plan's grouping: gangs whole, wherever their pods run.
    let units = super::plan::units(nodes, traits);
    let mut on_node: Vec<Vec<(usize, u64)>> = vec![Vec::new(); nodes.len()];
    for (u, unit) in units.iter().enumerate() {
        for pod in &unit.pods {
            match on_node[pod.node].iter_mut().find(|(at, _)| *at == u) {
                Some((_, gpus)) => *gpus += pod.gpus,
                None => on_node[pod.node].push((u, pod.gpus)),
            }
        }
    }
    let total = units
        .iter()
        .map(|u| u.pods.iter().map(|p| p.gpus).sum())
        .collect();
    Index {
        units,
        on_node,
        total,
    }
}

/// The free GPUs of every node as sorted pieces `(free, node)`.
pub(super) struct Pieces {
    free: Vec<u64>,
    sorted: BTreeSet<(u64, usize)>,
}

impl Pieces {
    pub(super) fn new(free: Vec<u64>) -> Pieces {
        let sorted = free
            .iter()
            .enumerate()
            .filter(|(_, f)| **f > 0)
            .map(|(i, f)| (*f, i))
            .collect();
        Pieces { free, sorted }
    }

    /// The node's free GPUs, as the pieces hold them between attempts.
    pub(super) fn free(&self, node: usize) -> u64 {
        self.free[node]
    }

    /// Where each of `pods` (GPUs, the node it leaves) goes, largest first, best fit, never back to the node
    /// it leaves, once the nodes of `changed` have the free GPUs given there: (index in `pods`, node), or
    /// the index of the first pod that fits nowhere. The pieces are as they were afterwards.
    pub(super) fn place(
        &mut self,
        changed: &[(usize, u64)],
        pods: &[(u64, usize)],
    ) -> Result<Vec<(usize, usize)>, usize> {
        let mut now: HashMap<usize, u64> = HashMap::new();
        for &(node, free) in changed {
            self.set(&mut now, node, free);
        }
        let mut order: Vec<usize> = (0..pods.len()).collect();
        order.sort_by_key(|i| (std::cmp::Reverse(pods[*i].0), *i));
        let mut places = Vec::with_capacity(pods.len());
        let mut failed = None;
        for i in order {
            let (gpus, from) = pods[i];
            let found = self.sorted.range((gpus, 0)..).find(|(_, n)| *n != from);
            let Some(&(free, node)) = found else {
                failed = Some(i);
                break;
            };
            self.set(&mut now, node, free - gpus);
            places.push((i, node));
        }
        for (node, free) in now {
            if free > 0 {
                self.sorted.remove(&(free, node));
            }
            if self.free[node] > 0 {
                self.sorted.insert((self.free[node], node));
            }
        }
        failed.map_or(Ok(places), Err)
    }

    /// Sets `node`'s piece to `free` for this attempt, remembering it in `now`.
    fn set(&mut self, now: &mut HashMap<usize, u64>, node: usize, free: u64) {
        let was = now.get(&node).copied().unwrap_or(self.free[node]);
        if was > 0 {
            self.sorted.remove(&(was, node));
        }
        if free > 0 {
            self.sorted.insert((free, node));
        }
        now.insert(node, free);
    }
}
