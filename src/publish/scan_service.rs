//! The scan service: what every publisher asks for a scan. It owns the three things running one scan takes,
//! which used to be spread over the publishers' context, the core and the sources: the sources' snapshot
//! (`Snapshot::scan`), the cache that makes it one scan per change and selector and holds the core's memory
//! between scans (`publish::scan_cache`), and the grace that holds young issues back (`inventory::grace`).
//! The grace is pure and stays in the core; the service gives the cache the sources and the grace the clock.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::inventory::selector::LabelSelector;

use super::scan_cache::SharedScans;
use crate::inventory::Inventory;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::grace::Grace;
use crate::sources::{Changes, Sources};

/// Scans for the publishers, shared between them.
pub(crate) struct ScanService {
    sources: Sources,
    scans: SharedScans,
    grace: Mutex<GraceState>,
    /// The periodic pass (`--requeue`).
    requeue: Duration,
}

/// The grace memory of every selector scanned, and when the first held-back issue falls due.
#[derive(Debug)]
struct GraceState {
    period: Duration,
    per_selector: HashMap<String, Grace>,
    due: Option<Instant>,
    /// Bumped when `due` passes: scans are remembered per (change version, epoch), so the pass that
    /// [`ScanService::next_pass`] schedules for `due` scans again and reports the issue with no change to wake it.
    epoch: u64,
}

impl ScanService {
    /// A service over `sources`, with passes every `requeue` and issues held back for `resources_grace`.
    pub(crate) fn new(sources: Sources, requeue: Duration, resources_grace: Duration) -> Self {
        ScanService {
            sources,
            scans: SharedScans::default(),
            grace: Mutex::new(GraceState {
                period: resources_grace,
                per_selector: HashMap::new(),
                due: None,
                epoch: 0,
            }),
            requeue,
        }
    }

    /// The inventory of the nodes `selector` picks, at least as new as the latest change (shared between
    /// publishers: a scan another publisher started after this call is taken rather than repeated).
    /// Issues that need a grace period (`IssueReason::needs_grace`) appear once they have lasted it.
    pub(crate) fn inventory(&self, selector: &LabelSelector) -> Arc<Inventory> {
        let wanted = (self.sources.version(), self.grace_epoch());
        let mut cache = self.scans.lock();
        if let Some(held) = cache.covering(wanted, selector) {
            return held;
        }
        // Read now, under the cache's lock: the changes that came while this publisher waited for it are in
        // this scan, and the publishers that asked meanwhile take it.
        let snapshot = self.sources.snapshot();
        let universe = self.sources.node_universe();
        let scanned = snapshot.scan(selector, universe, Some(cache.memory()));
        let inventory = self.graced(selector, scanned);
        cache.keep(selector, (snapshot.version, wanted.1), inventory)
    }

    /// The grace epoch, moved on when the first held-back issue fell due (so the pass scheduled for it scans
    /// again with no change).
    fn grace_epoch(&self) -> u64 {
        let mut grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
        if grace.due.is_some_and(|due| due <= Instant::now()) {
            grace.due = None;
            grace.epoch += 1;
        }
        grace.epoch
    }

    /// `scanned` with the issues that have not lasted their grace held back, and the time the first of them
    /// falls due noted.
    fn graced(&self, selector: &LabelSelector, scanned: Inventory) -> Inventory {
        let mut grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
        let period = grace.period;
        let (inventory, due) = grace
            .per_selector
            .entry(selector.to_string())
            .or_insert_with(|| Grace::new(period))
            .apply(scanned, Instant::now());
        if let Some(due) = due {
            grace.due = Some(grace.due.map_or(due, |d| d.min(due)));
        }
        inventory
    }

    /// How long until the next periodic pass: the requeue period, or sooner when an issue held back for its
    /// grace falls due (so it is published when its grace ends, with no change to wake anyone).
    pub(crate) fn next_pass(&self) -> Duration {
        let grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
        match grace.due {
            // A little past the due time, so the pass that wakes finds it due.
            Some(due) => self
                .requeue
                .min(due.saturating_duration_since(Instant::now()) + Duration::from_millis(50)),
            None => self.requeue,
        }
    }

    /// Follows the sources' change stream from now on.
    pub(crate) fn changes(&self) -> Changes {
        self.sources.changes()
    }

    /// The cached node `name`, if the node watch holds it.
    pub(crate) fn node(&self, name: &str) -> Option<Arc<ClusterNode>> {
        self.sources.node(name)
    }

    /// How many scans were computed (not served from the memo) so far.
    pub(crate) fn computed(&self) -> u64 {
        self.scans.computed()
    }

    /// How many GPU node entries scans took from earlier ones without building them.
    pub(crate) fn entries_reused(&self) -> u64 {
        self.scans.entries_reused()
    }
}
