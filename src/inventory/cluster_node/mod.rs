//! A node as the core reads it: its name, labels, taints, accelerator resources and the conditions the scan
//! words, and nothing else.
//!
//! The node watch, the one-shot `scan` and the dumps each turn the API's `Node` into this at once
//! ([`ClusterNode::from_node`]), so the core never sees the wire type and the cache holds about a fifth of
//! what a stripped `Node` took (docs/scale.md has the bytes). Two reads of one node that the scan would
//! report alike are equal: heartbeats, the text of conditions nobody reports and cpu or memory do not show.

mod derived;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::inventory::health::HealthTable;
use crate::inventory::vendors::is_read_resource;
pub use derived::Derived;

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
    /// What the node's labels add to a scan's scope (the scanner's encoding), once read.
    pub scope_signals: Derived<(usize, u64)>,
    /// A scope (the scanner's encoding, and its health table) in which the node, without DRA devices, was
    /// found to be no GPU node.
    pub no_gpu_in: Derived<(u64, usize, usize)>,
}

/// The parts of a Node object the core reads, borrowed from whichever decoding holds them.
#[derive(Clone, Copy, Debug)]
pub struct NodeParts<'a> {
    /// `metadata` (name, UID and labels are read).
    pub meta: &'a ObjectMeta,
    /// `spec.unschedulable`.
    pub unschedulable: Option<bool>,
    /// `spec.taints`.
    pub taints: Option<&'a [Taint]>,
    /// `status.capacity`.
    pub capacity: Option<&'a BTreeMap<String, Quantity>>,
    /// `status.allocatable`.
    pub allocatable: Option<&'a BTreeMap<String, Quantity>>,
    /// `status.conditions`.
    pub conditions: Option<&'a [NodeCondition]>,
}

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
    /// The core's view of `node`, keeping the health conditions `table` names.
    pub fn from_node(node: &Node, table: &HealthTable) -> ClusterNode {
        let spec = node.spec.as_ref();
        let status = node.status.as_ref();
        ClusterNode::from_parts(
            NodeParts {
                meta: &node.metadata,
                unschedulable: spec.and_then(|s| s.unschedulable),
                taints: spec.and_then(|s| s.taints.as_deref()),
                capacity: status.and_then(|s| s.capacity.as_ref()),
                allocatable: status.and_then(|s| s.allocatable.as_ref()),
                conditions: status.and_then(|s| s.conditions.as_deref()),
            },
            table,
        )
    }

    /// The core's view of a node's parts (a full `Node` or the watch's slim decoding), keeping the health
    /// conditions `table` names.
    pub fn from_parts(parts: NodeParts<'_>, table: &HealthTable) -> ClusterNode {
        ClusterNode {
            name: parts.meta.name.as_deref().unwrap_or_default().into(),
            uid: parts.meta.uid.as_deref().map(Into::into),
            labels: parts.meta.labels.iter().flatten().collect(),
            unschedulable: parts.unschedulable.unwrap_or(false),
            taints: parts
                .taints
                .unwrap_or_default()
                .iter()
                .map(NodeTaint::from)
                .collect(),
            capacity: parts.capacity.map(read_resources),
            allocatable: parts.allocatable.map(read_resources),
            conditions: parts.conditions.map(|all| {
                all.iter()
                    .filter(|c| c.type_ == "Ready" || table.names(&c.type_))
                    .map(Condition::from)
                    .collect()
            }),
            scope_signals: Derived::default(),
            no_gpu_in: Derived::default(),
        }
    }

    /// [`ClusterNode::from_node`] with the built-in health table.
    pub fn of(node: &Node) -> ClusterNode {
        ClusterNode::from_node(node, HealthTable::defaults())
    }

    /// The node's conditions (none when it shows none).
    pub fn conditions(&self) -> &[Condition] {
        self.conditions.as_deref().unwrap_or_default()
    }

    /// The node's `Ready` condition, if it reports one.
    pub fn ready_condition(&self) -> Option<&Condition> {
        self.conditions().iter().find(|c| &*c.type_ == "Ready")
    }
}

/// The accelerator resources the vendor tables read (`vendors::is_read_resource`); cpu, memory, pods and
/// the rest are dropped.
fn read_resources(list: &BTreeMap<String, Quantity>) -> TextMap {
    list.iter()
        .filter(|(name, _)| is_read_resource(name))
        .map(|(name, quantity)| (name, &quantity.0))
        .collect()
}

impl From<&Taint> for NodeTaint {
    fn from(taint: &Taint) -> NodeTaint {
        NodeTaint {
            key: Text::from(taint.key.as_str()),
            value: Text::from(taint.value.as_deref().unwrap_or_default()),
            effect: Text::from(taint.effect.as_str()),
        }
    }
}

impl From<&NodeCondition> for Condition {
    fn from(c: &NodeCondition) -> Condition {
        let reported = if c.type_ == "Ready" {
            c.status != "True"
        } else {
            c.status == "True"
        };
        Condition {
            type_: Text::from(c.type_.as_str()),
            status: Text::from(c.status.as_str()),
            reason: c.reason.as_deref().filter(|_| reported).map(Text::from),
            message: c.message.as_deref().filter(|_| reported).map(Into::into),
            last_transition_time: c
                .last_transition_time
                .as_ref()
                .filter(|_| reported)
                .map(|t| t.0),
        }
    }
}

#[cfg(test)]
mod tests;
