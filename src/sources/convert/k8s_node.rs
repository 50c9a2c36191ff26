//! A Kubernetes `Node` (or the parts of one the watch's slim decoding holds) into the core's
//! [`ClusterNode`]: only the accelerator resources, the sharing layers' annotations and the conditions the
//! scan reads are kept.
//!
//! The methods sit on the core's type, but here at the edge, so that `src/inventory/` names no Kubernetes
//! type.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::inventory::cluster_node::{ClusterNode, Condition, NodeTaint};
use crate::inventory::health::HealthTable;
use crate::inventory::text_map::{Text, TextMap};
use crate::inventory::vendors::{is_read_annotation, is_read_resource};

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
        let mut node = ClusterNode {
            name: parts.meta.name.as_deref().unwrap_or_default().into(),
            uid: parts.meta.uid.as_deref().map(Into::into),
            labels: parts.meta.labels.iter().flatten().collect(),
            registers: parts
                .meta
                .annotations
                .iter()
                .flatten()
                .filter(|(key, _)| is_read_annotation(key))
                .map(|(key, value)| (Text::from(key.as_str()), Text::from(value.as_str())))
                .collect(),
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
                    .map(|c| read_condition(c, table))
                    .collect()
            }),
            from_slices_only: false,
            scope_signals: None,
        };
        // Read once per node version here, not on every scan of every node (at 65,000 nodes that was 100 ms
        // a scan).
        node.scope_signals = Some(crate::inventory::scanner::read_scope_signals(&node));
        node
    }

    /// [`ClusterNode::from_node`] with the built-in health table.
    pub fn of(node: &Node) -> ClusterNode {
        ClusterNode::from_node(node, HealthTable::defaults())
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

/// A condition as the scan reads it: its reason, message and transition kept only while it reports a problem
/// (`Ready` not `True`; a health condition at its family's problem status), so a healthy node's conditions
/// hold nothing that changes; the reason also where it says whose devices a monitor watches (EKS's
/// `AcceleratedHardwareReady`, `Nvidia*` or `Neuron*`).
pub(crate) fn read_condition(c: &NodeCondition, table: &HealthTable) -> Condition {
    let reported = if c.type_ == "Ready" {
        c.status != "True"
    } else {
        table.is_problem(&c.type_, &c.status)
    };
    let reason_kept = reported || table.reason_names_vendor(&c.type_);
    Condition {
        type_: Text::from(c.type_.as_str()),
        status: Text::from(c.status.as_str()),
        reason: c.reason.as_deref().filter(|_| reason_kept).map(Text::from),
        message: c.message.as_deref().filter(|_| reported).map(Into::into),
        last_transition_time: c
            .last_transition_time
            .as_ref()
            .filter(|_| reported)
            .map(|t| t.0),
    }
}
