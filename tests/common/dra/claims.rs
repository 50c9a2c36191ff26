//! Pods whose ResourceClaims (from templates, or shared) the real scheduler allocates, what it allocated, and
//! the inventory entries the operator makes of them.

use gpu_inventory_operator::crd::{GpuInventoryStatus, GpuNodeEntry};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceClaimTemplate};
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
pub use testkit::dra_objects::DRIVER;
use testkit::waits::Deadline;

use super::super::cluster_periods::ClusterPeriods;
use super::super::test_env::{DeleteOnDrop, TestEnv};
use super::super::waiting::wait_for;
use super::devices::CONVERGE;

/// Creates a pod pinned to `node` whose claim, made from a new ResourceClaimTemplate, asks for `count`
/// devices of `class`. Retried while the namespace's ServiceAccount does not exist yet.
pub async fn claim_pod(env: &TestEnv, name: &str, node: &str, class: &str, count: u32) {
    let request = json!({ "name": "gpu", "exactly": { "deviceClassName": class, "count": count } });
    template_pod(env, name, node, request).await;
}

/// Creates ResourceClaimTemplate `name` with one device request (`request` is a `DeviceRequest`) and pod
/// `name` pinned to `node` with a claim from it.
pub async fn template_pod(env: &TestEnv, name: &str, node: &str, request: Value) {
    claim_template(env, name, request).await;
    pod_with_claim(
        env,
        name,
        node,
        json!({ "resourceClaimTemplateName": name }),
    )
    .await;
}

/// Creates DeviceClass `name` (cluster-scoped, so named after the test's id by the caller) with `spec`, and
/// returns it as stored with the guard that deletes it.
pub async fn test_device_class(
    env: &TestEnv,
    name: &str,
    spec: Value,
) -> (DeviceClass, DeleteOnDrop) {
    let cleanup = DeleteOnDrop(vec![format!("deviceclass/{name}")]);
    let class: DeviceClass = serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": { "name": name },
        "spec": spec
    }))
    .unwrap();
    let stored = Api::<DeviceClass>::all(env.client.clone())
        .create(&PostParams::default(), &class)
        .await
        .unwrap_or_else(|e| panic!("creating DeviceClass {name}: {e}"));
    (stored, cleanup)
}

/// Creates ResourceClaimTemplate `name` with one device request (`request` is a `DeviceRequest`).
pub async fn claim_template(env: &TestEnv, name: &str, request: Value) {
    let templates: Api<ResourceClaimTemplate> = Api::namespaced(env.client.clone(), &env.namespace);
    let template: ResourceClaimTemplate = serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": { "name": name },
        "spec": { "spec": { "devices": { "requests": [request] } } }
    }))
    .unwrap();
    templates
        .create(&PostParams::default(), &template)
        .await
        .unwrap_or_else(|e| panic!("creating ResourceClaimTemplate {name}: {e}"));
}

/// Creates ResourceClaim `name` with one device request, for pods to share (`resourceClaimName`).
pub async fn shared_claim(env: &TestEnv, name: &str, request: Value) {
    let claim: ResourceClaim = serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": { "name": name },
        "spec": { "devices": { "requests": [request] } }
    }))
    .unwrap();
    Api::<ResourceClaim>::namespaced(env.client.clone(), &env.namespace)
        .create(&PostParams::default(), &claim)
        .await
        .unwrap_or_else(|e| panic!("creating ResourceClaim {name}: {e}"));
}

/// Creates a pod pinned to `node` with one pod claim `gpu` from `source` (`{"resourceClaimTemplateName": ..}`
/// or `{"resourceClaimName": ..}`). Retried while the namespace's ServiceAccount does not exist yet.
pub async fn pod_with_claim(env: &TestEnv, name: &str, node: &str, source: Value) {
    let mut claim = json!({ "name": "gpu" });
    claim
        .as_object_mut()
        .unwrap()
        .extend(source.as_object().unwrap().clone());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "nodeSelector": { "kubernetes.io/hostname": node },
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "claims": [{ "name": "gpu" }] } }],
            "resourceClaims": [claim]
        }
    }))
    .unwrap();
    create_pod(env, pod).await;
}

/// Creates a pod of the test's namespace once its ServiceAccount exists ([`TestEnv::create_pod`]); its name.
pub async fn create_pod(env: &TestEnv, pod: Pod) -> String {
    env.create_pod(pod).await
}

/// The inventory entry of `node` in `status`.
pub fn entry<'a>(status: &'a GpuInventoryStatus, node: &str) -> Option<&'a GpuNodeEntry> {
    status.nodes.iter().find(|n| n.name == node)
}

/// The reasons of an entry's issues, in order.
pub fn reasons(e: &GpuNodeEntry) -> Vec<&str> {
    e.issues.iter().map(|i| i.reason.as_str()).collect()
}

/// Waits (up to [`CONVERGE`]) until the test's inventory lists `node` with an entry `check` accepts; the
/// status and the entry.
pub async fn wait_entry(
    env: &TestEnv,
    what: &str,
    node: &str,
    check: impl Fn(&GpuNodeEntry) -> bool,
) -> (GpuInventoryStatus, GpuNodeEntry) {
    let inventory = env
        .wait_inventory(&env.inventory_name(), CONVERGE, what, |s| {
            entry(s, node).is_some_and(&check)
        })
        .await;
    let status = inventory.status.expect("a status");
    let e = entry(&status, node).expect("the entry").clone();
    (status, e)
}

/// How long kube-scheduler may take to allocate a new pod's claims: [`ClusterPeriods::scheduling`].
fn allocation() -> Deadline {
    ClusterPeriods::get().scheduling()
}

/// Waits until the shared claim `name` is allocated and reserved for `pods` pods; returns its devices.
pub async fn shared_claim_reserved(env: &TestEnv, name: &str, pods: usize) -> Vec<String> {
    let claims: Api<ResourceClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    wait_for(
        allocation(),
        &format!("claim {name} reserved for {pods} pods"),
        || async {
            let claim = claims
                .get(name)
                .await
                .map_err(|e| format!("reading claim {name}: {e}"))?;
            let status = claim.status.ok_or("no status")?;
            let reserved = status.reserved_for.as_ref().map_or(0, Vec::len);
            match allocated_devices(&status) {
                Some(devices) if reserved == pods => Ok(devices),
                devices => Err(format!("reserved for {reserved} pods, devices {devices:?}")),
            }
        },
    )
    .await
}

/// The devices the claim generated for `pod`'s claim `gpu` was allocated (waits for the allocation).
pub async fn pod_claim_devices(env: &TestEnv, pod: &str) -> Vec<String> {
    let claims: Api<ResourceClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    wait_for(
        allocation(),
        &format!("the claim of pod {pod} allocated"),
        || async {
            let list = claims
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing claims: {e}"))?;
            let claim = list
                .items
                .into_iter()
                .find(|c| c.owner_references().iter().any(|o| o.name == pod))
                .ok_or("no claim owned by the pod yet")?;
            claim
                .status
                .as_ref()
                .and_then(allocated_devices)
                .ok_or_else(|| format!("claim {} not allocated", claim.name_any()))
        },
    )
    .await
}

fn allocated_devices(
    status: &k8s_openapi::api::resource::v1::ResourceClaimStatus,
) -> Option<Vec<String>> {
    let results = status
        .allocation
        .as_ref()?
        .devices
        .as_ref()?
        .results
        .as_ref()?;
    Some(results.iter().map(|r| r.device.clone()).collect())
}

/// Labels the test's namespace `resource.kubernetes.io/admin-access=true`: only there may claims ask for
/// `adminAccess` (DRAAdminAccess).
pub async fn allow_admin_access(env: &TestEnv) {
    let body =
        json!({ "metadata": { "labels": { "resource.kubernetes.io/admin-access": "true" } } });
    Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .patch(&env.namespace, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap_or_else(|e| panic!("labelling namespace {}: {e}", env.namespace));
}

/// Waits until the scheduler has allocated the claims of every pod of the test's namespace named in `pods`.
pub async fn claims_allocated(env: &TestEnv, pods: &[&str]) -> std::time::Instant {
    let claims: Api<ResourceClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    wait_for(
        allocation(),
        &format!("claims of {pods:?} allocated"),
        || async {
            let list = claims
                .list(&ListParams::default())
                .await
                .map_err(|e| format!("listing claims: {e}"))?;
            let allocated = |pod: &str| {
                list.items.iter().any(|c| {
                    c.owner_references().iter().any(|o| o.name == pod)
                        && c.status
                            .as_ref()
                            .and_then(|s| s.allocation.as_ref())
                            .is_some()
                })
            };
            let waiting: Vec<&&str> = pods.iter().filter(|p| !allocated(p)).collect();
            if waiting.is_empty() {
                Ok(std::time::Instant::now())
            } else {
                Err(format!("no allocated claim yet for {waiting:?}"))
            }
        },
    )
    .await
}

/// Waits until no claim of the test's namespace is allocated any more: KWOK finishes the pods' deletion, and
/// the resourceclaim controller deletes the claims generated for them (one reaction each).
pub async fn claims_released(env: &TestEnv) -> std::time::Instant {
    let claims: Api<ResourceClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    let deadline = Deadline::reaction("KWOK finishing the pods' deletion").then(
        ClusterPeriods::get()
            .controller_reaction("kube-controller-manager's resourceclaim controller"),
    );
    wait_for(deadline, "the pods' claims released", || async {
        let list = claims
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("listing claims: {e}"))?;
        let allocated: Vec<String> = list
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.allocation.as_ref())
                    .is_some()
            })
            .map(|c| c.name_any())
            .collect();
        if allocated.is_empty() {
            Ok(std::time::Instant::now())
        } else {
            Err(format!("still allocated: {allocated:?}"))
        }
    })
    .await
}
