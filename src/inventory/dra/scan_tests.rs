//! DRA nodes through the whole scan: entries, issues that must not fire, products, free GPUs and demand.

use crate::inventory::test_support::read;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::json;

use super::tests::{claim, claim_from, drivers, gpu, slice};
use super::*;
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::Source;
use crate::inventory::{Inventory, ScanInput, scan};

fn node(name: &str, labels: serde_json::Value, capacity: serde_json::Value) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {
            "capacity": capacity.clone(), "allocatable": capacity,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
    .unwrap()
}

fn scan_all(
    nodes: &[Node],
    pods: &[GpuPod],
    slices: &[DraSlice],
    claims: &[DraClaim],
) -> Inventory {
    let drivers = drivers();
    let input = DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        classes: Vec::new(),
        taint_rules: Vec::new(),
    };
    scan(ScanInput::nodes(&read(nodes)).pods(pods).dra(input))
}

fn four_gpus(node: &str) -> DraSlice {
    slice(
        node,
        (0..4).map(|i| gpu(i, &format!("GPU-{node}-{i}"))).collect(),
    )
}

#[test]
fn a_node_known_only_by_its_slices_is_a_gpu_node_without_label_or_allocatable_issues() {
    // GFD runs elsewhere (so a labelless device-plugin node would be GpuLabelsMissing), and dra-b kept
    // its device-plugin capacity with allocatable 0 after moving to DRA (kubernetes PR #133784).
    let gfd = node(
        "gfd",
        json!({"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "2"}),
        json!({"nvidia.com/gpu": "2"}),
    );
    let dra_a = node("dra-a", json!({}), json!({"cpu": "8"}));
    let mut dra_b = node("dra-b", json!({}), json!({"nvidia.com/gpu": "4"}));
    dra_b.status.as_mut().unwrap().allocatable = Some(
        [(
            "nvidia.com/gpu".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("0".into()),
        )]
        .into(),
    );
    let claims = [claim("job", "dra-a", &["gpu-0"], false)];
    let inv = scan_all(
        &[gfd, dra_a, dra_b],
        &[],
        &[four_gpus("dra-a"), four_gpus("dra-b")],
        &claims,
    );
    assert_eq!(inv.total_gpu_nodes, 3);
    assert_eq!(
        inv.total_gpus,
        2 + 4 + 4,
        "dra-b's GPUs are counted once, not device plugin + DRA"
    );
    for name in ["dra-a", "dra-b"] {
        let e = inv.nodes.iter().find(|e| e.name == name).unwrap();
        assert!(e.issues.is_empty(), "{name}: {:?}", e.issues);
        assert!(e.sources.contains(&Source::Dra), "{name}: {:?}", e.sources);
        assert_eq!(e.product.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
        assert_eq!(e.memory_mib, Some(81920));
        assert_eq!(e.capacity[&"gpu.nvidia.com/gpu".to_owned()], "4");
        assert_eq!(e.devices.len(), 4);
    }
    let a = inv.nodes.iter().find(|e| e.name == "dra-a").unwrap();
    assert_eq!(
        (
            a.allocated[&"gpu.nvidia.com/gpu".to_owned()],
            a.free[&"gpu.nvidia.com/gpu".to_owned()]
        ),
        (1, 3)
    );
    // One product across sources, shown as DRA spells it; free whole GPUs: 2 (gfd) + 3 + 4.
    assert_eq!(inv.products.len(), 1, "{:?}", inv.products);
    assert_eq!(inv.products[0].name, "NVIDIA A100-SXM4-80GB");
    assert_eq!(
        (
            inv.products[0].nodes,
            inv.products[0].gpus,
            inv.products[0].free_gpus
        ),
        (3, 10, 9)
    );
    assert_eq!(inv.free_gpus, 9);
    let dra_sum = inv
        .resources
        .iter()
        .find(|r| r.name == "gpu.nvidia.com/gpu")
        .unwrap();
    assert_eq!(
        (dra_sum.capacity, dra_sum.allocated, dra_sum.free),
        (8, 1, 7)
    );
    let ml = inv.namespaces.iter().find(|n| n.name == "ml").unwrap();
    assert_eq!(ml.allocated[&"gpu.nvidia.com/gpu".to_owned()], 1);
}

#[test]
fn pods_waiting_on_unallocated_gpu_claims_are_pending_gpu_pods() {
    let pod = |name: &str, claim: &str| -> GpuPod {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}]},
            "status": {"phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
                "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]},
        }))
        .unwrap();
        GpuPod::from_pod(&pod).expect("a pod with claims is kept")
    };
    let unallocated = |name: &str, class: &str| {
        claim_from(json!({"metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": class}}]}}}))
    };
    let claims = [
        unallocated("c1", "gpu.nvidia.com"),
        unallocated("c2", "nic.example.com"),
    ];
    let pods = [pod("wants-gpu", "c1"), pod("wants-nic", "c2")];
    let inv = scan_all(
        &[node("dra-a", json!({}), json!({}))],
        &pods,
        &[four_gpus("dra-a")],
        &claims,
    );
    assert_eq!(inv.pending_gpu_pods, 1, "{:?}", inv.namespaces);
    let ml = inv.namespaces.iter().find(|n| n.name == "ml").unwrap();
    assert_eq!(ml.pending_pods, 1);
    assert_eq!(ml.pending["gpu.nvidia.com"], 1);
}

#[test]
fn slices_of_nodes_that_are_gone_or_not_selected_add_nothing() {
    let inv = scan_all(
        &[node("cpu", json!({}), json!({}))],
        &[],
        &[four_gpus("deleted-node")],
        &[],
    );
    assert_eq!(inv.total_gpu_nodes, 0);
    assert!(inv.resources.is_empty());
}
