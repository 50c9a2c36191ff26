//! Fragmentation live (#57): two 8-GPU KWOK nodes holding 3 and 4 GPUs leave 9 free, 5 at most on one node.
//! An 8-GPU pod the real kube-scheduler cannot place is `FragmentedCapacity` in the operator's GpuInventory
//! (`status.fragmentation`); once a small pod goes, the scheduler binds it and the verdict clears.

mod common;

use std::time::Duration;

use common::allocation::node;
use common::test_env::TEST_LABEL;
use common::{TestEnv, eventually};
use gpu_inventory_operator::crd::{BlockedPodEntry, GpuInventoryStatus};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(60);
const H100: &str = "NVIDIA-H100-80GB-HBM3";

/// A pod of `gpus` GPUs for the scheduler to place on a node labelled `selector`.
fn pod(name: &str, gpus: u32, selector: serde_json::Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "nodeSelector": selector,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }],
        }
    }))
    .unwrap()
}

fn blocked<'s>(status: &'s GpuInventoryStatus, pod: &str) -> Option<&'s BlockedPodEntry> {
    status
        .fragmentation
        .as_ref()?
        .blocked
        .iter()
        .find(|b| b.pod == pod)
}

#[tokio::test]
async fn an_eight_gpu_pod_waiting_on_pieces_is_fragmented_capacity_until_a_node_frees_up() {
    let env = TestEnv::new("fragmentation").await;
    let namespace = format!("{}-frag", env.id);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace =
        serde_json::from_value(json!({ "metadata": { "name": namespace } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let gfd = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": H100,
                      "nvidia.com/gpu.count": "8" });
    let a = env
        .create_node(node("a", gfd.clone(), &[("nvidia.com/gpu", "8")]))
        .await;
    let b = env
        .create_node(node("b", gfd, &[("nvidia.com/gpu", "8")]))
        .await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &namespace);
    let on = |node: &str| json!({ "kubernetes.io/hostname": node });
    for (name, gpus, at) in [("small-a", 3, &a), ("small-b", 4, &b)] {
        let pod = pod(name, gpus, on(at));
        eventually(CONVERGE, &format!("creating {name}"), || async {
            pods.create(&PostParams::default(), &pod).await.ok()
        })
        .await;
    }
    // Only this test's nodes may hold it: other tests' nodes never make it fit.
    let big = pod("big", 8, json!({ TEST_LABEL: env.id }));
    pods.create(&PostParams::default(), &big).await.unwrap();

    let _operator = env.start_operator("2s");
    let inventory = env.inventory_name();
    let status = env
        .wait_inventory(&inventory, CONVERGE, "big blocked by fragmentation", |s| {
            blocked(s, "big").is_some()
        })
        .await
        .status
        .unwrap();
    let verdict = blocked(&status, "big").unwrap();
    assert_eq!(
        (
            verdict.reason.as_str(),
            verdict.namespace.as_str(),
            verdict.gpus,
            verdict.product.as_str(),
            verdict.free_gpus,
            verdict.largest_piece
        ),
        ("FragmentedCapacity", namespace.as_str(), 8, H100, 9, 5),
        "{verdict:?}"
    );
    let product = &status.fragmentation.as_ref().unwrap().products[0];
    assert_eq!(
        (product.free_gpus, product.largest_piece, product.pieces),
        (9, 5, 2)
    );
    let eight = product
        .sizes
        .iter()
        .find(|s| s.gpus == 8)
        .expect("8 on the ladder");
    assert!(eight.asked && eight.usable_gpus == 0, "{:?}", product.sizes);

    // A small pod goes: node a has 8 free, the scheduler binds big there, and the verdict clears.
    pods.delete("small-a", &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let status = env
        .wait_inventory(&inventory, CONVERGE, "big placed, nothing blocked", |s| {
            blocked(s, "big").is_none()
                && s.nodes
                    .iter()
                    .any(|n| n.name == a && n.free.get("nvidia.com/gpu") == Some(&0))
        })
        .await
        .status
        .unwrap();
    let bound = pods.get("big").await.unwrap();
    assert_eq!(
        bound.spec.and_then(|s| s.node_name).as_deref(),
        Some(a.as_str()),
        "the scheduler placed big where the inventory said 8 are free"
    );
    let product = &status.fragmentation.as_ref().unwrap().products[0];
    assert_eq!((product.free_gpus, product.largest_piece), (4, 4));

    let _ = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await;
    env.cleanup().await;
}
