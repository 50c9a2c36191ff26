//! Nodes and pods decoded slim: only the fields the core reads are built, the rest of each object is skipped
//! by the JSON decoder without allocating.
//!
//! A kubelet heartbeat is a whole Node on the watch (images, addresses, node info, managed fields); a pod
//! relist is every pod of the cluster. Decoding them into full `k8s_openapi` objects only to strip them was most
//! of the operator's CPU under heartbeats (~0.4 ms per node update at 1,000 KWOK nodes). These types are
//! what the watches decode instead: a node becomes the core's [`ClusterNode`], a pod the `k8s_openapi` Pod
//! (holding only the kept fields) that `GpuPod::from_pod` reads. They are read-only views: the operator never
//! sends them back.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, NodeCondition, Pod, PodCondition, PodExtendedResourceClaimStatus,
    PodResourceClaim, PodResourceClaimStatus, PodSpec, PodStatus, ResourceRequirements,
    ResourceStatus, Taint,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::runtime::watcher;
use serde::{Deserialize, Deserializer};

use crate::inventory::allocation::equivalents::is_read_pod_annotation;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::inventory::vendors::is_read_annotation;
use crate::sources::convert::k8s_node::NodeParts;

/// The metadata the core and the watcher read: identity, version (for resuming watches), labels, and the
/// annotations `A` keeps: a node's sharing-layer lists and a pod's GPU share ([`Kept`]), none of Kueue's
/// objects'; the others are skipped unbuilt.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct SlimMeta<A> {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: A,
}

/// Annotations of a kind the core reads none of (Kueue's objects): skipped, never visited.
#[derive(Default)]
struct NoAnnotations;

impl<'de> Deserialize<'de> for NoAnnotations {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer)?;
        Ok(NoAnnotations)
    }
}

/// Which annotations a kind's slim metadata keeps.
trait KeepRule {
    fn keeps(key: &str) -> bool;
}

/// A node's: the sharing layers' device lists ([`is_read_annotation`]).
struct NodeRule;
impl KeepRule for NodeRule {
    fn keeps(key: &str) -> bool {
        is_read_annotation(key)
    }
}

/// A pod's: a GPU-sharing scheduler's share of a GPU ([`is_read_pod_annotation`]: KAI's `gpu-fraction`).
struct PodRule;
impl KeepRule for PodRule {
    fn keeps(key: &str) -> bool {
        is_read_pod_annotation(key)
    }
}

/// The annotations rule `R` keeps, the others skipped without building them.
struct Kept<R>(
    Option<BTreeMap<String, String>>,
    std::marker::PhantomData<R>,
);

impl<R> Default for Kept<R> {
    fn default() -> Self {
        Kept(None, std::marker::PhantomData)
    }
}

impl<'de, R: KeepRule> Deserialize<'de> for Kept<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit<R>(std::marker::PhantomData<R>);
        impl<'de, R: KeepRule> serde::de::Visitor<'de> for Visit<R> {
            type Value = Option<BTreeMap<String, String>>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of annotations")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut kept = BTreeMap::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if R::keeps(&key) {
                        kept.insert(key.into_owned(), map.next_value::<String>()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok((!kept.is_empty()).then_some(kept))
            }
        }
        deserializer
            .deserialize_option(Visit::<R>(std::marker::PhantomData))
            .map(|kept| Kept(kept, std::marker::PhantomData))
    }
}

/// `metadata` with the annotations `A` keeps.
fn meta_keeping<'de, D: Deserializer<'de>, A: Deserialize<'de> + Default>(
    deserializer: D,
    annotations: impl FnOnce(A) -> Option<BTreeMap<String, String>>,
) -> Result<ObjectMeta, D::Error> {
    let meta = Option::<SlimMeta<A>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(ObjectMeta {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        annotations: annotations(meta.annotations),
        ..Default::default()
    })
}

/// `metadata` without annotations: Kueue's objects.
pub(super) fn slim_meta<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<ObjectMeta, D::Error> {
    meta_keeping(deserializer, |_: NoAnnotations| None)
}

/// A node's `metadata`, with the annotations the core reads.
fn slim_node_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    meta_keeping(deserializer, |kept: Kept<NodeRule>| kept.0)
}

/// A pod's `metadata`, with the annotations the accounting reads.
fn slim_pod_meta<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    meta_keeping(deserializer, |kept: Kept<PodRule>| kept.0)
}

/// Implements `kube::Resource` for a slim view of a built-in kind.
macro_rules! slim_resource {
    ($slim:ty, $kind:literal, $plural:literal, $scope:ty) => {
        impl kube::Resource for $slim {
            type DynamicType = ();
            type Scope = $scope;
            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("")
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("v1")
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

/// A Node as the scanner reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct SlimNode {
    #[serde(deserialize_with = "slim_node_meta", default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<SlimNodeSpec>,
    #[serde(default)]
    status: Option<SlimNodeStatus>,
}

#[derive(Clone, Debug, Deserialize)]
struct SlimNodeSpec {
    unschedulable: Option<bool>,
    /// Vendors' operators taint nodes while they repartition GPUs (AMD's `amd-dcm=up:NoExecute`).
    taints: Option<Vec<Taint>>,
}

#[derive(Clone, Debug, Deserialize)]
struct SlimNodeStatus {
    capacity: Option<BTreeMap<String, Quantity>>,
    allocatable: Option<BTreeMap<String, Quantity>>,
    conditions: Option<Vec<NodeCondition>>,
}

slim_resource!(SlimNode, "Node", "nodes", k8s_openapi::ClusterResourceScope);

impl SlimNode {
    /// The core's view of this node, keeping the health conditions `table` names.
    pub fn to_cluster_node(&self, table: &HealthTable) -> ClusterNode {
        let spec = self.spec.as_ref();
        let status = self.status.as_ref();
        ClusterNode::from_parts(
            NodeParts {
                meta: &self.metadata,
                unschedulable: spec.and_then(|s| s.unschedulable),
                taints: spec.and_then(|s| s.taints.as_deref()),
                capacity: status.and_then(|s| s.capacity.as_ref()),
                allocatable: status.and_then(|s| s.allocatable.as_ref()),
                conditions: status.and_then(|s| s.conditions.as_deref()),
            },
            table,
        )
    }
}

/// A Pod as the allocation accounting reads it.
#[derive(Clone, Debug, Deserialize)]
pub struct SlimPod {
    #[serde(deserialize_with = "slim_pod_meta", default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<SlimPodSpec>,
    #[serde(default)]
    status: Option<SlimPodStatus>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimPodSpec {
    node_name: Option<String>,
    node_selector: Option<BTreeMap<String, String>>,
    overhead: Option<BTreeMap<String, Quantity>>,
    #[serde(default)]
    containers: Vec<SlimContainer>,
    init_containers: Option<Vec<SlimContainer>>,
    resource_claims: Option<Vec<PodResourceClaim>>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimContainer {
    #[serde(default)]
    name: String,
    resources: Option<ResourceRequirements>,
    restart_policy: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimPodStatus {
    phase: Option<String>,
    conditions: Option<Vec<PodCondition>>,
    resource_claim_statuses: Option<Vec<PodResourceClaimStatus>>,
    extended_resource_claim_status: Option<PodExtendedResourceClaimStatus>,
    init_container_statuses: Option<Vec<SlimContainerStatus>>,
    container_statuses: Option<Vec<SlimContainerStatus>>,
    ephemeral_container_statuses: Option<Vec<SlimContainerStatus>>,
}

/// A container's status as device health reads it (KEP-4680): its name and `allocatedResourcesStatus`;
/// the rest (state, image, restart count) is skipped.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimContainerStatus {
    #[serde(default)]
    name: String,
    allocated_resources_status: Option<Vec<ResourceStatus>>,
}

impl From<SlimContainerStatus> for ContainerStatus {
    fn from(slim: SlimContainerStatus) -> ContainerStatus {
        ContainerStatus {
            name: slim.name,
            allocated_resources_status: slim.allocated_resources_status,
            ..Default::default()
        }
    }
}

fn container_statuses(list: Option<Vec<SlimContainerStatus>>) -> Option<Vec<ContainerStatus>> {
    list.map(|list| list.into_iter().map(ContainerStatus::from).collect())
}

slim_resource!(SlimPod, "Pod", "pods", k8s_openapi::NamespaceResourceScope);

impl From<SlimContainer> for Container {
    fn from(slim: SlimContainer) -> Container {
        Container {
            name: slim.name,
            resources: slim.resources,
            restart_policy: slim.restart_policy,
            ..Default::default()
        }
    }
}

impl From<SlimPod> for Pod {
    fn from(slim: SlimPod) -> Pod {
        Pod {
            metadata: slim.metadata,
            spec: slim.spec.map(|s| PodSpec {
                node_name: s.node_name,
                node_selector: s.node_selector,
                overhead: s.overhead,
                containers: s.containers.into_iter().map(Container::from).collect(),
                init_containers: s
                    .init_containers
                    .map(|list| list.into_iter().map(Container::from).collect()),
                resource_claims: s.resource_claims,
                ..Default::default()
            }),
            status: slim.status.map(|s| PodStatus {
                phase: s.phase,
                conditions: s.conditions,
                resource_claim_statuses: s.resource_claim_statuses,
                extended_resource_claim_status: s.extended_resource_claim_status,
                init_container_statuses: container_statuses(s.init_container_statuses),
                container_statuses: container_statuses(s.container_statuses),
                ephemeral_container_statuses: container_statuses(s.ephemeral_container_statuses),
                ..Default::default()
            }),
        }
    }
}

/// A watch event of one type as an event of another (the slim view converted into the object the core reads).
pub fn map_event<A, B>(event: watcher::Event<A>, f: impl Fn(A) -> B) -> watcher::Event<B> {
    match event {
        watcher::Event::Apply(a) => watcher::Event::Apply(f(a)),
        watcher::Event::Delete(a) => watcher::Event::Delete(f(a)),
        watcher::Event::InitApply(a) => watcher::Event::InitApply(f(a)),
        watcher::Event::Init => watcher::Event::Init,
        watcher::Event::InitDone => watcher::Event::InitDone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::allocation::GpuPod;
    use crate::inventory::test_support::read;

    use crate::inventory::cluster_node::ClusterNode;
    use crate::inventory::{ScanInput, scan};
    use crate::sources::dump::parse_dump;

    #[test]
    fn slim_decoding_reads_what_full_decoding_reads() {
        for fixture in [
            "homelab-nodes.yaml",
            "gfd-nodes.yaml",
            "real-nodes.yaml",
            "allocation-dump.yaml",
            // Sharing layers' device lists beside the fixtures' own annotations: the lists are kept.
            "reading4/sharing-nodes.yaml",
        ] {
            let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
            let dump = parse_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
            let full: Vec<ClusterNode> = read(&dump.nodes);
            let slim: Vec<ClusterNode> = dump
                .nodes
                .iter()
                .map(|n| {
                    let slim = serde_json::from_value(serde_json::to_value(n).unwrap()).unwrap();
                    SlimNode::to_cluster_node(&slim, HealthTable::defaults())
                })
                .collect();
            assert!(
                full == slim,
                "{fixture}: the slim nodes differ from the stripped full ones"
            );
            if fixture.starts_with("reading4/") {
                assert!(
                    slim.iter().filter(|n| !n.registers.is_empty()).count() >= 8,
                    "{fixture}: the sharing layers' lists were dropped"
                );
                assert!(
                    slim.iter()
                        .flat_map(|n| n.registers.iter())
                        .all(|(key, _)| !key.starts_with("fixture.")),
                    "{fixture}: an annotation the core does not read was kept"
                );
            }
            assert_eq!(
                scan(ScanInput::nodes(&read(&dump.nodes))),
                scan(ScanInput::nodes(&slim)),
                "{fixture}"
            );
            let full_pods: Vec<Option<GpuPod>> = dump.pods.iter().map(GpuPod::from_pod).collect();
            let slim_pods: Vec<Option<GpuPod>> = dump
                .pods
                .iter()
                .map(|p| {
                    let slim: SlimPod =
                        serde_json::from_value(serde_json::to_value(p).unwrap()).unwrap();
                    GpuPod::from_pod(&Pod::from(slim))
                })
                .collect();
            assert_eq!(full_pods, slim_pods, "{fixture}: pods");
        }
    }
}
