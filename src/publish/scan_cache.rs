//! The scan cache: one scan per coalesced change and selector, shared by every publisher that asks for it,
//! and the one memory the core's rules keep between scans (`inventory::memory::ScanMemory`), beside the scan
//! service that drives both.
//!
//! The publishers (GpuNodes, the status of each GpuInventory, the ConfigMap, the ClusterProperty) used to scan
//! the same nodes separately after every change. Scans are remembered by selector with the change version
//! they were taken at, and a publisher takes the one held when it is at least as new as the version the
//! publisher asked at: whatever woke it is in it. Under churn the change version moves while a scan runs,
//! so requiring the very version asked at made each publisher waiting for the lock scan again; at 20,000
//! nodes with every reader the scans were two thirds of the CPU, 900 of them in ten minutes. Changes newer
//! than the scan a publisher took wake it again. Only the newest scan is kept, so memory holds at most one
//! inventory per distinct selector, and entries of nodes that did not change between scans are held once
//! (the scan memory's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::inventory::Inventory;
use crate::inventory::memory::ScanMemory;
use crate::inventory::selector::LabelSelector;

/// What a scan is as new as: the sources' change version, then the operator's grace epoch (bumped when an
/// issue held back for a grace period falls due, so the next pass scans again with no change).
pub(crate) type ScanVersion = (u64, u64);

/// Whether a scan taken at `at` holds everything up to `wanted`: as new in both counts.
fn covers(at: ScanVersion, wanted: ScanVersion) -> bool {
    at.0 >= wanted.0 && at.1 >= wanted.1
}

/// The cache. No I/O, no clock: the scan service brings both.
#[derive(Debug, Default)]
pub(crate) struct SharedScans {
    held: Mutex<Held>,
    computed: std::sync::atomic::AtomicU64,
    /// The memory's count of entries reused, as of the last scan (read without waiting for a scan).
    reused: std::sync::atomic::AtomicU64,
}

/// What the cache holds, under one lock: a scan runs under it, with the memory lent to it.
#[derive(Debug, Default)]
struct Held {
    scans: HashMap<String, (ScanVersion, Arc<Inventory>)>,
    memory: ScanMemory,
}

impl SharedScans {
    /// The cache, locked. The publisher holding it scans when no scan is new enough, while the others wait,
    /// and they take its scan when it is as new as what they asked for, instead of scanning again.
    pub(crate) fn lock(&self) -> Locked<'_> {
        Locked {
            held: self.held.lock().unwrap_or_else(|e| e.into_inner()),
            cache: self,
        }
    }

    /// How many GPU node entries scans took from earlier ones without building them (see
    /// [`ScanMemory`]).
    pub(crate) fn entries_reused(&self) -> u64 {
        self.reused.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many scans were computed (not served from the memo) so far.
    pub(crate) fn computed(&self) -> u64 {
        self.computed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The locked cache: ask it for a scan, else scan with its memory and keep the result.
pub(crate) struct Locked<'c> {
    held: std::sync::MutexGuard<'c, Held>,
    cache: &'c SharedScans,
}

impl Locked<'_> {
    /// The scan of what `selector` picks held at least as new as `wanted`, if any.
    pub(crate) fn covering(
        &self,
        wanted: ScanVersion,
        selector: &LabelSelector,
    ) -> Option<Arc<Inventory>> {
        let (at, inventory) = self.held.scans.get(&selector.to_string())?;
        covers(*at, wanted).then(|| inventory.clone())
    }

    /// The memory to lend a scan.
    pub(crate) fn memory(&mut self) -> &mut ScanMemory {
        &mut self.held.memory
    }

    /// Keeps `inventory`, the scan of `selector` taken at `version` (read from the sources before their
    /// objects, so it never claims a change it lacks), and drops the scans older than it.
    pub(crate) fn keep(
        mut self,
        selector: &LabelSelector,
        version: ScanVersion,
        inventory: Inventory,
    ) -> Arc<Inventory> {
        use std::sync::atomic::Ordering::Relaxed;
        let inventory = Arc::new(inventory);
        self.cache.computed.fetch_add(1, Relaxed);
        self.cache.reused.store(self.held.memory.reused(), Relaxed);
        let scans = &mut self.held.scans;
        scans.retain(|_, (at, _)| covers(*at, version));
        scans.insert(selector.to_string(), (version, inventory.clone()));
        inventory
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

    fn cluster(selector: &LabelSelector, memory: &mut ScanMemory) -> Inventory {
        let path = format!(
            "{}/tests/fixtures/homelab-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let nodes: Vec<Node> = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
        scan(
            ScanInput::nodes(&read(&nodes))
                .selector(selector)
                .memory(memory),
        )
    }

    /// A scan at `version`.
    fn at(
        version: ScanVersion,
    ) -> impl FnOnce(&LabelSelector, &mut ScanMemory) -> (ScanVersion, Inventory) {
        move |selector, memory| (version, cluster(selector, memory))
    }

    fn never(_: &LabelSelector, _: &mut ScanMemory) -> (ScanVersion, Inventory) {
        panic!("scanned again")
    }

    /// What the scan service does with the cache: the held scan when new enough, else `scan`'s, kept.
    trait Ask {
        fn inventory(
            &self,
            wanted: ScanVersion,
            selector: &LabelSelector,
            scan: impl FnOnce(&LabelSelector, &mut ScanMemory) -> (ScanVersion, Inventory),
        ) -> Arc<Inventory>;
    }

    impl Ask for SharedScans {
        fn inventory(
            &self,
            wanted: ScanVersion,
            selector: &LabelSelector,
            scan: impl FnOnce(&LabelSelector, &mut ScanMemory) -> (ScanVersion, Inventory),
        ) -> Arc<Inventory> {
            let mut cache = self.lock();
            if let Some(held) = cache.covering(wanted, selector) {
                return held;
            }
            let (version, inventory) = scan(selector, cache.memory());
            cache.keep(selector, version, inventory)
        }
    }

    #[test]
    fn one_scan_per_version_and_selector() {
        let scans = SharedScans::default();
        let all = LabelSelector::default();
        let a = scans.inventory((1, 0), &all, at((1, 0)));
        let b = scans.inventory((1, 0), &all, never);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(scans.computed(), 1);

        let some = parse_selector("kubernetes.io/hostname=nothing").unwrap();
        let c = scans.inventory((1, 0), &some, at((1, 0)));
        assert_eq!(
            (c.total_gpu_nodes, scans.computed()),
            (0, 2),
            "another selector, another scan"
        );

        let d = scans.inventory((1, 1), &all, at((1, 1)));
        assert!(!Arc::ptr_eq(&a, &d), "a new grace epoch scans again");
        assert_eq!(*a, *d, "same nodes, same result");
        assert!(
            a.nodes.iter().zip(&d.nodes).all(|(a, d)| Arc::ptr_eq(a, d)),
            "and the same entries, shared"
        );
        assert_eq!(
            scans.held.lock().unwrap().scans.len(),
            1,
            "older versions are dropped"
        );
    }

    /// Under churn the version moves while a scan runs: a publisher that asked at version 5 takes a scan
    /// taken at 7 (it holds change 5), and one that asks at 8 scans again.
    #[test]
    fn a_newer_scan_serves_an_older_ask() {
        let scans = SharedScans::default();
        let all = LabelSelector::default();
        let first = scans.inventory((5, 0), &all, at((7, 0)));
        let second = scans.inventory((5, 0), &all, never);
        let third = scans.inventory((7, 0), &all, never);
        assert!(Arc::ptr_eq(&first, &second) && Arc::ptr_eq(&first, &third));
        assert_eq!(scans.computed(), 1);

        scans.inventory((8, 0), &all, at((9, 0)));
        assert_eq!(scans.computed(), 2, "asked past the scan held: scan again");
        scans.inventory((6, 1), &all, at((9, 1)));
        assert_eq!(
            scans.computed(),
            3,
            "newer in changes but older in grace epoch: scan again"
        );
    }
}
