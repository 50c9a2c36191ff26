//! One event to publish, and how many of a kind are told one by one: what the diffs of `events` share.

use crate::inventory::model::Severity;

/// Above this many transitions of one kind, they are reported as one event.
pub(crate) const MAX_EVENTS_PER_KIND: usize = 5;

/// An event to publish on the GpuInventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InventoryEvent {
    /// `Degraded` is published as a Warning, `Info` as a Normal event.
    pub(crate) severity: Severity,
    /// PascalCase reason, e.g. `GpuNodeNotReady`.
    pub(crate) reason: String,
    /// The human-readable note, naming the node(s).
    pub(crate) note: String,
}

pub(super) fn event(severity: Severity, reason: &str, note: String) -> InventoryEvent {
    InventoryEvent {
        severity,
        reason: reason.to_owned(),
        note,
    }
}
