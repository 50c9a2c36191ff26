//! Every vendor on the real scheduler and API server: AMD and Intel device-plugin nodes (KWOK) with pods the
//! scheduler places counted as allocated and free beside an NVIDIA node, their products and free devices
//! never summed across vendors (`products[]`, `freeByVendor`, `kubectl get gpuinventory`); and an AMD MI300X
//! published by AMD's DRA driver (`gpu.amd.com`) allocated by the scheduler through a claim.

mod common;

use std::process::Command;

use common::allocation::node;
use common::dra::{self, Pool, wait_entry};
use common::{TestEnv, eventually, kubeconfig_path};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use serde_json::{Value, json};

/// Creates a pod pinned to `node` asking for `count` of `resource`, and waits until the scheduler binds it.
async fn bound_pod(env: &TestEnv, name: &str, node: &str, resource: &str, count: u32) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "nodeSelector": { "kubernetes.io/hostname": node },
            "containers": [{ "name": "train", "image": "rocm/pytorch:latest",
                             "resources": { "limits": { resource: count.to_string() } } }]
        }
    }))
    .unwrap();
    dra::create_pod(env, pod).await;
    assert_eq!(bound_to(env, name).await, node, "pod {name}");
}

/// Waits until kube-scheduler has bound pod `name`; the node.
async fn bound_to(env: &TestEnv, name: &str) -> String {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(dra::CONVERGE, &format!("pod {name} bound"), || async {
        pods.get(name).await.ok()?.spec?.node_name
    })
    .await
}

/// Deletes a cluster-scoped object when the test ends, passed or not.
#[tokio::test]
async fn amd_intel_and_nvidia_nodes_are_counted_by_vendor_with_pods_the_scheduler_placed() {
    let env = TestEnv::new("vendors-mixed").await;
    let amd = env
        .create_node(node(
            "mi300x",
            json!({ "amd.com/gpu.product-name": "AMD_Instinct_MI300X_OAM", "amd.com/gpu.vram": "192G",
                    "amd.com/gpu.family": "AI", "amd.com/gpu.device-id": "74a1" }),
            &[("amd.com/gpu", "8")],
        ))
        .await;
    let intel = env
        .create_node(node(
            "flex",
            json!({ "gpu.intel.com/product": "Flex_170", "gpu.intel.com/family": "Flex_Series",
                    "gpu.intel.com/device.count": "2", "gpu.intel.com/memory.max": "34359738368" }),
            // millicores is GPU Aware Scheduling's accounting resource, never a device.
            &[
                ("gpu.intel.com/i915", "2"),
                ("gpu.intel.com/millicores", "2000"),
            ],
        ))
        .await;
    let nvidia = env
        .create_node(node(
            "h100",
            json!({ "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8" }),
            &[("nvidia.com/gpu", "8")],
        ))
        .await;
    for n in [&amd, &intel, &nvidia] {
        env.wait_schedulable(n).await;
    }
    bound_pod(&env, "amd-2", &amd, "amd.com/gpu", 2).await;
    bound_pod(&env, "amd-1", &amd, "amd.com/gpu", 1).await;
    bound_pod(&env, "intel-1", &intel, "gpu.intel.com/i915", 1).await;
    bound_pod(&env, "nvidia-4", &nvidia, "nvidia.com/gpu", 4).await;
    let _operator = env.start_operator("30s");

    let (status, amd_entry) = wait_entry(&env, "AMD's pods allocated", &amd, |e| {
        e.allocated.get("amd.com/gpu") == Some(&3)
    })
    .await;
    assert_eq!(amd_entry.vendor.as_deref(), Some("amd"));
    assert_eq!(
        (
            amd_entry.count,
            amd_entry.memory_mib,
            amd_entry.free.get("amd.com/gpu")
        ),
        (8, Some(192 * 1024), Some(&5))
    );
    assert!(amd_entry.issues.is_empty(), "{:?}", amd_entry.issues);
    let intel_entry = dra::entry(&status, &intel).expect("the Intel node");
    assert_eq!(intel_entry.vendor.as_deref(), Some("intel"));
    assert_eq!(
        (
            intel_entry.count,
            intel_entry.free.get("gpu.intel.com/i915")
        ),
        (2, Some(&1))
    );
    assert_eq!(
        intel_entry.memory_mib,
        Some(16 * 1024),
        "memory.max is every GPU's bytes"
    );
    assert!(
        !intel_entry
            .capacity
            .contains_key("gpu.intel.com/millicores"),
        "{:?}",
        intel_entry.capacity
    );
    assert!(intel_entry.issues.is_empty(), "{:?}", intel_entry.issues);

    // Never summed: one product per vendor and model, and free devices per vendor.
    let products: Vec<(&str, Option<&str>, u64, u64)> = status
        .products
        .iter()
        .map(|p| (p.name.as_str(), p.vendor.as_deref(), p.gpus, p.free_gpus))
        .collect();
    assert_eq!(
        products,
        [
            ("AMD_Instinct_MI300X_OAM", Some("amd"), 8, 5),
            ("Flex_170", Some("intel"), 2, 1),
            ("NVIDIA-H100-80GB-HBM3", Some("nvidia"), 8, 4),
        ]
    );
    assert_eq!(
        status.free_by_vendor.as_deref(),
        Some("amd=5,intel=1,nvidia=4")
    );
    assert_eq!(status.free_gpus, 10);

    let table = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["get", "gpuinventory", &env.inventory_name()])
        .output()
        .expect("kubectl");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("FREE-BY-VENDOR"), "{text}");
    assert!(text.contains("amd=5,intel=1,nvidia=4"), "{text}");

    let gpunode = env
        .wait_gpunode(&amd, dra::CONVERGE, "the AMD node's GpuNode", |s| {
            s.vendor.as_deref() == Some("amd")
        })
        .await;
    assert_eq!(
        gpunode
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("homelab.youngju.dev/vendor"))
            .map(String::as_str),
        Some("amd")
    );
    env.cleanup().await;
}

/// A device of AMD's DRA driver (`gpu.amd.com`) as its docs show one: a whole, unpartitioned MI300X.
fn mi300x(index: u32) -> Value {
    json!({
        "name": format!("gpu-{index}-128"),
        "attributes": {
            "type": { "string": "amdgpu" },
            "deviceID": { "string": format!("99491394031889249{index}") },
            "productName": { "string": "AMD_Instinct_MI300X_OAM" },
            "partitionProfile": { "string": "spx_nps1" },
            "family": { "string": "AI" },
            "driverVersion": { "version": "6.12.12" }
        },
        "capacity": { "memory": { "value": "196592Mi" }, "computeUnits": { "value": "304" } }
    })
}

#[tokio::test]
async fn an_amd_mi300x_of_amds_dra_driver_is_allocated_by_the_scheduler_through_a_claim() {
    let env = TestEnv::new("vendors-amd-dra").await;
    dra::require_dra(&env.client, "vendors-amd-dra").await;
    let class = format!("{}-gpu.amd.com", env.id);
    let selects =
        "device.driver == 'gpu.amd.com' && device.attributes['gpu.amd.com'].type == 'amdgpu'";
    let _class = dra::test_device_class(
        &env,
        &class,
        json!({ "selectors": [{ "cel": { "expression": selects } }] }),
    )
    .await;
    let node = env.create_node(dra::dra_node("mi300x-dra")).await;
    let pool = Pool {
        driver: "gpu.amd.com",
        generation: 1,
        slice_count: 1,
    };
    dra::publish_pool_slice(
        &env,
        &node,
        &format!("{node}-gpu.amd.com"),
        pool,
        vec![mi300x(0), mi300x(1)],
    )
    .await;
    env.wait_schedulable(&node).await;
    // The default --dra-driver reads every known driver, AMD's among them.
    let _operator = env.start_operator("30s");
    wait_entry(&env, "the AMD DRA node", &node, |e| e.count == 2).await;

    dra::claim_pod(&env, "train", &node, &class, 1).await;
    assert_eq!(bound_to(&env, "train").await, node);
    let (status, e) = wait_entry(&env, "the claim's MI300X allocated", &node, |e| {
        e.allocated.get("gpu.amd.com/gpu") == Some(&1)
    })
    .await;
    assert_eq!(e.vendor.as_deref(), Some("amd"));
    assert_eq!(e.product.as_deref(), Some("AMD_Instinct_MI300X_OAM"));
    assert_eq!((e.count, e.memory_mib), (2, Some(196_592)));
    assert_eq!(e.free.get("gpu.amd.com/gpu"), Some(&1));
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert_eq!(status.free_by_vendor.as_deref(), Some("amd=1"));
    env.cleanup().await;
}
