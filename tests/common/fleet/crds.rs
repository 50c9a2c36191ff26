//! The two multi-cluster APIs as upstream defines them (tests/fixtures/fleet: each file's header names its source
//! and commit), installed into a cluster, and a hub's `ClusterProfile` written as a cluster manager writes it.
//!
//! - `ClusterProperty` (about.k8s.io, KEP-2149; cluster-scoped, `spec.value`): a cluster's facts about itself,
//!   e.g. `cluster.clusterset.k8s.io`. The fixture serves `about.k8s.io/v1beta1` only.
//! - `ClusterProfile` (multicluster.x-k8s.io/v1alpha1, KEP-4322; namespaced, on the hub): a cluster manager's
//!   entry per member cluster, its `status.properties` a list of `{name, value, lastObservedTime}`.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::{Client, Resource};
use serde_json::json;
use testkit::waits::Deadline;

use super::cluster::now;
use crate::common::waiting::wait_for;

/// kubernetes-sigs/about-api's ClusterProperty CRD, with the `api-approved.kubernetes.io` annotation its
/// kustomization adds (about.k8s.io is a protected group: the API server refuses the CRD without it).
pub const CLUSTER_PROPERTY_CRD: &str =
    include_str!("../../fixtures/fleet/about.k8s.io_clusterproperties.yaml");

/// kubernetes-sigs/cluster-inventory-api's ClusterProfile CRD, verbatim.
pub const CLUSTER_PROFILE_CRD: &str =
    include_str!("../../fixtures/fleet/multicluster.x-k8s.io_clusterprofiles.yaml");

/// The cluster manager the tests' ClusterProfiles name (`spec.clusterManager.name`, and the
/// `x-k8s.io/cluster-manager` label upstream recommends).
pub const CLUSTER_MANAGER: &str = "gpu-inventory-tests";

/// The CRD install's deadline: the API server accepts the names and starts serving (Established), then its
/// discovery lists the resource. Each is one reaction of the API server; 30 s covers both on a loaded machine.
const CRD_SERVED: Duration = Duration::from_secs(30);

/// Creates the CRD of `yaml` (one document; already there is fine) and waits until it is Established and
/// discovery lists its plural (kubectl and clients that discover find it). Panics with what it last saw.
pub async fn install_crd(client: &Client, yaml: &str) {
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(yaml).unwrap_or_else(|e| panic!("parsing a CRD fixture: {e}"));
    let name = crd.meta().name.clone().expect("the CRD has a name");
    let group_version = format!(
        "{}/{}",
        crd.spec.group,
        crd.spec
            .versions
            .iter()
            .find(|v| v.served)
            .map(|v| v.name.as_str())
            .expect("the CRD serves a version")
    );
    let plural = crd.spec.names.plural.clone();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating the CRD {name}: {e}"),
    }
    let deadline = Deadline::new(
        CRD_SERVED,
        "the API server establishing a new CRD, then listing it in discovery: two reactions",
    );
    wait_for(
        deadline,
        &format!("the CRD {name} Established and {plural} in discovery of {group_version}"),
        || async {
            let crd = api
                .get(&name)
                .await
                .map_err(|e| format!("reading it: {e}"))?;
            let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
            if !conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
            {
                let seen: Vec<String> = conditions
                    .iter()
                    .map(|c| {
                        format!(
                            "{}={} ({})",
                            c.type_,
                            c.status,
                            c.message.as_deref().unwrap_or("")
                        )
                    })
                    .collect();
                return Err(format!("conditions {seen:?}"));
            }
            if !served(client, &group_version, &plural).await {
                return Err(format!(
                    "Established, but discovery of {group_version} lacks {plural}"
                ));
            }
            Ok(())
        },
    )
    .await;
}

/// Whether discovery lists `plural` in `group_version` (e.g. `multicluster.x-k8s.io/v1alpha1`, `clusterprofiles`).
pub async fn served(client: &Client, group_version: &str, plural: &str) -> bool {
    client
        .list_api_group_resources(group_version)
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == plural))
}

/// `ClusterProfile` at multicluster.x-k8s.io/v1alpha1, for `Api<DynamicObject>`.
pub fn cluster_profile_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("multicluster.x-k8s.io", "v1alpha1", "ClusterProfile");
    ApiResource::from_gvk_with_plural(&gvk, "clusterprofiles")
}

/// Writes a ClusterProfile the way a KEP-4322 cluster manager does: the namespace if missing, the object
/// (`spec.displayName` = `name`, `spec.clusterManager.name` = [`CLUSTER_MANAGER`], which the CRD makes
/// immutable; an existing one is kept), then `status.properties` through the status subresource, replaced by
/// `properties` (`{name, value, lastObservedTime: now}` each; names and values must not be empty).
pub async fn write_cluster_profile(
    client: &Client,
    namespace: &str,
    name: &str,
    properties: &[(&str, &str)],
) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap();
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating namespace {namespace}: {e}"),
    }
    let resource = cluster_profile_resource();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
    let mut profile = DynamicObject::new(name, &resource).within(namespace);
    profile
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("x-k8s.io/cluster-manager".into(), CLUSTER_MANAGER.into());
    profile.data = json!({
        "spec": { "displayName": name, "clusterManager": { "name": CLUSTER_MANAGER } }
    });
    match api.create(&PostParams::default(), &profile).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating ClusterProfile {namespace}/{name}: {e}"),
    }
    let observed = now();
    let properties: Vec<_> = properties
        .iter()
        .map(|(n, v)| json!({ "name": n, "value": v, "lastObservedTime": observed }))
        .collect();
    // A JSON merge patch replaces the whole list: the profile holds exactly `properties`.
    let body = json!({ "status": { "properties": properties } });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap_or_else(|e| panic!("writing the status of ClusterProfile {namespace}/{name}: {e}"));
}
