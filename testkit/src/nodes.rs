//! A node's Ready condition, read and set, and the annotation that hands a node to KWOK.

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The annotation KWOK's `--manage-nodes-with-annotation-selector` picks (hack/local-cluster.sh, and the kind
/// workflow): nodes carrying it get a simulated kubelet.
pub const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// Whether a node's Ready condition is `True`.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Sets the Ready condition in `conditions` (replacing the one there) to `ready` as of `at` (RFC 3339), as a
/// kubelet reports it.
pub fn set_ready(conditions: &mut Vec<NodeCondition>, ready: bool, at: &str) {
    let time = Time(at.parse().expect("timestamp"));
    let (status, reason, message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        ("False", "KubeletNotReady", "bench: Ready flipped")
    };
    let condition = NodeCondition {
        type_: "Ready".into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(time.clone()),
        last_transition_time: Some(time),
    };
    match conditions.iter_mut().find(|c| c.type_ == "Ready") {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}
