//! Issues: what is wrong with a GPU node, as an enum; the reason strings are made only at the edge.

use std::fmt;

/// Why a GPU node needs attention. The strings are part of the API (status, ConfigMap, metrics, alerts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueReason {
    /// The node's Ready condition is not `True`.
    NotReady,
    /// A container-workload GPU node without GPU Feature Discovery's product label.
    GpuLabelsMissing,
    /// Ready with GPUs counted, but none allocatable.
    GpusNotAllocatable,
    /// Some `nvidia.com/*` allocatable below its capacity.
    GpusUnhealthy,
    /// `nvidia.com/mig.config.state` = `failed`.
    MigConfigFailed,
    /// `nvidia.com/mig.config.state` = `pending` or `rebooting`: the GPUs are being re-partitioned.
    MigConfigPending,
    /// The product label ends in `-MIG-INVALID`.
    MigInvalid,
    /// The node is cordoned.
    Unschedulable,
    /// A number-valued label did not parse.
    InvalidLabel,
    /// Pods on the node hold more of a resource than the node offers.
    Overcommitted,
    /// A DRA pool of the node lacks some of its slices at its current generation.
    DraPoolIncomplete,
    /// A DRA device of the node carries a `NoSchedule`/`NoExecute` taint (its slice's or a DeviceTaintRule's).
    GpuDeviceTainted,
    /// The kubelet reports a device allocated to a pod on the node `Unhealthy` (KEP-4680).
    AllocatedDeviceUnhealthy,
    /// The kubelet reports the health of a device allocated to a pod on the node `Unknown` (KEP-4680): its
    /// plugin or driver stopped reporting. The operator raises it only after a grace period.
    AllocatedDeviceHealthUnknown,
    /// A GPU health condition a health table names (NVSentinel, AKS, GKE, AMD, node-problem-detector) is
    /// `True`.
    GpuHealthCheckFailed,
    /// A health controller took the node out of service: a remediation taint, or a cordon its labels
    /// explain (NVSentinel's `k8saas.nvidia.com/cordon-by`).
    GpuNodeQuarantined,
    /// A health controller's cordon still holds the node while every condition it raised there is healthy
    /// again: the quarantine was not lifted.
    StaleQuarantine,
    /// A health monitor counts fewer GPUs than the node should have.
    GpusMissing,
    /// Other nodes of the node's product carry `nvidia.com/gpu.clique` and it does not: Fabric Manager or
    /// IMEX has not finished, so it cannot join multi-node NVLink jobs.
    NvlinkCliqueMissing,
    /// A GPU node (known by its labels or conditions) advertises no GPU resource and no DRA device: the
    /// driver or the device plugin is not up. The operator raises it only after a grace period.
    GpuResourcesMissing,
    /// The node advertises its vendor's device resource at 0 and nothing of the vendor beside it: its devices
    /// disappeared or are held elsewhere (the kubelet keeps a resource once a device plugin registered it).
    GpuDevicesGone,
    /// The GPU operator's driver upgrade failed on the node.
    DriverUpgradeFailed,
    /// The GPU operator is upgrading the node's driver (information: planned work).
    DriverUpgradeInProgress,
    /// The GPU operator paused operands on the node (information: planned work).
    OperandsPaused,
    /// The GPU operator will not run the operands that serve the node's GPUs (`nvidia.com/gpu.deploy.<operand>`
    /// `false` or empty, not `true`).
    OperandsDisabled,
    /// The cloud scheduled maintenance of the node's host (information: planned work).
    MaintenanceScheduled,
}

/// How much an issue matters: only `Degraded` issues make an inventory `Degraded`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Capacity is lost or at risk until someone acts.
    Degraded,
    /// Planned or transient work the node reports; nothing to fix.
    Info,
}

impl Severity {
    /// The severity as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Degraded => "Degraded",
            Severity::Info => "Info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl IssueReason {
    /// Every reason, in the order they are reported.
    pub const ALL: [IssueReason; 26] = [
        IssueReason::NotReady,
        IssueReason::GpuLabelsMissing,
        IssueReason::GpusNotAllocatable,
        IssueReason::GpusUnhealthy,
        IssueReason::MigConfigFailed,
        IssueReason::MigConfigPending,
        IssueReason::MigInvalid,
        IssueReason::Unschedulable,
        IssueReason::InvalidLabel,
        IssueReason::Overcommitted,
        IssueReason::DraPoolIncomplete,
        IssueReason::GpuDeviceTainted,
        IssueReason::AllocatedDeviceUnhealthy,
        IssueReason::AllocatedDeviceHealthUnknown,
        IssueReason::GpuHealthCheckFailed,
        IssueReason::GpuNodeQuarantined,
        IssueReason::StaleQuarantine,
        IssueReason::GpusMissing,
        IssueReason::NvlinkCliqueMissing,
        IssueReason::GpuResourcesMissing,
        IssueReason::GpuDevicesGone,
        IssueReason::DriverUpgradeFailed,
        IssueReason::DriverUpgradeInProgress,
        IssueReason::OperandsPaused,
        IssueReason::OperandsDisabled,
        IssueReason::MaintenanceScheduled,
    ];

    /// The reason as it appears in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueReason::NotReady => "NotReady",
            IssueReason::GpuLabelsMissing => "GpuLabelsMissing",
            IssueReason::GpusNotAllocatable => "GpusNotAllocatable",
            IssueReason::GpusUnhealthy => "GpusUnhealthy",
            IssueReason::MigConfigFailed => "MigConfigFailed",
            IssueReason::MigConfigPending => "MigConfigPending",
            IssueReason::MigInvalid => "MigInvalid",
            IssueReason::Unschedulable => "Unschedulable",
            IssueReason::InvalidLabel => "InvalidLabel",
            IssueReason::Overcommitted => "Overcommitted",
            IssueReason::DraPoolIncomplete => "DraPoolIncomplete",
            IssueReason::GpuDeviceTainted => "GpuDeviceTainted",
            IssueReason::AllocatedDeviceUnhealthy => "AllocatedDeviceUnhealthy",
            IssueReason::AllocatedDeviceHealthUnknown => "AllocatedDeviceHealthUnknown",
            IssueReason::GpuHealthCheckFailed => "GpuHealthCheckFailed",
            IssueReason::GpuNodeQuarantined => "GpuNodeQuarantined",
            IssueReason::StaleQuarantine => "StaleQuarantine",
            IssueReason::GpusMissing => "GpusMissing",
            IssueReason::NvlinkCliqueMissing => "NvlinkCliqueMissing",
            IssueReason::GpuResourcesMissing => "GpuResourcesMissing",
            IssueReason::GpuDevicesGone => "GpuDevicesGone",
            IssueReason::DriverUpgradeFailed => "DriverUpgradeFailed",
            IssueReason::DriverUpgradeInProgress => "DriverUpgradeInProgress",
            IssueReason::OperandsPaused => "OperandsPaused",
            IssueReason::OperandsDisabled => "OperandsDisabled",
            IssueReason::MaintenanceScheduled => "MaintenanceScheduled",
        }
    }

    /// Whether the reason degrades the inventory. Planned work (a driver upgrade under way, paused operands,
    /// announced maintenance) is information: it ends by itself, and alerting on it pages nobody usefully.
    /// Every reason of the first editions stays `Degraded`, as it was.
    pub fn severity(self) -> Severity {
        match self {
            IssueReason::DriverUpgradeInProgress
            | IssueReason::OperandsPaused
            | IssueReason::MaintenanceScheduled => Severity::Info,
            _ => Severity::Degraded,
        }
    }

    /// Whether the operator holds the reason back until it has lasted a grace period (the state is normal
    /// for a while after a node joins: the driver and the device plugin take minutes to come up).
    pub fn needs_grace(self) -> bool {
        matches!(
            self,
            IssueReason::GpuResourcesMissing | IssueReason::AllocatedDeviceHealthUnknown
        )
    }
}

impl fmt::Display for IssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for IssueReason {
    type Err = UnknownReason;

    /// The reason an API string names (what an older or newer operator published); an error for any other.
    fn from_str(text: &str) -> Result<IssueReason, UnknownReason> {
        IssueReason::ALL
            .into_iter()
            .find(|r| r.as_str() == text)
            .ok_or(UnknownReason)
    }
}

/// A reason string this version does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownReason;

/// Tests and the edges compare a reason with its API string.
impl PartialEq<&str> for IssueReason {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Something wrong with a GPU node, in words an on-call engineer understands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Why.
    pub reason: IssueReason,
    /// What was seen, naming the label, condition or resource.
    pub message: String,
    /// Since when, as the object says it (a condition's `lastTransitionTime`), when it says.
    pub since: Option<String>,
}

impl Issue {
    /// An issue of `reason` saying `message`.
    pub fn new(reason: IssueReason, message: impl Into<String>) -> Issue {
        Issue {
            reason,
            message: message.into(),
            since: None,
        }
    }

    /// The issue, holding since `since` (RFC 3339, as the object wrote it).
    pub fn since(mut self, since: Option<String>) -> Issue {
        self.since = since;
        self
    }

    /// The issue's severity (its reason's).
    pub fn severity(&self) -> Severity {
        self.reason.severity()
    }
}
