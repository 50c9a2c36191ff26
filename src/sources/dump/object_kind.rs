//! The kinds a dump's objects are read as, and why one object was not read: shared by the dump reader
//! (`dump.rs`) and its version conversions (`versions.rs`), so neither reaches into the other.

use super::decode_error::DecodeError;

/// The kinds a dump's objects are read as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Kind {
    Node,
    Pod,
    ResourceSlice,
    ResourceClaim,
    DeviceClass,
    DeviceTaintRule,
    /// A PodDisruptionBudget (`policy/v1`): `fit --plan` never moves more of its pods than it allows.
    PodDisruptionBudget,
    /// One of Kueue's kinds the scan reads (`kueue.x-k8s.io`: Topology, ResourceFlavor, ClusterQueue, Cohort,
    /// LocalQueue, Workload); another group's kind of the same name is not read.
    Kueue(&'static str),
}

/// Kueue's kinds a dump's objects are read as.
const KUEUE_KINDS: [&str; 6] = [
    "Topology",
    "ResourceFlavor",
    "ClusterQueue",
    "Cohort",
    "LocalQueue",
    "Workload",
];

impl Kind {
    pub(super) fn parse(kind: &str) -> Option<Kind> {
        Some(match kind {
            "Node" => Kind::Node,
            "Pod" => Kind::Pod,
            "ResourceSlice" => Kind::ResourceSlice,
            "ResourceClaim" => Kind::ResourceClaim,
            "DeviceClass" => Kind::DeviceClass,
            "DeviceTaintRule" => Kind::DeviceTaintRule,
            "PodDisruptionBudget" => Kind::PodDisruptionBudget,
            other => Kind::Kueue(KUEUE_KINDS.into_iter().find(|k| *k == other)?),
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Node => "Node",
            Kind::Pod => "Pod",
            Kind::ResourceSlice => "ResourceSlice",
            Kind::ResourceClaim => "ResourceClaim",
            Kind::DeviceClass => "DeviceClass",
            Kind::DeviceTaintRule => "DeviceTaintRule",
            Kind::PodDisruptionBudget => "PodDisruptionBudget",
            Kind::Kueue(kind) => kind,
        }
    }
}

/// Why one object was not read.
pub(super) enum Unread {
    /// Its `apiVersion` is not one the scan reads (the version).
    Version(String),
    /// It did not decode.
    Decode(DecodeError),
}

impl From<DecodeError> for Unread {
    fn from(error: DecodeError) -> Self {
        Unread::Decode(error)
    }
}
