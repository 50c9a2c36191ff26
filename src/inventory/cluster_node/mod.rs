//! A node as the core reads it: its name, labels, taints, accelerator resources and the conditions the scan
//! words, and nothing else.
//!
//! The node watch, the one-shot `scan` and the dumps each turn the API's `Node` into this at once
//! (`ClusterNode::from_node`, in `sources::convert::k8s_node`), so the core never sees the wire type and
//! the cache holds about a fifth of what a stripped `Node` took (docs/scale.md has the bytes). Two reads of one node that the scan would
//! report alike are equal: heartbeats, the text of conditions nobody reports and cpu or memory do not show.

use crate::inventory::text_map::{Text, TextMap};

/// A node as the scan reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterNode {
    /// `metadata.name`.
    pub name: Box<str>,
    /// `metadata.uid` (a GpuNode's owner reference names it).
    pub uid: Option<Box<str>>,
    /// `metadata.labels`.
    pub labels: TextMap,
    /// The annotations in which sharing layers list the node's physical devices (`hami.io/node-nvidia-register`:
    /// the registry's `sharing_layers.tsv`), key and value; no other annotation is kept (heartbeats are not).
    pub registers: Box<[(Text, Text)]>,
    /// `spec.unschedulable`: cordoned.
    pub unschedulable: bool,
    /// `spec.taints`, without the time a taint was added.
    pub taints: Box<[NodeTaint]>,
    /// `status.capacity`, only the accelerator resources the vendor tables read; `None`: the object has none.
    pub capacity: Option<TextMap>,
    /// `status.allocatable`, likewise; `None` for a partial dump.
    pub allocatable: Option<TextMap>,
    /// `Ready` and the GPU health conditions the table names; `None`: the object shows no conditions.
    pub conditions: Option<Box<[Condition]>>,
    /// There was no Node object: only ResourceSlices name the node (a dump of slices alone).
    pub from_slices_only: bool,
    /// What the node's labels add to a scan's scope, read by the built-in vendor tables when the node was
    /// made (`scanner::read_scope_signals`): the tables' address and the signals. A function of the labels,
    /// so two equal nodes hold the same; `None` where the maker did not read it (the scan reads it then).
    pub scope_signals: Option<(usize, u64)>,
}

impl ClusterNode {
    /// A node only ResourceSlices name: its name and nothing else is known.
    pub fn named_by_slices(name: &str) -> ClusterNode {
        ClusterNode {
            name: name.into(),
            from_slices_only: true,
            ..Default::default()
        }
    }
}

/// Everything a node's entry depends on besides the node itself, as the scanner encodes it
/// (`ScanScope::key`): its label signals, its health table's fingerprint, its vendor tables' address and its
/// topology levels' fingerprint.
pub type ScopeKey = (u64, u64, usize, u64);

/// A node taint: key, value and effect.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeTaint {
    /// `key`.
    pub key: Text,
    /// `value` (empty when absent).
    pub value: Text,
    /// `effect` (`NoSchedule`, `PreferNoSchedule`, `NoExecute`).
    pub effect: Text,
}

/// A node condition the scan reads. Only a reported one (a `Ready` that is not `True`, a health condition
/// that is `True`) keeps its reason, message and transition time: a kubelet or a monitor rewriting the
/// others is no change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `type` (`Ready`, `GpuHealthy`, ...).
    pub type_: Text,
    /// `status`: `True`, `False` or `Unknown`.
    pub status: Text,
    /// `reason`.
    pub reason: Option<Text>,
    /// `message`.
    pub message: Option<Box<str>>,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<jiff::Timestamp>,
}

impl ClusterNode {
    /// The node's conditions (none when it shows none).
    pub fn conditions(&self) -> &[Condition] {
        self.conditions.as_deref().unwrap_or_default()
    }

    /// The node's `Ready` condition, if it reports one.
    pub fn ready_condition(&self) -> Option<&Condition> {
        self.conditions().iter().find(|c| &*c.type_ == "Ready")
    }
}
