//! What the GpuNode watch's cache keeps of each GpuNode: its version and a digest of our part of it.

use crate::crd::GpuNode;
use crate::publish::gpunodes::plan::{self, GpuNodeDigest};

/// A GpuNode as the cache keeps it: its version and our part of it.
#[derive(Debug, PartialEq)]
pub(crate) struct CachedGpuNode {
    /// Its `resourceVersion`.
    pub(crate) version: Option<String>,
    /// Our labels, owner and status, digested.
    pub(crate) content: GpuNodeDigest,
}

/// The strip of the GpuNode watch: each object's version and our part of it (`scope_keys`: the node watch's
/// selector's keys, copied onto each GpuNode).
pub(crate) fn cached(scope_keys: Vec<String>) -> impl Fn(&GpuNode) -> Option<CachedGpuNode> {
    move |object: &GpuNode| {
        Some(CachedGpuNode {
            version: object.metadata.resource_version.clone(),
            content: plan::current(object, &scope_keys),
        })
    }
}
