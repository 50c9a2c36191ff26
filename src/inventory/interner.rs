//! Node entries shared between scans, and reused when made from the very same objects.
//!
//! The operator keeps several inventories alive at once: the status publisher's current scan and the one it
//! diffs events against, and the ConfigMap's and the GpuNode publisher's scans, each taken after a different
//! change. A change touches a few nodes, so those inventories hold almost the same entries; built afresh,
//! each would hold its own copy of every one (at 5,000 DRA nodes, ~33 MiB per inventory). The interner hands
//! out the previous scan's `Arc` for an entry equal to the new one, so unchanged nodes are held once
//! whichever inventories refer to them.
//!
//! A scan of the caches' own `Arc`s ([`crate::inventory::ScanInput::shared`]) goes further: an entry also
//! records what it was made from (its node, the pods holding on it and the scan's scope), and the next scan
//! hands it out without building it again when those are the very same `Arc`s. At 65,000 nodes that is
//! 13,000 GPU entries a pass not built, allocated and compared. Identity is a sound test because the caches
//! replace an object's `Arc` only when it changes, and the record holds the `Arc`s it compares with, so no
//! freed object's address can come back as a false match.
//!
//! It changes no result: an interned or reused entry is equal to the one a fresh scan would build. Entries no
//! inventory refers to any more are forgotten after each scan.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::allocation::GpuPod;
use super::cluster_node::{ClusterNode, ScopeKey};
use super::model::NodeInventory;

/// What a complete entry (holdings placed) was made from, by identity. Only an entry that nothing else
/// shaped is recorded: a node without DRA devices whose pods' requests no DRA claim meets.
#[derive(Debug)]
pub(crate) struct MadeFrom {
    /// The node's version.
    pub(crate) node: Arc<ClusterNode>,
    /// The pods holding on it, in the scan's order.
    pub(crate) holders: Vec<Arc<GpuPod>>,
    /// The scan's scope (`ScanScope::key`).
    pub(crate) scope: ScopeKey,
}

impl MadeFrom {
    fn is(&self, node: &Arc<ClusterNode>, scope: ScopeKey, holders: &[&Arc<GpuPod>]) -> bool {
        Arc::ptr_eq(&self.node, node)
            && self.scope == scope
            && self.holders.len() == holders.len()
            && self
                .holders
                .iter()
                .zip(holders)
                .all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// An entry held, and what it was made from when known.
#[derive(Debug)]
struct Held {
    entry: Arc<NodeInventory>,
    made_from: Option<MadeFrom>,
}

/// The latest entry of every node that some live inventory still refers to, by node name.
#[derive(Debug, Default)]
pub struct NodeInterner {
    entries: Mutex<HashMap<String, Held>>,
    reused: AtomicU64,
    /// The Kueue flavors' members and the workloads' verdicts, kept between this scanner's scans
    /// (`inventory::quotas`).
    pub(crate) quotas: crate::inventory::quotas::QuotaMemo,
    /// The idle holdings' join, kept between scans (`inventory::utilization`).
    pub(crate) idle: crate::inventory::utilization::IdleMemo,
    /// The entries marked `NvlinkCliqueMissing`, kept between scans (`inventory::topology::nvlink_health`).
    pub(crate) clique_marks: crate::inventory::topology::nvlink_health::CliqueMarks,
}

impl NodeInterner {
    /// The shared entry equal to `entry`: the one already held if equal, else `entry` itself, which is
    /// held from now on.
    #[cfg(test)]
    pub(crate) fn intern(&self, entry: NodeInventory) -> Arc<NodeInventory> {
        self.intern_made_from(entry, None)
    }

    /// [`NodeInterner::intern`], recording what the entry was made from (or that it is not known).
    pub(crate) fn intern_made_from(
        &self,
        entry: NodeInventory,
        made_from: Option<MadeFrom>,
    ) -> Arc<NodeInventory> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = entries.get_mut(&entry.name)
            && *held.entry == entry
        {
            held.made_from = made_from;
            return held.entry.clone();
        }
        let entry = Arc::new(entry);
        let held = Held {
            entry: entry.clone(),
            made_from,
        };
        entries.insert(entry.name.clone(), held);
        entry
    }

    /// The entry held for `name` when it was made from this very node version, these very holders (in this
    /// order) and this scope; `None` otherwise.
    pub(crate) fn made_from(
        &self,
        name: &str,
        node: &Arc<ClusterNode>,
        scope: ScopeKey,
        holders: &[&Arc<GpuPod>],
    ) -> Option<Arc<NodeInventory>> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let held = entries.get(name)?;
        let reused = held
            .made_from
            .as_ref()
            .is_some_and(|made| made.is(node, scope, holders))
            .then(|| held.entry.clone());
        if reused.is_some() {
            self.reused.fetch_add(1, Ordering::Relaxed);
        }
        reused
    }

    /// How many entries [`NodeInterner::made_from`] has handed out so far.
    pub(crate) fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// Forgets the entries that only the interner still holds (their node changed, left the scan or is
    /// held by no inventory any more).
    pub(crate) fn forget_unused(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, held| Arc::strong_count(&held.entry) > 1);
    }

    /// How many entries are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no entry is held.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use crate::inventory::test_support::read;
    use k8s_openapi::api::core::v1::Node;

    use super::*;
    use crate::inventory::test_support::entry;
    use crate::inventory::{ScanInput, scan};
    use crate::sources::dump::parse_node_dump;

    #[test]
    fn an_equal_entry_is_shared_and_a_changed_one_replaces_it() {
        let interner = NodeInterner::default();
        let first = interner.intern(entry("a", true, 8, &[]));
        let again = interner.intern(entry("a", true, 8, &[]));
        assert!(Arc::ptr_eq(&first, &again), "equal entries share one Arc");

        let changed = interner.intern(entry("a", false, 8, &[]));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(
            !changed.ready,
            "the new entry is returned, not the held one"
        );
        let after = interner.intern(entry("a", false, 8, &[]));
        assert!(
            Arc::ptr_eq(&changed, &after),
            "the changed entry is held now"
        );
    }

    #[test]
    fn entries_no_inventory_holds_are_forgotten() {
        let interner = NodeInterner::default();
        let kept = interner.intern(entry("kept", true, 8, &[]));
        drop(interner.intern(entry("dropped", true, 8, &[])));
        interner.forget_unused();
        assert_eq!(interner.len(), 1);
        assert!(Arc::ptr_eq(
            &kept,
            &interner.intern(entry("kept", true, 8, &[]))
        ));
        drop(kept);
        interner.forget_unused();
        assert!(interner.is_empty());
    }

    #[test]
    fn a_scan_after_one_node_changed_shares_every_other_entry_and_changes_no_result() {
        let path = format!(
            "{}/tests/fixtures/homelab-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut nodes: Vec<Node> = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
        let interner = NodeInterner::default();
        let before = scan(ScanInput::nodes(&read(&nodes)).interner(&interner));
        assert!(before.nodes.len() >= 2, "the fixture has several GPU nodes");

        let changed = before.nodes[0].name.clone();
        let node = nodes
            .iter_mut()
            .find(|n| n.metadata.name.as_deref() == Some(changed.as_str()))
            .unwrap();
        node.spec.get_or_insert_default().unschedulable = Some(true);
        let after = scan(ScanInput::nodes(&read(&nodes)).interner(&interner));

        assert_eq!(
            after,
            scan(ScanInput::nodes(&read(&nodes))),
            "interning changes no result"
        );
        for (old, new) in before.nodes.iter().zip(&after.nodes) {
            assert_eq!(
                Arc::ptr_eq(old, new),
                old.name != changed,
                "{}: only the changed node has a new entry",
                old.name
            );
        }
        drop(before);
        interner.forget_unused();
        assert_eq!(
            interner.len(),
            after.nodes.len(),
            "the replaced entry is forgotten"
        );
    }
}
