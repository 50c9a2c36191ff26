//! What one scan keeps for the next: plain data, owned by whoever runs the scans (the operator's scan cache,
//! `publish::scan_cache`, one per process) and lent to each scan (`ScanInput::memory`). The rules read and
//! update it through `&mut`: no lock and no global in the core, and a scan given no memory builds everything.
//!
//! The operator keeps several inventories alive at once: the status publisher's current scan and the one it
//! diffs events against, and the ConfigMap's and the GpuNode publisher's scans, each taken after a different
//! change. A change touches a few nodes, so those inventories hold almost the same entries; built afresh,
//! each would hold its own copy of every one (at 5,000 DRA nodes, ~33 MiB per inventory). The memory hands
//! out the previous scan's `Arc` for an entry equal to the new one, so unchanged nodes are held once
//! whichever inventories refer to them.
//!
//! A scan of the caches' own `Arc`s ([`crate::inventory::ScanInput::shared`]) goes further: an entry also
//! records what it was made from (its node, the pods holding on it and the scan's scope), and the next scan
//! hands it out without building it again when those are the very same `Arc`s. At 65,000 nodes that is
//! 13,000 GPU entries a pass not built, allocated and compared. Identity is a sound test because the caches
//! replace an object's `Arc` only when it changes, and the record holds the `Arc`s it compares with, so no
//! freed object's address can come back as a false match. The same holds for what the scan derives from a
//! node alone in a scope, that it is no GPU node (at 65,000 nodes, reading every CPU node again for it was
//! most of a scan): the next scan of an unchanged node costs a lookup. What its labels add to the scope is a
//! function of the labels alone, read once when the node is made (`ClusterNode::scope_signals`).
//!
//! It changes no result: a kept or shared entry is equal to the one a fresh scan would build. What no
//! inventory refers to any more is forgotten after each scan.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

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

/// A node version found to be no GPU node (without DRA devices) in a scope. Forgotten with the version:
/// when the memory holds the last `Arc` of it.
#[derive(Debug)]
struct NoGpu {
    node: Arc<ClusterNode>,
    scope: ScopeKey,
}

/// What scans keep for the next one; see the module.
#[derive(Debug, Default)]
pub struct ScanMemory {
    /// The latest entry of every node that some live inventory still refers to, by node name.
    entries: HashMap<String, Held>,
    reused: u64,
    /// The node versions found to be no GPU node, by address (held, so never another's).
    no_gpu: HashMap<usize, NoGpu, BuildHasherDefault<AddressHasher>>,
    /// The Kueue flavors' members and the workloads' verdicts (`inventory::quotas`).
    pub(crate) quotas: crate::inventory::quotas::QuotaMemo,
    /// The idle holdings' join (`inventory::utilization`).
    pub(crate) idle: crate::inventory::utilization::IdleMemo,
    /// The entries marked `NvlinkCliqueMissing` (`inventory::topology::nvlink_health`).
    pub(crate) clique_marks: crate::inventory::topology::nvlink_health::CliqueMarks,
}

impl ScanMemory {
    /// The shared entry equal to `entry`: the one already held if equal, else `entry` itself, which is
    /// held from now on.
    #[cfg(test)]
    pub(crate) fn intern(&mut self, entry: NodeInventory) -> Arc<NodeInventory> {
        self.intern_made_from(entry, None)
    }

    /// [`ScanMemory::intern`], recording what the entry was made from (or that it is not known).
    pub(crate) fn intern_made_from(
        &mut self,
        entry: NodeInventory,
        made_from: Option<MadeFrom>,
    ) -> Arc<NodeInventory> {
        if let Some(held) = self.entries.get_mut(&entry.name)
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
        self.entries.insert(entry.name.clone(), held);
        entry
    }

    /// The entry held for `name` when it was made from this very node version, these very holders (in this
    /// order) and this scope; `None` otherwise.
    pub(crate) fn made_from(
        &mut self,
        name: &str,
        node: &Arc<ClusterNode>,
        scope: ScopeKey,
        holders: &[&Arc<GpuPod>],
    ) -> Option<Arc<NodeInventory>> {
        let held = self.entries.get(name)?;
        let reused = held
            .made_from
            .as_ref()
            .is_some_and(|made| made.is(node, scope, holders))
            .then(|| held.entry.clone());
        if reused.is_some() {
            self.reused += 1;
        }
        reused
    }

    /// Whether an earlier scan found this very node version, without DRA devices, no GPU node in `scope`.
    pub(crate) fn known_no_gpu(&self, node: &Arc<ClusterNode>, scope: ScopeKey) -> bool {
        self.no_gpu
            .get(&address(node))
            .is_some_and(|held| held.scope == scope)
    }

    /// Remembers that this node version, without DRA devices, is no GPU node in `scope`.
    pub(crate) fn remember_no_gpu(&mut self, node: &Arc<ClusterNode>, scope: ScopeKey) {
        let held = NoGpu {
            node: node.clone(),
            scope,
        };
        self.no_gpu.insert(address(node), held);
    }

    /// How many entries earlier scans' records handed out so far.
    pub fn reused(&self) -> u64 {
        self.reused
    }

    /// Forgets the entries that only the memory still holds (their node changed, left the scan or is held
    /// by no inventory any more), and what was derived from node versions the caches no longer hold.
    pub(crate) fn forget_unused(&mut self) {
        self.entries
            .retain(|_, held| Arc::strong_count(&held.entry) > 1);
        self.no_gpu
            .retain(|_, held| Arc::strong_count(&held.node) > 1);
    }

    /// How many entries are held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no entry is held.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A node version's address: a key while the memory holds its `Arc`.
fn address(node: &Arc<ClusterNode>) -> usize {
    Arc::as_ptr(node) as usize
}

/// Hashes an address by one multiplication (Fibonacci hashing): tens of thousands of lookups a scan, where
/// the std hasher's SipHash cost more than the lookup. Addresses are not chosen by anyone who could attack it.
#[derive(Default)]
struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, address: usize) {
        // The product's high bits mixed down: an aligned address's low bits are zero, and so would the
        // product's be (the table picks buckets by the low bits).
        let product = (address as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = product ^ (product >> 29);
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
        let mut memory = ScanMemory::default();
        let first = memory.intern(entry("a", true, 8, &[]));
        let again = memory.intern(entry("a", true, 8, &[]));
        assert!(Arc::ptr_eq(&first, &again), "equal entries share one Arc");

        let changed = memory.intern(entry("a", false, 8, &[]));
        assert!(!Arc::ptr_eq(&first, &changed));
        assert!(
            !changed.ready,
            "the new entry is returned, not the held one"
        );
        let after = memory.intern(entry("a", false, 8, &[]));
        assert!(
            Arc::ptr_eq(&changed, &after),
            "the changed entry is held now"
        );
    }

    #[test]
    fn entries_no_inventory_holds_are_forgotten() {
        let mut memory = ScanMemory::default();
        let kept = memory.intern(entry("kept", true, 8, &[]));
        drop(memory.intern(entry("dropped", true, 8, &[])));
        memory.forget_unused();
        assert_eq!(memory.len(), 1);
        assert!(Arc::ptr_eq(
            &kept,
            &memory.intern(entry("kept", true, 8, &[]))
        ));
        drop(kept);
        memory.forget_unused();
        assert!(memory.is_empty());
    }

    #[test]
    fn a_scan_after_one_node_changed_shares_every_other_entry_and_changes_no_result() {
        let path = format!(
            "{}/tests/fixtures/homelab-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut nodes: Vec<Node> = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
        let mut memory = ScanMemory::default();
        let before = scan(ScanInput::nodes(&read(&nodes)).memory(&mut memory));
        assert!(before.nodes.len() >= 2, "the fixture has several GPU nodes");

        let changed = before.nodes[0].name.clone();
        let node = nodes
            .iter_mut()
            .find(|n| n.metadata.name.as_deref() == Some(changed.as_str()))
            .unwrap();
        node.spec.get_or_insert_default().unschedulable = Some(true);
        let after = scan(ScanInput::nodes(&read(&nodes)).memory(&mut memory));

        assert_eq!(
            after,
            scan(ScanInput::nodes(&read(&nodes))),
            "the memory changes no result"
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
        memory.forget_unused();
        assert_eq!(
            memory.len(),
            after.nodes.len(),
            "the replaced entry is forgotten"
        );
    }
}
