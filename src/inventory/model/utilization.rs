//! What the held GPUs did: the idle holdings of a node, and the inventory's utilization report.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::holding::Holder;

/// A holder's units of one resource that sat idle through the whole window.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct IdleHolding {
    /// Who holds them: a pod, or a ResourceClaim.
    pub holder: Holder,
    /// The resource (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, `gpu.nvidia.com/gpu`).
    pub resource: String,
    /// How many of the held units were idle (at most what is held).
    pub amount: u64,
    /// How much of a physical GPU they are, in thousandths, where the holding has a GPU-equivalent: its
    /// equivalent's part for the idle units, or on a shared GPU the idle device's parts (docs/utilization.md,
    /// "Shared GPUs").
    pub equivalent_milli: Option<u64>,
    /// Since when they have been idle at the latest: the start of the window in which they were first found
    /// idle. It stays put while they stay idle, so a query that finds the same does not move it.
    pub idle_since: jiff::Timestamp,
}

/// Per node with any, its idle holdings, sorted. They sit beside the node entries (`Inventory::nodes`), not
/// in them: a node holding an idle GPU keeps the very entry its scan made, which scans share while the node
/// is unchanged (`inventory::memory`). A copy of the whole entry to carry the list cost 5.8 MB at 65,000
/// nodes (benches/RESULTS.md). A list is shared between scans while its node's join is unchanged
/// (`inventory::utilization::IdleMemo`), so the GpuNode publisher can tell an unchanged one by its address.
pub type IdleByNode = BTreeMap<String, Arc<[IdleHolding]>>;

/// Whether the idle figures are known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UtilizationState {
    /// The last query answered in full.
    Current,
    /// The last query failed, was refused or answered in part: the idle figures are withheld.
    #[default]
    Unknown,
}

impl UtilizationState {
    /// The name the API shows (`status.utilization.state`).
    pub fn as_str(self) -> &'static str {
        match self {
            UtilizationState::Current => "Current",
            UtilizationState::Unknown => "Unknown",
        }
    }
}

/// What the inventory says about the held GPUs' activity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UtilizationReport {
    /// Where the activity is read (the Prometheus URL, without credentials).
    pub source: String,
    /// The window a GPU must stay idle through, as written (`30m`).
    pub window: String,
    /// Whether the figures are known.
    pub state: UtilizationState,
    /// Why the state is `Unknown`, or how many GPUs reported activity.
    pub message: String,
    /// Per namespace, per resource, the idle units its pods and claims hold (empty when `Unknown`).
    pub namespaces: BTreeMap<String, BTreeMap<String, u64>>,
    /// Per resource, the idle units over every namespace (empty when `Unknown`).
    pub idle: BTreeMap<String, u64>,
    /// Per namespace, per product (`unknown` where no source names it), the idle units' GPU-equivalents in
    /// thousandths: what the chargeback gauge `gpu_inventory_namespace_gpu_equivalents_idle` exports (empty
    /// when `Unknown`).
    pub namespace_equivalents: BTreeMap<String, BTreeMap<String, u64>>,
    /// Shared GPUs (time-slicing, MPS, a sharing layer's cards) held by someone that dcgm-exporter reports
    /// busy: no holder of them is idle, and what each holder did is not measured (0 when `Unknown`).
    pub busy_shared: u64,
}
