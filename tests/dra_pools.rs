//! DRA pools on the real API server: a pool missing a slice (`DraPoolIncomplete`, nothing free) until its
//! last slice lands, a generation roll-over that replaces the devices, a tainted device (`GpuDeviceTainted`,
//! unavailable), and a node deleted with its slices (the garbage collector's doing) next to a node migrated
//! from the device plugin (capacity kept, allocatable 0: no false `GpusNotAllocatable`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::TestEnv;
use common::dra::{self, WHOLE, entry, reasons};
use gpu_inventory_operator::crd::GpuNodeEntry;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::ResourceSlice;
use kube::api::Api;
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(30);

fn dra_node(name: &str, capacity: &[(&str, &str)], allocatable: &[(&str, &str)]) -> Node {
    let list = |extra: &[(&str, &str)]| {
        let mut list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110" });
        for (k, v) in extra {
            list[*k] = json!(v);
        }
        list
    };
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node", "metadata": { "name": name },
        "status": { "capacity": list(capacity), "allocatable": list(allocatable),
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "kubelet is posting ready status" }] }
    }))
    .unwrap()
}

/// The entry of `node` once the test's inventory shows one `check` accepts.
async fn wait_entry(
    env: &TestEnv,
    what: &str,
    node: &str,
    check: impl Fn(&GpuNodeEntry) -> bool,
) -> GpuNodeEntry {
    dra::wait_entry(env, what, node, check).await.1
}

fn whole(e: &GpuNodeEntry) -> (String, String, u64) {
    (
        e.capacity.get(WHOLE).cloned().unwrap_or_default(),
        e.allocatable.get(WHOLE).cloned().unwrap_or_default(),
        e.free.get(WHOLE).copied().unwrap_or(99),
    )
}

fn gpus(node: &str, range: std::ops::Range<u32>) -> Vec<serde_json::Value> {
    range.map(|i| dra::gpu(i, node)).collect()
}

#[tokio::test]
async fn an_incomplete_pool_is_an_issue_until_its_last_slice_and_a_new_generation_replaces_the_devices()
 {
    let env = TestEnv::new("dra-pool").await;
    dra::require_dra(&env.client, "dra-pool").await;
    let node = env.create_node(dra_node("pool", &[], &[])).await;
    dra::publish_slice(&env, &node, &format!("{node}-a"), 1, 2, gpus(&node, 0..4)).await;
    let _operator = env.start_operator("30s");
    let e = wait_entry(&env, "pool incomplete", &node, |e| {
        reasons(e) == ["DraPoolIncomplete"]
    })
    .await;
    assert_eq!(whole(&e), ("4".into(), "0".into(), 0), "seen but not free");
    assert!(
        e.issues[0].message.contains(&format!(
            "gpu.nvidia.com/{node} generation 1 has 1 of 2 slices"
        )),
        "{}",
        e.issues[0].message
    );

    dra::publish_slice(&env, &node, &format!("{node}-b"), 1, 2, gpus(&node, 4..8)).await;
    let e = wait_entry(&env, "pool complete", &node, |e| e.issues.is_empty()).await;
    assert_eq!(whole(&e), ("8".into(), "8".into(), 8));
    assert_eq!(e.count, 8);

    // The driver rewrites its pool as generation 2 in one slice (two GPUs gone): the old generation's
    // slices no longer count, even before the driver deletes them.
    dra::publish_slice(&env, &node, &format!("{node}-g2"), 2, 1, gpus(&node, 0..6)).await;
    let e = wait_entry(&env, "generation 2", &node, |e| e.count == 6).await;
    assert_eq!(whole(&e), ("6".into(), "6".into(), 6));
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    dra::delete_slice(&env, &format!("{node}-a")).await;
    dra::delete_slice(&env, &format!("{node}-b")).await;
    let e = wait_entry(&env, "old generation deleted", &node, |e| e.count == 6).await;
    assert_eq!(whole(&e), ("6".into(), "6".into(), 6));
}

#[tokio::test]
async fn a_tainted_device_is_unavailable_with_gpu_device_tainted() {
    let env = TestEnv::new("dra-taint").await;
    dra::require_dra(&env.client, "dra-taint").await;
    let node = env.create_node(dra_node("taint", &[], &[])).await;
    let mut devices = gpus(&node, 0..4);
    devices[2]["taints"] =
        json!([{ "key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute" }]);
    let slice = format!("{node}-gpu");
    dra::publish_slice(&env, &node, &slice, 1, 1, devices).await;
    let stored = Api::<ResourceSlice>::all(env.client.clone())
        .get(&slice)
        .await
        .unwrap();
    let kept = stored.spec.devices.unwrap_or_default()[2]
        .taints
        .as_ref()
        .is_some_and(|t| !t.is_empty());
    assert!(
        kept,
        "the API server dropped spec.devices[].taints: it needs the DRADeviceTaints feature gate \
         (hack/local-cluster.sh turns it on from Kubernetes 1.33; on kind, set it in the cluster config)"
    );
    let _operator = env.start_operator("30s");
    let e = wait_entry(&env, "GpuDeviceTainted", &node, |e| {
        reasons(e) == ["GpuDeviceTainted"]
    })
    .await;
    assert_eq!(whole(&e), ("4".into(), "3".into(), 3));
    assert!(
        e.issues[0]
            .message
            .contains("gpu-2 (gpu.nvidia.com/xid=79:NoExecute)"),
        "{}",
        e.issues[0].message
    );
    assert_eq!(e.count, 4, "a tainted GPU is still a GPU of the node");
}

#[tokio::test]
async fn a_node_deleted_with_its_slices_leaves_and_a_node_migrated_from_the_device_plugin_is_counted_once()
 {
    let env = TestEnv::new("dra-gone").await;
    dra::require_dra(&env.client, "dra-gone").await;
    // Moved from the device plugin to DRA: the kubelet kept nvidia.com/gpu capacity, allocatable is 0.
    let migrated = env
        .create_node(dra_node(
            "migrated",
            &[("nvidia.com/gpu", "4")],
            &[("nvidia.com/gpu", "0")],
        ))
        .await;
    let leaving = env.create_node(dra_node("leaving", &[], &[])).await;
    dra::publish_slice(
        &env,
        &migrated,
        &format!("{migrated}-gpu"),
        1,
        1,
        gpus(&migrated, 0..4),
    )
    .await;
    dra::publish_slice(
        &env,
        &leaving,
        &format!("{leaving}-gpu"),
        1,
        1,
        gpus(&leaving, 0..2),
    )
    .await;
    let _operator = env.start_operator("30s");
    let inventory = env
        .wait_inventory(&env.inventory_name(), CONVERGE, "both DRA nodes", |s| {
            s.total_gpu_nodes == 2
        })
        .await;
    let status = inventory.status.unwrap();
    let m = entry(&status, &migrated).unwrap();
    assert!(m.issues.is_empty(), "no GpusNotAllocatable: {:?}", m.issues);
    assert_eq!(m.count, 4, "the same four GPUs, counted once");
    assert_eq!(m.sources, ["device-plugin", "dra"]);
    assert_eq!((status.total_gpus, status.free_gpus), (6, 6));
    assert_eq!(
        status
            .products
            .iter()
            .map(|p| (p.name.as_str(), p.gpus))
            .collect::<BTreeMap<_, _>>(),
        BTreeMap::from([("NVIDIA A100-SXM4-80GB", 6)])
    );

    env.delete_node(&leaving).await;
    let inventory = env
        .wait_inventory(
            &env.inventory_name(),
            CONVERGE,
            "the deleted node gone",
            |s| s.total_gpu_nodes == 1 && s.total_gpus == 4,
        )
        .await;
    assert!(entry(inventory.status.as_ref().unwrap(), &leaving).is_none());
    // The garbage collector deletes the node's slices (they are owned by it), as it does on a real cluster.
    common::eventually(CONVERGE, "the deleted node's slice collected", || async {
        Api::<ResourceSlice>::all(env.client.clone())
            .get_opt(&format!("{leaving}-gpu"))
            .await
            .ok()?
            .is_none()
            .then_some(())
    })
    .await;
}
