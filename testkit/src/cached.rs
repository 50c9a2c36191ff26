//! Objects as the API server lists them and as the operator's caches then hold them (decoded slim,
//! stripped), for the in-process benches (`benches/memory_model.rs`, `benches/scan_cost.rs`): the JSON is made
//! apart from the decoding, so a bench can measure the decoding alone.

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::lib_api::ClusterNode;

use crate::Res;
use crate::lib_api::{HealthTable, SlimNode, SlimPod};
use crate::pods::{PodRec, pod_object};

/// `node` as the API server lists it, with a UID and a resourceVersion (`i` makes them unique).
pub fn listed_node(mut node: Node, i: usize) -> Vec<u8> {
    node.metadata.uid = Some(format!("{i:08x}-5b1e-4c0f-9a51-7d2c3e4f5a6b"));
    node.metadata.resource_version = Some(format!("{}", 1_000_000 + i));
    serde_json::to_vec(&node).expect("a node serializes")
}

/// A listed node as the node cache holds it: decoded slim, stripped, the default health conditions kept.
pub fn cached_node(listed: &[u8]) -> ClusterNode {
    let slim: SlimNode = serde_json::from_slice(listed).expect("a listed node decodes slim");
    slim.to_cluster_node(HealthTable::defaults())
}

/// The pod `rec` describes as the API server lists it, with a UID and a resourceVersion (`i` makes them
/// unique).
pub fn listed_pod(rec: &PodRec, i: usize) -> Res<Vec<u8>> {
    let mut pod = pod_object(rec)?;
    pod.metadata.uid = Some(format!("{i:08x}-7c1e-4c0f-9a51-7d2c3e4f5a6b"));
    pod.metadata.resource_version = Some(format!("{}", 2_000_000 + i));
    Ok(serde_json::to_vec(&pod)?)
}

/// A listed pod decoded slim, as the pod watch hands it to the pod cache's strip.
pub fn decoded_pod(listed: &[u8]) -> Pod {
    let slim: SlimPod = serde_json::from_slice(listed).expect("a listed pod decodes slim");
    Pod::from(slim)
}
