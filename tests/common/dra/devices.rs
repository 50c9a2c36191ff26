//! The DRA objects on the cluster's side: the API served, DRA nodes, NVIDIA's DeviceClasses, ResourceSlices
//! shaped like NVIDIA's driver publishes them (owned by their Node, so the garbage collector deletes them with
//! it), and AMD's partitionable GPU.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceSlice};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
pub use testkit::dra_objects::DRIVER;
use testkit::waits::LOAD_ALLOWANCE;

use super::super::cluster_access::{RequiredApi, require_api};
use super::super::test_env::{TEST_LABEL, TestEnv};

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
