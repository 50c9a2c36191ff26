//! DRA objects for the integration tests: NVIDIA's DeviceClasses, ResourceSlices shaped like NVIDIA's driver
//! publishes them (owned by their Node, so the garbage collector deletes them with it), and pods whose
//! ResourceClaimTemplates the real scheduler allocates.

use std::time::Duration;

use gpu_inventory_operator::crd::{GpuInventoryStatus, GpuNodeEntry};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{
    DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
pub use testkit::dra_objects::DRIVER;
use testkit::waits::{Deadline, LOAD_ALLOWANCE};

use super::cluster_access::{RequiredApi, require_api};
use super::cluster_periods::ClusterPeriods;
use super::test_env::{DeleteOnDrop, TEST_LABEL, TestEnv};
use super::waiting::wait_for;

pub const WHOLE: &str = "gpu.nvidia.com/gpu";
/// How long an operator may take from its start to showing what the DRA objects say: its start-up, one
/// reaction to the objects' watch events (each [`LOAD_ALLOWANCE`]), and one periodic pass as the backstop (the
/// DRA tests run it with `--requeue 2s`).
pub const CONVERGE: Duration = Duration::from_secs(2 * LOAD_ALLOWANCE.as_secs() + 2);

/// Whether the server serves `resource.k8s.io/v1`. A server that should (Kubernetes 1.34 or newer) but does
/// not is a failure; an older one is said loudly, and the caller returns (the no-DRA behaviour has its own
/// test, `the_operator_says_once_whether_dra_is_served`).
pub async fn require_dra(client: &Client, test: &str) {
    let api = RequiredApi {
        group_version: "resource.k8s.io/v1",
        resource: "resourceslices",
        since_minor: 34,
        missing: "should serve resource.k8s.io/v1 (GA since 1.34) but does not",
        too_old: "it serves no resource.k8s.io/v1 (DRA is GA from 1.34); \
                  the_operator_says_once_whether_dra_is_served checks the operator there",
    };
    require_api(client, &api, test).await
}

/// A Ready KWOK node with room for pods and no GPU labels or extended resources: a GPU Operator node in DRA
/// mode, whose GPUs only its ResourceSlices tell.
pub fn dra_node(name: &str) -> Node {
    let list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110" });
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": { "name": name },
        "status": { "capacity": list, "allocatable": list,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "kubelet is posting ready status" }] }
    }))
    .unwrap()
}

/// NVIDIA's DeviceClasses as its DRA driver's chart installs them (CEL on the driver and the `type`
/// attribute). Cluster-scoped and shared by the tests: applied, never deleted.
pub async fn ensure_device_classes(client: &Client) {
    let api: Api<DeviceClass> = Api::all(client.clone());
    for (name, kind) in [("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig")] {
        let class: DeviceClass = serde_json::from_value(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": { "name": name },
            "spec": { "selectors": [{ "cel": { "expression": format!(
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{kind}'") } }] }
        }))
        .unwrap();
        api.patch(
            name,
            &PatchParams::apply("gpuinv-tests").force(),
            &Patch::Apply(&class),
        )
        .await
        .unwrap_or_else(|e| panic!("applying DeviceClass {name}: {e}"));
    }
}

/// A whole-GPU device with the attributes NVIDIA's driver publishes (25.8 and later).
pub fn gpu(index: u32, node: &str) -> Value {
    json!({
        "name": format!("gpu-{index}"),
        "attributes": {
            "type": { "string": "gpu" },
            "uuid": { "string": format!("GPU-{node}-{index}") },
            "productName": { "string": "NVIDIA A100-SXM4-80GB" },
            "brand": { "string": "Nvidia" },
            "architecture": { "string": "Ampere" },
            "cudaComputeCapability": { "version": "8.0.0" },
            "driverVersion": { "version": "580.95.5" },
            "resource.kubernetes.io/pciBusID": { "string": format!("0000:{:02x}:00.0", index + 7) }
        },
        "capacity": { "memory": { "value": "80Gi" } }
    })
}

/// A MIG device of the GPU `parent` (static MIG: the GPU itself is not published).
pub fn mig(name: &str, profile: &str, parent: &str) -> Value {
    json!({
        "name": name,
        "attributes": {
            "type": { "string": "mig" }, "profile": { "string": profile },
            "parentUUID": { "string": parent },
            "productName": { "string": "NVIDIA A100-SXM4-80GB" }
        },
        "capacity": { "memory": { "value": "9856Mi" } }
    })
}

/// Publishes (creates or replaces) slice `name` of `node`'s pool, owned by the node.
pub async fn publish_slice(
    env: &TestEnv,
    node: &str,
    name: &str,
    generation: i64,
    slice_count: i64,
    devices: Vec<Value>,
) {
    let pool = Pool {
        driver: DRIVER,
        generation,
        slice_count,
    };
    publish_pool_slice(env, node, name, pool, devices).await;
}

/// Where a slice belongs: its driver, and its pool's generation and slice count (the pool is named after
/// the node, as NVIDIA's driver names it).
pub struct Pool<'a> {
    pub driver: &'a str,
    pub generation: i64,
    pub slice_count: i64,
}

/// Publishes (creates or replaces) slice `name` of `node`'s pool of `pool.driver`, owned by the node.
pub async fn publish_pool_slice(
    env: &TestEnv,
    node: &str,
    name: &str,
    pool: Pool<'_>,
    devices: Vec<Value>,
) {
    apply_slice(env, node, name, pool, "devices", json!(devices)).await;
}

/// Publishes slice `name` of `node`'s pool holding only shared counter sets (`counters`:
/// `spec.sharedCounters`), as partitionable pools keep them since 1.35.
pub async fn publish_counter_slice(
    env: &TestEnv,
    node: &str,
    name: &str,
    pool: Pool<'_>,
    counters: Value,
) {
    apply_slice(env, node, name, pool, "sharedCounters", counters).await;
}

/// Applies slice `name` of `node`'s pool, owned by the node, with `spec.<field>` = `value` (its devices or
/// its shared counters).
async fn apply_slice(
    env: &TestEnv,
    node: &str,
    name: &str,
    pool: Pool<'_>,
    field: &str,
    value: Value,
) {
    let uid = Api::<Node>::all(env.client.clone())
        .get(node)
        .await
        .expect("the slice's node")
        .uid()
        .expect("a uid");
    let mut slice = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {
            "name": name, "labels": { TEST_LABEL: env.id },
            "ownerReferences": [{ "apiVersion": "v1", "kind": "Node", "name": node, "uid": uid }]
        },
        "spec": {
            "driver": pool.driver, "nodeName": node,
            "pool": { "name": node, "generation": pool.generation, "resourceSliceCount": pool.slice_count }
        }
    });
    slice["spec"][field] = value;
    let slice: ResourceSlice = serde_json::from_value(slice).unwrap();
    Api::<ResourceSlice>::all(env.client.clone())
        .patch(
            name,
            &PatchParams::apply("gpuinv-tests").force(),
            &Patch::Apply(&slice),
        )
        .await
        .unwrap_or_else(|e| panic!("publishing ResourceSlice {name}: {e}"));
}

pub async fn delete_slice(env: &TestEnv, name: &str) {
    Api::<ResourceSlice>::all(env.client.clone())
        .delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting ResourceSlice {name}: {e}"));
}

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

/// AMD's DRA driver (`gpu.amd.com`).
pub const AMD_DRIVER: &str = "gpu.amd.com";

/// An MI300X partitionable in KEP-4815's terms, with the device shapes of AMD's DRA driver (`type`
/// `amdgpu`/`amdgpu-partition`, `partitionProfile`, a `deviceID` the GPU and its partitions share): its
/// counter set (eight XCDs and 192Gi, for a slice of its own), and the whole GPU (`spx_nps1`), two halves
/// (`dpx_nps1`) and eight eighths (`cpx_nps1`) as alternatives consuming it. AMD's driver publishes no
/// counters yet (tests/fixtures/vendors); every device of one profile costs the same, which is what
/// KEP-5677's `partitionSummary` groups. Returns the counter sets and the devices.
pub fn amd_partitionable_gpu(device_id: &str) -> (Value, Vec<Value>) {
    let counters = json!([{ "name": "gpu-0-counters",
        "counters": { "xcds": { "value": "8" }, "memory": { "value": "192Gi" } } }]);
    let device = |name: String, kind: &str, profile: &str, xcds: u32| {
        let memory = format!("{}Gi", 24 * xcds);
        json!({
            "name": name,
            "attributes": {
                "type": { "string": kind }, "partitionProfile": { "string": profile },
                "deviceID": { "string": device_id },
                "productName": { "string": "AMD_Instinct_MI300X_OAM" }
            },
            "capacity": { "memory": { "value": memory } },
            "consumesCounters": [{ "counterSet": "gpu-0-counters",
                "counters": { "xcds": { "value": xcds.to_string() }, "memory": { "value": memory } } }]
        })
    };
    let mut devices = vec![device("gpu-0".into(), "amdgpu", "spx_nps1", 8)];
    for i in 0..2 {
        devices.push(device(
            format!("gpu-0-dpx-{i}"),
            "amdgpu-partition",
            "dpx_nps1",
            4,
        ));
    }
    for i in 0..8 {
        devices.push(device(
            format!("gpu-0-cpx-{i}"),
            "amdgpu-partition",
            "cpx_nps1",
            1,
        ));
    }
    (counters, devices)
}
