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
}

impl IssueReason {
    /// Every reason, in the order they are reported.
    pub const ALL: [IssueReason; 13] = [
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
        }
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
}

impl Issue {
    /// An issue of `reason` saying `message`.
    pub fn new(reason: IssueReason, message: impl Into<String>) -> Issue {
        Issue {
            reason,
            message: message.into(),
        }
    }
}
