//! Decoding an object leniently: a field that does not decode is taken out and the rest read again, so that
//! a field the scan never reads (`creationTimestamp: yesterday`, an image list of the wrong shape) does not
//! make a Node unreadable. Of the fields the scan reads, only an entry of a map of strings or quantities
//! (a label, a capacity: `nvidia.com/gpu: ~`) is taken out, and the object is recorded as read without it
//! (the exit code says so: `super::Dump`); any other field the scan reads makes the object unread, as a
//! Pod without its containers or a slice without its pool would be read wrong.

use serde::de::DeserializeOwned;

use super::decode::decode;
use super::decode_error::{DecodeError, Step};
use super::object_kind::Kind;
use super::tree::{Tree, Value};

/// How many fields one object may lose before it is not read at all: a few bad fields are a hand edit or
/// a tool's bug; more, and the object is not what it claims to be.
const MAX_DROPPED: usize = 16;

/// A field taken out of an object so that the rest of it decodes.
#[derive(Debug)]
pub(super) struct Dropped {
    /// Its path (`metadata.creationTimestamp`).
    pub(super) field: String,
    /// Why it did not decode, with its line and column when known.
    pub(super) reason: String,
    /// Whether the scan reads it: then the object is read without something the scan needed.
    pub(super) read_by_scan: bool,
}

/// Decodes `tree` as a `T`, taking out each field that does not decode and may be (at most
/// [`MAX_DROPPED`]); the error is the first field that may not be taken out.
pub(super) fn decode_lenient<T: DeserializeOwned>(
    mut tree: Tree,
    kind: Kind,
) -> Result<(T, Vec<Dropped>), DecodeError> {
    let mut dropped = Vec::new();
    loop {
        let error = match decode::<T>(&tree) {
            Ok(object) => return Ok((object, dropped)),
            Err(error) => error,
        };
        let field = error.field();
        let read = read_by_scan(kind, &field);
        let lenient = !read || in_string_map(kind, &field);
        if !lenient
            || dropped.len() >= MAX_DROPPED
            || field.is_empty()
            || !take_out(&mut tree, &error)
        {
            return Err(error);
        }
        dropped.push(Dropped {
            read_by_scan: read,
            reason: error.reason(),
            field,
        });
    }
}

/// Takes out of `tree` the entry or item the error is in; `false` when the path leads nowhere.
fn take_out(tree: &mut Tree, error: &DecodeError) -> bool {
    let steps: Vec<Step> = error.steps().collect();
    let Some((last, down)) = steps.split_last() else {
        return false;
    };
    let mut node = tree;
    for step in down {
        let next = match (step, &mut node.value) {
            (Step::Entry(index), Value::Map(entries)) => entries.get_mut(*index).map(|(_, v)| v),
            (Step::Item(index), Value::Seq(items)) => items.get_mut(*index),
            _ => None,
        };
        match next {
            Some(next) => node = next,
            None => return false,
        }
    }
    match (last, &mut node.value) {
        (Step::Entry(index), Value::Map(entries)) if *index < entries.len() => {
            entries.remove(*index);
            true
        }
        (Step::Item(index), Value::Seq(items)) if *index < items.len() => {
            items.remove(*index);
            true
        }
        _ => false,
    }
}

/// The fields of a Node the scan reads (as the live scan's slim decoding keeps them: `sources::slim`).
const NODE_READS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
    "spec.unschedulable",
    "spec.taints",
    "status.capacity",
    "status.allocatable",
    "status.conditions",
];

/// The fields of a Pod the scan reads (as `sources::slim` keeps them).
const POD_READS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
    "spec.nodeName",
    "spec.nodeSelector",
    "spec.overhead",
    "spec.containers",
    "spec.initContainers",
    "spec.resourceClaims",
    "status.phase",
    "status.conditions",
    "status.resourceClaimStatuses",
    "status.extendedResourceClaimStatus",
    "status.initContainerStatuses",
    "status.containerStatuses",
    "status.ephemeralContainerStatuses",
];

/// Whether the scan reads `field` of a `kind` (or something inside it, or around it). Of the other kinds
/// (DRA's, Kueue's) the scan reads most fields, so every field counts.
fn read_by_scan(kind: Kind, field: &str) -> bool {
    let reads = match kind {
        Kind::Node => NODE_READS,
        Kind::Pod => POD_READS,
        _ => return true,
    };
    reads
        .iter()
        .any(|read| within(field, read) || within(read, field))
}

/// The maps of strings or quantities the scan reads, whose entries are read one by one.
const NODE_MAPS: &[&str] = &[
    "metadata.labels",
    "metadata.annotations",
    "status.capacity",
    "status.allocatable",
];

/// As [`NODE_MAPS`], of a Pod.
const POD_MAPS: &[&str] = &[
    "metadata.labels",
    "metadata.annotations",
    "spec.nodeSelector",
    "spec.overhead",
];

/// Whether `field` is an entry (or inside one) of a map of strings or quantities the scan reads.
fn in_string_map(kind: Kind, field: &str) -> bool {
    let maps = match kind {
        Kind::Node => NODE_MAPS,
        Kind::Pod => POD_MAPS,
        _ => return false,
    };
    maps.iter().any(|map| field != *map && within(field, map))
}

/// Whether the path `inner` is `outer` or inside it (`status.capacity["x"]` is inside `status.capacity`).
fn within(inner: &str, outer: &str) -> bool {
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_the_scan_reads_are_told_from_the_others() {
        assert!(read_by_scan(
            Kind::Node,
            "status.capacity[\"nvidia.com/gpu\"]"
        ));
        assert!(read_by_scan(Kind::Node, "status"), "all of status");
        assert!(read_by_scan(Kind::Node, "spec.taints[2].effect"));
        assert!(!read_by_scan(Kind::Node, "metadata.creationTimestamp"));
        assert!(!read_by_scan(Kind::Node, "status.images[0]"));
        assert!(
            !read_by_scan(Kind::Node, "metadata.labelsx"),
            "a prefix of a name is no parent"
        );
        assert!(read_by_scan(Kind::Pod, "spec.containers[0].resources"));
        assert!(!read_by_scan(Kind::Pod, "spec.volumes[0]"));
        assert!(read_by_scan(
            Kind::DeviceClass,
            "metadata.creationTimestamp"
        ));
        assert!(in_string_map(
            Kind::Node,
            "status.capacity[\"nvidia.com/gpu\"]"
        ));
        assert!(in_string_map(Kind::Node, "metadata.labels.team"));
        assert!(
            !in_string_map(Kind::Node, "metadata.labels"),
            "the map itself is no entry"
        );
        assert!(!in_string_map(Kind::Pod, "spec.containers"));
    }
}
