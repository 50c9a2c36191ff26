//! DRA as 1.37 runs it, through the whole scan: DRA-backed extended resources (KEP-5004) counted once by
//! the claim, DeviceTaintRules, and `None` taints shown but not counted.

use crate::inventory::test_support::read;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::DeviceClass;
use serde_json::{Value, json};

use super::tests::{claim_from, drivers, gpu, slice};
use super::*;
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::IssueReason;
use crate::inventory::{Inventory, ScanInput, scan};

/// NVIDIA's DRA chart's `gpu.nvidia.com` class, with `extendedResourceName: nvidia.com/gpu` (its default).
fn gpu_class(extended: Option<&str>) -> DraClass {
    let class: DeviceClass = serde_json::from_value(json!({
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression":
                "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
            "extendedResourceName": extended,
        },
    }))
    .unwrap();
    DraClass::from_class(&class)
}

fn mig_class() -> DraClass {
    let class: DeviceClass = serde_json::from_value(json!({
        "metadata": {"name": "mig.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'"}}]},
    }))
    .unwrap();
    DraClass::from_class(&class)
}

/// A Ready DRA-only node: no GPU labels, no `nvidia.com/gpu` in its allocatable.
fn dra_node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {
            "capacity": {"cpu": "32"}, "allocatable": {"cpu": "32"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
    .unwrap()
}

/// The claim the scheduler makes for pod `pod`'s `nvidia.com/gpu` request, allocated `device` of `pool`.
fn extended_claim(pod: &str, pool: &str, device: &str) -> DraClaim {
    claim_from(json!({
        "metadata": {
            "name": format!("{pod}-extended-resources-abcde"), "namespace": "ml",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": "u1", "controller": true}],
        },
        "spec": {"devices": {"requests": [{"name": "container-0-request-0",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}},
        "status": {"allocation": {"devices": {"results": [
            {"request": "container-0-request-0", "driver": "gpu.nvidia.com", "pool": pool, "device": device}]}}},
    }))
}

/// A pod asking for `nvidia.com/gpu: 1`, bound to `node`; `status` is merged into its status.
fn gpu_pod(name: &str, node: Option<&str>, status: Value) -> GpuPod {
    let mut pod_status = json!({"phase": if node.is_some() { "Running" } else { "Pending" }});
    if let (Some(into), Some(from)) = (pod_status.as_object_mut(), status.as_object()) {
        into.extend(from.clone());
    }
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"nodeName": node, "containers": [{"name": "cuda",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
        "status": pod_status,
    }))
    .unwrap();
    GpuPod::from_pod(&pod).unwrap()
}

fn scan_with(
    nodes: &[Node],
    pods: &[GpuPod],
    claims: &[DraClaim],
    classes: &[DraClass],
    rules: &[DraTaintRule],
) -> Inventory {
    let drivers = drivers();
    let four = slice(
        "dra-a",
        (0..4).map(|i| gpu(i, &format!("GPU-a-{i}"))).collect(),
    );
    let input = DraInput {
        drivers: &drivers,
        slices: vec![&four],
        claims: claims.iter().collect(),
        classes: classes.iter().collect(),
        taint_rules: rules.iter().collect(),
    };
    scan(ScanInput::nodes(&read(nodes)).pods(pods).dra(input))
}

#[test]
fn a_pod_whose_nvidia_gpu_request_a_scheduler_made_claim_meets_is_counted_once_by_the_claim() {
    let classes = [gpu_class(Some("nvidia.com/gpu")), mig_class()];
    let claims = [extended_claim("train", "dra-a", "gpu-2")];
    // Both ways the pod is known to be served by the claim: its status, and (before the status reaches the
    // watch) the claim's annotation and owner alone.
    let with_status = gpu_pod(
        "train",
        Some("dra-a"),
        json!({"extendedResourceClaimStatus": {"resourceClaimName": "train-extended-resources-abcde",
            "requestMappings": [{"containerName": "cuda", "resourceName": "nvidia.com/gpu",
                                 "requestName": "container-0-request-0"}]}}),
    );
    let claim_only = gpu_pod("train", Some("dra-a"), json!({}));
    for pod in [with_status, claim_only] {
        let inv = scan_with(&[dra_node("dra-a")], &[pod], &claims, &classes, &[]);
        let node = &inv.nodes[0];
        assert!(
            node.issues.is_empty(),
            "no Overcommitted, no GpusNotAllocatable: {:?}",
            node.issues
        );
        assert_eq!(
            node.allocated.get("nvidia.com/gpu"),
            Some(&1),
            "{:?}",
            node.allocated
        );
        assert_eq!(node.free.get("nvidia.com/gpu"), Some(&3));
        assert!(
            !node.allocated.contains_key("gpu.nvidia.com/gpu"),
            "one name for the GPUs the class serves as nvidia.com/gpu: {:?}",
            node.allocated
        );
        assert_eq!(node.capacity[&"nvidia.com/gpu".to_owned()].whole(), Some(4));
        assert_eq!(
            node.dra_extended.get("nvidia.com/gpu").map(String::as_str),
            Some("gpu.nvidia.com"),
            "the entry says DRA serves nvidia.com/gpu here, and through which class"
        );
        let holders: Vec<String> = node
            .holdings
            .iter()
            .map(|h| format!("{} {:?}", h.resource, h.holder))
            .collect();
        assert_eq!(
            holders.len(),
            1,
            "the claim holds the GPU, not also the pod: {holders:?}"
        );
        assert_eq!(inv.free_gpus, 3);
        assert_eq!(inv.namespaces.len(), 1);
        assert_eq!(inv.namespaces[0].allocated.get("nvidia.com/gpu"), Some(&1));
        assert_eq!(
            inv.namespaces[0].allocated.len(),
            1,
            "{:?}",
            inv.namespaces[0].allocated
        );
        let resource = inv
            .resources
            .iter()
            .find(|r| r.name == "nvidia.com/gpu")
            .unwrap();
        assert_eq!(
            (resource.capacity, resource.allocated, resource.free),
            (4, 1, 3)
        );
    }
}

#[test]
fn without_extended_resource_name_the_devices_keep_the_driver_s_name() {
    let inv = scan_with(&[dra_node("dra-a")], &[], &[], &[gpu_class(None)], &[]);
    let node = &inv.nodes[0];
    assert_eq!(
        node.capacity[&"gpu.nvidia.com/gpu".to_owned()].whole(),
        Some(4)
    );
    assert!(node.dra_extended.is_empty());
}

#[test]
fn a_pending_nvidia_gpu_pod_waits_for_dra_nodes_the_class_serves_it_on() {
    let classes = [gpu_class(Some("nvidia.com/gpu"))];
    let pending = gpu_pod(
        "wait",
        None,
        json!({"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
    );
    let selector = crate::inventory::selector::LabelSelector::default();
    let drivers = drivers();
    let four = slice(
        "dra-a",
        (0..4).map(|i| gpu(i, &format!("GPU-a-{i}"))).collect(),
    );
    let nodes = [dra_node("dra-a")];
    let input = DraInput {
        drivers: &drivers,
        slices: vec![&four],
        classes: classes.iter().collect(),
        ..Default::default()
    };
    // An inventory of a subset of the cluster answers for a pending pod only when one of its nodes offers
    // what the pod asks for: the DRA node offers nvidia.com/gpu through the class.
    let inv = scan(
        ScanInput::nodes(&read(&nodes))
            .pods([&pending])
            .dra(input)
            .selector(&selector)
            .universe(crate::inventory::NodeUniverse::Subset),
    );
    assert_eq!(inv.pending_gpu_pods, 1);
    assert_eq!(inv.free_gpus, 4);
}

fn rule(name: &str, device: &str, effect: &str) -> DraTaintRule {
    let spec = serde_json::from_value(json!({
        "deviceSelector": {"driver": "gpu.nvidia.com", "pool": "dra-a", "device": device},
        "taint": {"key": "example.com/maintenance", "value": "ticket-42", "effect": effect},
    }))
    .unwrap();
    DraTaintRule::from_spec(name, &spec)
}

#[test]
fn a_no_schedule_rule_makes_its_device_unavailable_and_names_itself() {
    let rules = [rule("drain-gpu-1", "gpu-1", "NoSchedule")];
    let inv = scan_with(&[dra_node("dra-a")], &[], &[], &[], &rules);
    let node = &inv.nodes[0];
    assert_eq!(
        node.allocatable[&"gpu.nvidia.com/gpu".to_owned()].whole(),
        Some(3)
    );
    assert_eq!(node.free[&"gpu.nvidia.com/gpu".to_owned()], 3);
    assert_eq!(inv.free_gpus, 3);
    let issue = node
        .issue(IssueReason::GpuDeviceTainted)
        .expect("GpuDeviceTainted");
    assert!(
        issue.message.contains(
            "gpu-1 (example.com/maintenance=ticket-42:NoSchedule (DeviceTaintRule drain-gpu-1))"
        ),
        "{}",
        issue.message
    );
    let device = node.devices.iter().find(|d| d.name == "gpu-1").unwrap();
    assert!(!device.free);
    // Deleting the rule gives the device back.
    let inv = scan_with(&[dra_node("dra-a")], &[], &[], &[], &[]);
    assert_eq!(inv.free_gpus, 4);
    assert!(inv.nodes[0].issues.is_empty());
}

#[test]
fn a_none_effect_is_shown_and_not_counted_and_an_unknown_effect_is_treated_like_none() {
    let rules = [
        rule("would-evict", "gpu-0", "None"),
        rule("from-the-future", "gpu-3", "PreferNoUse"),
    ];
    let inv = scan_with(&[dra_node("dra-a")], &[], &[], &[], &rules);
    let node = &inv.nodes[0];
    assert_eq!(inv.free_gpus, 4);
    assert!(node.issues.is_empty(), "{:?}", node.issues);
    let gpu0 = node.devices.iter().find(|d| d.name == "gpu-0").unwrap();
    assert!(gpu0.free);
    let taints: Vec<String> = gpu0.taints.iter().map(ToString::to_string).collect();
    assert_eq!(
        taints,
        ["example.com/maintenance=ticket-42:None (DeviceTaintRule would-evict)"]
    );
}

#[test]
fn class_type_comparisons_are_read_in_both_spellings() {
    let class = |expression: &str| DraClass {
        name: "c".into(),
        expressions: vec![expression.into()],
        extended_resource: None,
    };
    let dotted = class(
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    );
    assert!(dotted.selects_device("gpu.nvidia.com", Some("gpu")));
    assert!(!dotted.selects_device("gpu.nvidia.com", Some("mig")));
    assert!(!dotted.selects_device("gpu.amd.com", Some("gpu")));
    let indexed = class(
        r#"device.driver == "gpu.amd.com" && device.attributes["gpu.amd.com"]["type"] == "amdgpu""#,
    );
    assert!(indexed.selects_device("gpu.amd.com", Some("amdgpu")));
    assert!(!indexed.selects_device("gpu.amd.com", Some("amdgpu-partition")));
    let any = class("device.driver == 'gpu.intel.com'");
    assert!(
        any.selects_device("gpu.intel.com", None),
        "no type compared: every device of the driver"
    );
    let other = class(
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].deviceType == 'x'",
    );
    assert!(
        other.selects_device("gpu.nvidia.com", Some("gpu")),
        "deviceType is another attribute"
    );
}

/// An A100's partitionable layout as NVIDIA's DynamicMIG publishes it (KEP-4815, 1.35+): the counter set in
/// a slice of its own, the GPU and its possible partitions as alternatives in another, all consuming it.
fn partitionable_pool(node: &str) -> Vec<DraSlice> {
    let consumes = |memory: &str, sms: u32| {
        json!([{"counterSet": "gpu-0-counters",
                "counters": {"memory": {"value": memory}, "multiprocessors": {"value": sms.to_string()}}}])
    };
    let mut whole = gpu(0, "GPU-0");
    whole["consumesCounters"] = consumes("80Gi", 98);
    let mut devices = vec![whole];
    for i in 0..7 {
        let mut d = super::tests::mig(&format!("gpu-0-1g-{i}"), "1g.10gb", "GPU-0");
        d["consumesCounters"] = consumes("10Gi", 14);
        devices.push(d);
    }
    for i in 0..2 {
        let mut d = super::tests::mig(&format!("gpu-0-3g-{i}"), "3g.40gb", "GPU-0");
        d["consumesCounters"] = consumes("40Gi", 42);
        devices.push(d);
    }
    let mut counters = super::tests::slice_value(node, 1, 2, Vec::new());
    counters["metadata"]["name"] = json!(format!("{node}-counters"));
    counters["spec"]["sharedCounters"] = json!([{"name": "gpu-0-counters",
        "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "98"}}}]);
    counters["spec"].as_object_mut().unwrap().remove("devices");
    vec![
        super::tests::from_value(counters),
        super::tests::from_value(super::tests::slice_value(node, 1, 2, devices)),
    ]
}

fn partitioned_view(claims: &[DraClaim]) -> DraNode {
    let drivers = drivers();
    let slices = partitionable_pool("n1");
    let mut view = resolve(&DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        ..Default::default()
    });
    view.nodes.remove("n1").expect("n1's devices")
}

#[test]
fn what_still_fits_comes_from_the_counters_that_remain_and_alternatives_are_never_summed() {
    let idle = partitioned_view(&[]);
    assert_eq!(
        idle.gpus, 1,
        "the GPU is counted once, not once per alternative"
    );
    assert_eq!(
        idle.still_fit,
        [
            ("gpu.nvidia.com/gpu".to_owned(), 1),
            ("gpu.nvidia.com/mig-1g.10gb".to_owned(), 7),
            ("gpu.nvidia.com/mig-3g.40gb".to_owned(), 2),
        ]
        .into()
    );
    // One 3g.40gb in use: 40Gi and 56 SMs left, so 4 x 1g.10gb or 1 x 3g.40gb, and no whole GPU.
    let one = partitioned_view(&[super::tests::claim("c", "n1", &["gpu-0-3g-0"], false)]);
    assert_eq!(
        one.still_fit,
        [
            ("gpu.nvidia.com/mig-1g.10gb".to_owned(), 4),
            ("gpu.nvidia.com/mig-3g.40gb".to_owned(), 1),
        ]
        .into()
    );
    assert_eq!(one.allocated[&"gpu.nvidia.com/mig-3g.40gb".to_owned()], 1);
    assert_eq!(one.free[&"gpu.nvidia.com/gpu".to_owned()], 0);
}

#[test]
fn a_shared_device_is_allocated_once_with_what_its_claims_consumed_of_its_capacity() {
    let mut shared = gpu(0, "GPU-0");
    shared["allowMultipleAllocations"] = json!(true);
    shared["capacity"] = json!({"memory": {"value": "80Gi",
        "requestPolicy": {"default": "10Gi", "validRange": {"min": "1Gi"}}}});
    let slices = [slice("n1", vec![shared, gpu(1, "GPU-1")])];
    let share = |name: &str, share_id: &str, memory: &str| {
        claim_from(json!({
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                "capacity": {"requests": {"memory": memory}}}}]}},
            "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com",
                "pool": "n1", "device": "gpu-0", "shareID": share_id, "consumedCapacity": {"memory": memory}}]}}},
        }))
    };
    let claims = [
        share("a", "11111111-aaaa", "10Gi"),
        share("b", "22222222-bbbb", "30Gi"),
    ];
    let drivers = drivers();
    let view = resolve(&DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        ..Default::default()
    });
    let node = &view.nodes["n1"];
    assert_eq!(
        node.allocated[&"gpu.nvidia.com/gpu".to_owned()],
        1,
        "one device, however many claims share it"
    );
    assert_eq!(node.free[&"gpu.nvidia.com/gpu".to_owned()], 1);
    let gpu0 = node.devices.iter().find(|d| d.name == "gpu-0").unwrap();
    assert_eq!(gpu0.claims.len(), 2);
    let shared = gpu0.shared.as_ref().expect("a shareable device");
    assert_eq!(shared.consumed["memory"], 40 << 30);
    assert_eq!(shared.total["memory"], 80 << 30);
    let gpu1 = node.devices.iter().find(|d| d.name == "gpu-1").unwrap();
    assert_eq!(
        gpu1.shared, None,
        "a device that is not shareable shows no capacity use"
    );
}
