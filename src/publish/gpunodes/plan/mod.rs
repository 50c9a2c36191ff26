//! What each GpuNode should hold, and the writes that get it there (pure: the publisher sends them).
//!
//! A GpuNode has two parts written separately, because its status is a subresource: the object (labels,
//! owner, spec) and the status. Each is compared whole with what the server holds, the status with its
//! `observedTime` taken from the server's copy (the article's pitfall 2), so equal content is never written
//! and a node's heartbeat, which changes nothing here, never writes.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;

use crate::crd::{
    GROUP, GpuNode, GpuNodeEntry, GpuNodeStatus, LABEL_HAS_ISSUES, LABEL_PRODUCT, LABEL_READY,
    LABEL_VENDOR, label_value,
};
use crate::inventory::allocation::free_whole_gpus;
use crate::inventory::model::{IdleHolding, NodeInventory};
use crate::inventory::text_map::TextMap;
use crate::inventory::vendors::vendor_of;
use crate::publish::content::digest::Digest;
use crate::publish::content::wire::{self, Detail};

/// A GpuNode as far as the operator writes it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct GpuNodeContent {
    /// Labels the operator sets: ours (`homelab.youngju.dev/*`) and the node's own for every key the node
    /// watch's selector names (so the GpuNode watch can use the same selector).
    pub(crate) labels: BTreeMap<String, String>,
    /// The UID of the Node it describes (its owner; garbage collection removes it with the node).
    pub(crate) owner_uid: Option<String>,
    /// The status.
    pub(crate) status: GpuNodeStatus,
}

/// The GpuNode a node's inventory entry and idle holdings make. `node_labels` are the Node's labels,
/// `scope_keys` the label keys of the node watch's selector.
pub(crate) fn desired(
    entry: &NodeInventory,
    idle: &[IdleHolding],
    node_uid: Option<&str>,
    node_labels: Option<&TextMap>,
    scope_keys: &[String],
) -> GpuNodeContent {
    let vendor = vendor_of(entry);
    let mut labels: BTreeMap<String, String> = scope_keys
        .iter()
        .filter_map(|key| Some((key.clone(), node_labels?.get(key)?.to_owned())))
        .collect();
    labels.insert(
        LABEL_VENDOR.to_owned(),
        vendor.unwrap_or("unknown").to_owned(),
    );
    if let Some(product) = entry.product.as_deref().and_then(label_value) {
        labels.insert(LABEL_PRODUCT.to_owned(), product);
    }
    labels.insert(LABEL_READY.to_owned(), entry.ready.to_string());
    labels.insert(LABEL_HAS_ISSUES.to_owned(), entry.has_issues().to_string());
    let reasons: Vec<&str> = entry.issues.iter().map(|i| i.reason.as_str()).collect();
    GpuNodeContent {
        labels,
        owner_uid: node_uid.map(str::to_owned),
        status: GpuNodeStatus {
            observed_time: None,
            vendor: vendor.map(str::to_owned),
            free_gpus: free_whole_gpus(entry),
            issue_reasons: (!reasons.is_empty()).then(|| reasons.join(",")),
            // The entry's vendor is the status's own `vendor` (flattened into the same object): said once.
            node: GpuNodeEntry {
                vendor: None,
                ..wire::node_entry(entry, idle, Detail::Devices)
            },
        },
    }
}

/// What the server holds of a GpuNode, read from the watched object: our labels (those in our group, and
/// the scope keys), the owner's UID and the status, as the digest the cache keeps.
pub(crate) fn current(object: &GpuNode, scope_keys: &[String]) -> GpuNodeDigest {
    let ours = |key: &str| {
        key.split_once('/')
            .is_some_and(|(prefix, _)| prefix == GROUP)
            || scope_keys.iter().any(|k| k == key)
    };
    let labels: BTreeMap<&String, &String> = object
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| ours(k))
        .collect();
    let owner_uid = object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == "Node" && o.api_version == "v1")
        .map(|o| &o.uid);
    let none = GpuNodeStatus::default();
    GpuNodeDigest::of_parts(&labels, &owner_uid, object.status.as_ref().unwrap_or(&none))
}

/// What the operator keeps of a GpuNode the server holds, or that it wrote: a digest of each part instead of
/// a copy of the node's detail, and the status's `observedTime` (the one field a write carries over).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GpuNodeDigest {
    /// The object part: our labels and the owner.
    object: Digest,
    /// The status without `observedTime`.
    status: Digest,
    /// When the status's content was first observed.
    observed_time: Option<Time>,
}

impl GpuNodeDigest {
    /// The digest of `content`.
    pub(crate) fn of(content: &GpuNodeContent) -> Self {
        Self::of_parts(&content.labels, &content.owner_uid, &content.status)
    }

    /// The digest of a GpuNode's parts, borrowed from wherever they are (our content, a watched object):
    /// equal parts give equal digests whatever holds them.
    fn of_parts(
        labels: &impl Serialize,
        owner_uid: &impl Serialize,
        status: &GpuNodeStatus,
    ) -> Self {
        // Destructured whole: a new status field is digested, or this stops compiling.
        let GpuNodeStatus {
            observed_time,
            vendor,
            free_gpus,
            issue_reasons,
            node,
        } = status;
        GpuNodeDigest {
            object: Digest::of(&(labels, owner_uid)),
            status: Digest::of(&(vendor, free_gpus, issue_reasons, node)),
            observed_time: observed_time.clone(),
        }
    }
}

/// The writes one GpuNode needs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GpuNodeWrite {
    /// Apply the object (labels, owner, spec): it is new, or they differ.
    pub(crate) object: bool,
    /// Apply the status: it is new or differs.
    pub(crate) status: bool,
    /// The content once written (status stamped): what the server will hold.
    pub(crate) content: GpuNodeContent,
}

/// Plans one GpuNode: `None` when the server already holds `desired`. Each part is compared whole with what
/// the server holds, the status without its `observedTime`: a changed status is stamped `now`, an unchanged
/// one keeps the server's time (the article's pitfall 2).
pub(crate) fn plan(
    mut desired: GpuNodeContent,
    current: Option<&GpuNodeDigest>,
    now: Timestamp,
) -> Option<GpuNodeWrite> {
    let wanted = GpuNodeDigest::of(&desired);
    let object = current.is_none_or(|c| c.object != wanted.object);
    let status = current.is_none_or(|c| c.status != wanted.status);
    if !(object || status) {
        return None;
    }
    desired.status.observed_time = match current {
        Some(current) if !status => current.observed_time.clone(),
        _ => Some(Time(now)),
    };
    Some(GpuNodeWrite {
        object,
        status,
        content: desired,
    })
}

/// The GpuNodes to delete: those the server holds (in our scope) for nodes that are no GPU nodes of ours.
pub(crate) fn stale<'a>(
    held: impl IntoIterator<Item = &'a str>,
    wanted: &std::collections::HashSet<&str>,
) -> Vec<String> {
    let mut names: Vec<String> = held
        .into_iter()
        .filter(|name| !wanted.contains(name))
        .map(str::to_owned)
        .collect();
    names.sort_unstable();
    names
}

#[cfg(test)]
mod tests;
