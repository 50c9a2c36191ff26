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
    /// Kueue's `Topology` (`kueue.x-k8s.io`); another group's `Topology` is not read.
    Topology,
}

impl Kind {
    pub(super) fn parse(kind: &str) -> Option<Kind> {
        Some(match kind {
            "Node" => Kind::Node,
            "Pod" => Kind::Pod,
            "ResourceSlice" => Kind::ResourceSlice,
            "ResourceClaim" => Kind::ResourceClaim,
            "DeviceClass" => Kind::DeviceClass,
            "DeviceTaintRule" => Kind::DeviceTaintRule,
            "Topology" => Kind::Topology,
            _ => return None,
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
            Kind::Topology => "Topology",
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
