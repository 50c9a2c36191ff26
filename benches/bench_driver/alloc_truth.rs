//! The allocation scenario's truth: what the driver's pods make of each GPU node (nvidia.com/gpu allocated
//! and free, by the scheduler's rule: a pod holds what it requests while it is bound and not finished), and
//! the pending count, kept current as the driver changes pods.

use std::collections::BTreeMap;

use testkit::pods::{Phase, PodRec};

use crate::alloc_fleet::GpuNodeSpec;

/// What the driver's pods make of the GPU nodes.
#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub nodes: BTreeMap<String, GpuNodeSpec>,
    pub allocated: BTreeMap<String, u64>,
    /// Unbound GPU pods (all of them `Unschedulable`).
    pub pending: u64,
}

impl Expected {
    pub fn new<'a>(nodes: &[GpuNodeSpec], pods: impl IntoIterator<Item = &'a PodRec>) -> Self {
        let mut e = Expected {
            nodes: nodes.iter().map(|n| (n.name.clone(), n.clone())).collect(),
            ..Default::default()
        };
        for n in nodes {
            e.allocated.insert(n.name.clone(), 0);
        }
        for p in pods {
            e.add(p);
        }
        e
    }

    /// Counts `p` in.
    pub fn add(&mut self, p: &PodRec) {
        self.count(p, true);
    }

    /// Counts `p` out (before it changes or goes).
    pub fn remove(&mut self, p: &PodRec) {
        self.count(p, false);
    }

    fn count(&mut self, p: &PodRec, add: bool) {
        if p.gpus == 0 {
            return;
        }
        let step = |v: &mut u64, by: u64| {
            *v = if add { *v + by } else { v.saturating_sub(by) };
        };
        match (&p.node, p.phase) {
            (None, Phase::Unschedulable) => step(&mut self.pending, 1),
            (Some(node), phase) if phase.holds() => {
                if let Some(v) = self.allocated.get_mut(node) {
                    step(v, p.gpus);
                }
            }
            _ => {}
        }
    }

    pub fn allocated(&self, node: &str) -> u64 {
        self.allocated.get(node).copied().unwrap_or(0)
    }

    pub fn free(&self, node: &str) -> u64 {
        let allocatable = self.nodes.get(node).map(|n| n.allocatable).unwrap_or(0);
        allocatable.saturating_sub(self.allocated(node))
    }

    /// nvidia.com/gpu summed over the GPU nodes: allocatable, allocated, free.
    pub fn totals(&self) -> (u64, u64, u64) {
        let allocatable = self.nodes.values().map(|n| n.allocatable).sum();
        let allocated = self.allocated.values().sum();
        let free = self.nodes.keys().map(|n| self.free(n)).sum();
        (allocatable, allocated, free)
    }

    /// Free whole GPUs: free nvidia.com/gpu of every GPU node (all are Ready and none is cordoned; a taint
    /// does not count). With `mig_single_counts_as_mig`, the operator's rule: nothing on nodes labelled
    /// `nvidia.com/mig.strategy=single`, MIG enabled or not.
    pub fn free_gpus(&self, mig_single_counts_as_mig: bool) -> u64 {
        self.free_gpus_where(|_| true, mig_single_counts_as_mig)
    }

    fn free_gpus_where(&self, pick: impl Fn(&GpuNodeSpec) -> bool, rule: bool) -> u64 {
        self.nodes
            .iter()
            .filter(|(_, n)| pick(n) && !(rule && n.mig_single))
            .map(|(name, _)| self.free(name))
            .sum()
    }

    /// Per product: nodes, GPUs, free whole GPUs (as `free_gpus`).
    pub fn products(&self, mig_single_counts_as_mig: bool) -> BTreeMap<String, (u64, u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for n in self.nodes.values() {
            let e = out.entry(n.product.clone()).or_default();
            e.0 += 1;
            e.1 += n.allocatable;
        }
        for (product, e) in out.iter_mut() {
            e.2 = self.free_gpus_where(|n| &n.product == product, mig_single_counts_as_mig);
        }
        out
    }
}
