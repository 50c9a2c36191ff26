//! Node entries shared between scans.
//!
//! The operator keeps several inventories alive at once: the status publisher's current scan and the one it
//! diffs events against, and the ConfigMap's and the GpuNode publisher's scans, each taken after a different
//! change. A change touches a few nodes, so those inventories hold almost the same entries; built afresh,
//! each would hold its own copy of every one (at 5,000 DRA nodes, ~33 MiB per inventory). The interner hands
//! out the previous scan's `Arc` for an entry equal to the new one, so unchanged nodes are held once
//! whichever inventories refer to them.
//!
//! It changes no result: an interned entry is equal to the one it replaces. Entries no inventory refers to
//! any more are forgotten after each scan.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::model::NodeInventory;

/// The latest entry of every node that some live inventory still refers to, by node name.
#[derive(Debug, Default)]
pub struct NodeInterner {
    entries: Mutex<HashMap<String, Arc<NodeInventory>>>,
}

impl NodeInterner {
    /// The shared entry equal to `entry`: the one already held if equal, else `entry` itself, which is
    /// held from now on.
    pub(crate) fn intern(&self, entry: NodeInventory) -> Arc<NodeInventory> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(held) = entries.get(&entry.name)
            && **held == entry
        {
            return held.clone();
        }
        let entry = Arc::new(entry);
        entries.insert(entry.name.clone(), entry.clone());
        entry
    }

    /// Forgets the entries that only the interner still holds (their node changed, left the scan or is
    /// held by no inventory any more).
    pub(crate) fn forget_unused(&self) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries.retain(|_, entry| Arc::strong_count(entry) > 1);
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
