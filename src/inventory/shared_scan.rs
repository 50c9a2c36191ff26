//! One scan per coalesced change and selector, shared by every publisher that asks for it.
//!
//! The status publisher (one reconcile per GpuInventory) and the ConfigMap publisher used to scan the same
//! nodes separately after every change. Scans are remembered by (change version, selector): the second
//! publisher to ask after a change gets the first one's result. Only the newest version is kept, so memory
//! holds at most one inventory per distinct selector, and entries of nodes that did not change between
//! scans are held once (the memo's [`NodeInterner`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::inventory::selector::LabelSelector;

use super::interner::NodeInterner;
use super::model::Inventory;

/// What a scan is as new as: the sources' change version, then the operator's grace epoch (bumped when an
/// issue held back for a grace period falls due, so the next pass scans again with no change).
pub(crate) type ScanVersion = (u64, u64);

/// The memo. Pure apart from its lock: no I/O, no clock.
#[derive(Debug, Default)]
pub(crate) struct SharedScans {
    scans: Mutex<HashMap<String, (ScanVersion, Arc<Inventory>)>>,
    computed: std::sync::atomic::AtomicU64,
    interner: NodeInterner,
}

impl SharedScans {
    /// The inventory of what `selector` picks at change `version`; `scan` is called only when no scan of
    /// that version and selector exists yet, and must scan objects at least as new as `version`, sharing
    /// entries through the interner it is given.
    pub(crate) fn inventory(
        &self,
        version: ScanVersion,
        selector: &LabelSelector,
        scan: impl FnOnce(&LabelSelector, &NodeInterner) -> Inventory,
    ) -> Arc<Inventory> {
        let key = selector.to_string();
        let mut scans = self.scans.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((at, inventory)) = scans.get(&key)
            && *at == version
        {
            return inventory.clone();
        }
        // Scanning under the lock: a second publisher asking for the same scan waits for it instead of
        // repeating it.
        let inventory = Arc::new(scan(selector, &self.interner));
        self.computed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        scans.retain(|_, (at, _)| *at >= version);
        scans.insert(key, (version, inventory.clone()));
        inventory
    }

    /// How many GPU node entries scans took from earlier ones without building them (see
    /// [`NodeInterner`]).
    pub(crate) fn entries_reused(&self) -> u64 {
        self.interner.reused()
    }

    /// How many scans were computed (not served from the memo) so far.
    pub(crate) fn computed(&self) -> u64 {
        self.computed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use crate::inventory::test_support::read;
    use k8s_openapi::api::core::v1::Node;

    use super::*;

    use crate::inventory::selector::parse_selector;
    use crate::inventory::{ScanInput, scan};
    use crate::sources::dump::parse_node_dump;

    fn cluster(selector: &LabelSelector, interner: &NodeInterner) -> Inventory {
        let path = format!(
            "{}/tests/fixtures/homelab-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let nodes: Vec<Node> = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
        scan(
            ScanInput::nodes(&read(&nodes))
                .selector(selector)
                .interner(interner),
        )
    }

    #[test]
    fn one_scan_per_version_and_selector() {
        let scans = SharedScans::default();
        let all = LabelSelector::default();
        let a = scans.inventory((1, 0), &all, cluster);
        let b = scans.inventory((1, 0), &all, |_, _| -> Inventory {
            panic!("scanned twice")
        });
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(scans.computed(), 1);

        let some = parse_selector("kubernetes.io/hostname=nothing").unwrap();
        let c = scans.inventory((1, 0), &some, cluster);
        assert_eq!(
            (c.total_gpu_nodes, scans.computed()),
            (0, 2),
            "another selector, another scan"
        );

        let d = scans.inventory((1, 1), &all, cluster);
        assert!(!Arc::ptr_eq(&a, &d), "a new grace epoch scans again");
        assert_eq!(*a, *d, "same nodes, same result");
        assert!(
            a.nodes.iter().zip(&d.nodes).all(|(a, d)| Arc::ptr_eq(a, d)),
            "and the same entries, shared"
        );
        assert_eq!(
            scans.scans.lock().unwrap().len(),
            1,
            "older versions are dropped"
        );
    }
}
