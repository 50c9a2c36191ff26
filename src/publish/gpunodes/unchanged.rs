//! The GPU nodes a pass found current, so that the next pass skips them without planning.
//!
//! Planning a GpuNode builds its whole desired content (the node's entry with every device) and digests it.
//! At 65,000 nodes that was 13,000 contents built per pass while a change touches a few nodes: most of a
//! pass's CPU and garbage (benches/RESULTS.md, the 65,000-node scale runs). A plan reads four things, each
//! an `Arc` its cache hands out unchanged until it changes: the node's entry (interned, see
//! `inventory::memory`), its idle holdings (`inventory::utilization::IdleMemo`), the cached node (its UID
//! and labels) and the cached GpuNode (version and digest).
//! When all four are the very `Arc`s of a pass that found nothing to write, the plan would find nothing
//! again: the writer's own record of a write (`publish::writer`) only changes with a write or with the
//! cached GpuNode, and the write gap is checked before this.

use std::collections::HashMap;
use std::sync::Arc;

use super::cache::CachedGpuNode;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::{IdleHolding, NodeInventory};

/// What one plan read.
pub(super) struct Read {
    /// The node's entry in the pass's inventory.
    pub(super) entry: Arc<NodeInventory>,
    /// Its idle holdings in the pass's inventory, if it holds any idle unit.
    pub(super) idle: Option<Arc<[IdleHolding]>>,
    /// The cached node, if the node watch holds it.
    pub(super) node: Option<Arc<ClusterNode>>,
    /// The cached GpuNode, if the GpuNode watch holds it.
    pub(super) cached: Option<Arc<CachedGpuNode>>,
}

impl Read {
    /// Whether both reads are of the same objects (the same `Arc`s, so the same versions).
    fn same(&self, other: &Read) -> bool {
        fn same_arc<T: ?Sized>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        }
        Arc::ptr_eq(&self.entry, &other.entry)
            && same_arc(&self.idle, &other.idle)
            && same_arc(&self.node, &other.node)
            && same_arc(&self.cached, &other.cached)
    }
}

/// The reads of the last pass that found nothing to write, by node name. Holding the `Arc`s keeps their
/// objects alive until the next pass, so a new object can never take an old one's address.
#[derive(Default)]
pub(super) struct Unchanged(HashMap<String, Read>);

impl Unchanged {
    /// Whether the last pass found `name` current on exactly these reads.
    pub(super) fn holds(&self, name: &str, read: &Read) -> bool {
        self.0.get(name).is_some_and(|seen| seen.same(read))
    }

    /// Remembers that `name` was found current on `read`.
    pub(super) fn remember(&mut self, name: String, read: Read) {
        self.0.insert(name, read);
    }

    /// How many nodes are remembered.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::test_support::entry;

    #[test]
    fn only_the_very_same_reads_hold() {
        let read = || Read {
            entry: Arc::new(entry("a", true, 8, &[])),
            idle: None,
            node: Some(Arc::new(ClusterNode::default())),
            cached: None,
        };
        let first = read();
        let again = Read {
            entry: first.entry.clone(),
            idle: None,
            node: first.node.clone(),
            cached: None,
        };
        let mut unchanged = Unchanged::default();
        unchanged.remember("a".into(), first);
        assert!(unchanged.holds("a", &again));
        assert!(!unchanged.holds("b", &again), "another node");
        // Equal content in a new Arc is a new version of the object: planned again.
        assert!(!unchanged.holds("a", &read()));
        // The same entry with idle holdings it did not have: planned again.
        let now_idle = Read {
            entry: again.entry.clone(),
            idle: Some(Arc::from(Vec::new())),
            node: again.node.clone(),
            cached: None,
        };
        assert!(!unchanged.holds("a", &now_idle));
        let gpunode_appeared = Read {
            cached: Some(Arc::new(CachedGpuNode {
                version: Some("1".into()),
                content: super::super::plan::GpuNodeDigest::of(&super::super::plan::desired(
                    &entry("a", true, 8, &[]),
                    &[],
                    None,
                    None,
                    &[],
                )),
            })),
            ..again
        };
        assert!(!unchanged.holds("a", &gpunode_appeared));
        assert_eq!(unchanged.len(), 1);
    }
}
