//! The vendors' real objects (tests/fixtures/vendors/, copied from AMD's, Intel's, NVIDIA's, AWS's and
//! Kubernetes' documentation with their sources) read as the expert notes in its README read them.

use crate::inventory::test_support::read;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use serde_json::Value;

use crate::inventory::allocation::{GpuPod, free_whole_gpus};
use crate::inventory::dra::{DEFAULT_DRIVERS, DraClaim, DraInput, DraSlice};
use crate::inventory::model::{DeviceKind, IssueReason, NodeInventory, Source};
use crate::inventory::vendors::vendor_of;
use crate::inventory::{Inventory, ScanInput, scan};

/// The fixture's objects of `kind`, as JSON.
fn objects(kind: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/fixtures/vendors/vendor-objects.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let list: Value = serde_saphyr::from_str(&text).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["kind"] == kind)
        .cloned()
        .collect()
}

fn named<T: serde::de::DeserializeOwned>(kind: &str, name: &str) -> T {
    let object = objects(kind)
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in the fixture"));
    serde_json::from_value(object).unwrap()
}

fn drivers() -> Vec<String> {
    DEFAULT_DRIVERS.split(',').map(str::to_owned).collect()
}

/// Scans nodes with slices and claims (every default driver read).
fn inventory(nodes: &[Node], slices: &[ResourceSlice], claims: &[ResourceClaim]) -> Inventory {
    let drivers = drivers();
    let slices: Vec<DraSlice> = slices
        .iter()
        .filter_map(|s| DraSlice::from_slice(s, &drivers))
        .collect();
    let claims: Vec<DraClaim> = claims.iter().map(DraClaim::from_claim).collect();
    let input = DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        classes: Vec::new(),
        taint_rules: Vec::new(),
    };
    let pods: [&GpuPod; 0] = [];
    scan(ScanInput::nodes(&read(nodes)).pods(pods).dra(input))
}

fn only(inv: &Inventory) -> &NodeInventory {
    assert_eq!(inv.nodes.len(), 1, "{:?}", inv.nodes);
    &inv.nodes[0]
}

fn reasons(entry: &NodeInventory) -> Vec<&str> {
    entry.issues.iter().map(|i| i.reason.as_str()).collect()
}

/// A node of that name, for slices that name it (the slice fixtures come without their Node).
fn bare_node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {}}
    }))
    .unwrap()
}

#[test]
fn amd_labeller_counted_labels_are_counts_of_gpus() {
    let node: Node = named("Node", "rocm-k8s-device-plugin-readme-cluster-node-23");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("amd"));
    // 1 GPU (`…cu-count.64=1` is one GPU with 64 CUs), 16 GiB, a Vega 10 / MI25-class part by device id.
    assert_eq!(e.count, 1);
    assert_eq!(e.memory_mib, Some(16 * 1024));
    assert_eq!(e.product.as_deref(), Some("AMD Instinct MI25 (Vega 10)"));
    assert!(e.derived_from[&"product".to_owned()].contains("6860"));
    assert_eq!(e.sources, [Source::Labels]);
    // No status shown: allocatable unknown, and no problem.
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert!(
        e.notes.iter().any(|n| n.contains("no conditions")),
        "{:?}",
        e.notes
    );
}

#[test]
fn amd_mi300x_with_one_gpu_failed_after_ecc_injection() {
    let node: Node = named("Node", "rocm-gpu-operator-docs-ecc-amd-mi300x-gpu-worker1");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("amd"));
    assert_eq!(e.count, 8);
    // Degraded, not misconfigured: allocatable below capacity, and the exporter's label names GPU 0.
    assert_eq!(reasons(e), ["GpusUnhealthy"]);
    let message = &e.issue(IssueReason::GpusUnhealthy).unwrap().message;
    assert!(
        message.contains("amd.com/gpu capacity 8, allocatable 7"),
        "{message}"
    );
    assert!(message.contains("GPU 0"), "{message}");
    assert_eq!(e.issue(IssueReason::GpusNotAllocatable), None);
}

#[test]
fn gaudi_node_counts_its_accelerators_and_has_no_problem() {
    let node: Node = named("Node", "intel-openshift-gaudi-readme-node");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("habana"));
    assert_eq!((e.count, e.product.as_deref()), (8, None));
    assert_eq!(e.device_resources, ["habana.ai/gaudi"]);
    // No Ready condition shown in the doc's grep, but a status is: the trim shows only the resource lines.
    assert_eq!(e.issue(IssueReason::GpusUnhealthy), None);
    assert_eq!(e.issue(IssueReason::GpusNotAllocatable), None);
}

#[test]
fn windows_directx_node_is_one_nvidia_gpu_and_not_a_missing_device_plugin() {
    let node: Node = named("Node", "marosset-aks-windows-gpu-akswin19000005");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("nvidia"));
    assert_eq!(e.count, 1);
    assert!(e.ready);
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert_eq!(free_whole_gpus(e), 1);
}

#[test]
fn kubevirt_vgpu_host_has_two_a10s_not_twelve() {
    let node: Node = named("Node", "nvidia-docs-kubevirt-cnt-server-2");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("nvidia"));
    assert_eq!((e.count, e.product.as_deref()), (2, Some("NVIDIA-A10")));
    assert_eq!(e.sharing.as_ref().and_then(|s| s.replicas), Some(6));
    assert_eq!(free_whole_gpus(e), 0, "vGPUs are shares, not whole GPUs");
    assert_eq!(
        e.issue(IssueReason::GpusNotAllocatable),
        None,
        "no nvidia.com/gpu is expected on a vGPU host"
    );
}

#[test]
fn intel_dra_slice_is_two_healthy_gpus() {
    let slice: ResourceSlice = named(
        "ResourceSlice",
        "intel-dra-docs-gpu-rpl-s-gpu.intel.com-mbr6p",
    );
    let inv = inventory(&[bare_node("rpl-s")], &[slice], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("intel"));
    assert_eq!(e.count, 2);
    assert!(e.devices.iter().all(|d| d.kind == DeviceKind::Whole));
    // `model: Unknown` names nothing; memory 0 (the iGPU's) is no fault and no size.
    assert_eq!(e.product, None);
    assert_eq!(e.memory_mib, Some(24480));
    assert!(e.issues.is_empty(), "{:?}", e.issues);
}

#[test]
fn gaudi_dra_slice_is_two_gaudi2() {
    let slice: ResourceSlice = named(
        "ResourceSlice",
        "intel-dra-docs-gaudi-rpl-s-gaudi.intel.com-x8m4h",
    );
    let inv = inventory(&[bare_node("rpl-s")], &[slice], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("intel"));
    assert_eq!((e.count, e.product.as_deref()), (2, Some("Gaudi2")));
    assert!(e.issues.is_empty(), "{:?}", e.issues);
}

/// The Intel slices with their first device's health attribute set to `value` (as the drivers' health
/// monitoring writes it when a device fails).
fn with_first_device_health(name: &str, attribute: &str, value: Value) -> ResourceSlice {
    let mut slice: Value = objects("ResourceSlice")
        .into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .unwrap();
    let device = &mut slice["spec"]["devices"][0];
    let typed = if value.is_boolean() { "bool" } else { "string" };
    device["attributes"][attribute] = serde_json::json!({ typed: value });
    serde_json::from_value(slice).unwrap()
}

#[test]
fn intel_and_gaudi_devices_their_driver_reports_unhealthy_are_not_free_and_named() {
    for (name, attribute, value) in [
        (
            "intel-dra-docs-gpu-rpl-s-gpu.intel.com-mbr6p",
            "health",
            Value::from("Unhealthy"),
        ),
        (
            "intel-dra-docs-gaudi-rpl-s-gaudi.intel.com-x8m4h",
            "healthy",
            Value::from(false),
        ),
    ] {
        let healthy: ResourceSlice = named("ResourceSlice", name);
        let before = inventory(&[bare_node("rpl-s")], &[healthy], &[]);
        let free_before = free_whole_gpus(only(&before));
        let slice = with_first_device_health(name, attribute, value);
        let inv = inventory(&[bare_node("rpl-s")], &[slice], &[]);
        let e = only(&inv);
        assert_eq!(e.count, 2, "{name}: still two devices");
        assert_eq!(free_whole_gpus(e), free_before - 1, "{name}");
        assert_eq!(reasons(e), ["GpusUnhealthy"], "{name}");
        let message = &e.issues[0].message;
        assert!(message.contains(attribute), "{message}");
        assert!(message.contains(&e.devices[0].name), "{message}");
    }
}

#[test]
fn dra_example_driver_devices_are_the_example_vendor_not_a_real_one() {
    let slice: ResourceSlice = named(
        "ResourceSlice",
        "dra-example-driver-readme-dra-example-driver-cluster-worker-gpu.example.com-rf2f7",
    );
    let inv = inventory(
        &[bare_node("dra-example-driver-cluster-worker")],
        &[slice],
        &[],
    );
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("example"));
    assert_eq!((e.count, e.memory_mib), (8, Some(80 * 1024)));
    assert_eq!(inv.products.len(), 1);
    assert_eq!(inv.products[0].vendor, Some("example"));
}

#[test]
fn amd_dra_slice_is_one_whole_mi300x_and_its_claim_holds_one_gpu() {
    // The published example is trimmed: spec.driver, pool and nodeName are not in it. The driver is in the
    // name; the pool and node are the claim's (same doc, another run).
    let mut slice: Value = objects("ResourceSlice")
        .into_iter()
        .find(|o| {
            o["metadata"]["name"]
                == "rocm-dra-docs-demo-k8s-gpu-dra-driver-cluster-worker-gpu.amd.com-xxxxx"
        })
        .unwrap();
    let node = "k8s-gpu-dra-driver-cluster-worker";
    slice["spec"]["driver"] = "gpu.amd.com".into();
    slice["spec"]["nodeName"] = node.into();
    slice["spec"]["pool"] =
        serde_json::json!({"name": node, "generation": 1, "resourceSliceCount": 1});
    let slice: ResourceSlice = serde_json::from_value(slice).unwrap();
    let inv = inventory(&[bare_node(node)], std::slice::from_ref(&slice), &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("amd"));
    assert_eq!(e.count, 1);
    assert_eq!(e.product.as_deref(), Some("AMD_Instinct_MI300X_OAM"));
    assert_eq!(e.memory_mib, Some(196_592));
    assert_eq!(e.devices[0].resource, "gpu.amd.com/gpu");
    assert!(e.issues.is_empty(), "{:?}", e.issues);

    // The claim names device gpu-48-176 of another run: it holds nothing of this slice, and is no fault.
    let mut claim: Value = objects("ResourceClaim")
        .into_iter()
        .find(|o| o["metadata"]["name"] == "rocm-dra-docs-demo-pod1-claim")
        .unwrap();
    claim["spec"] = serde_json::json!({});
    let claim: ResourceClaim = serde_json::from_value(claim).unwrap();
    let inv = inventory(&[bare_node(node)], &[slice], &[claim]);
    let e = only(&inv);
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert_eq!(free_whole_gpus(e), 1);
}

#[test]
fn amd_partitions_of_one_gpu_are_never_more_gpus() {
    let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "mi300x-partitions"},
        "spec": {
            "driver": "gpu.amd.com", "nodeName": "n",
            "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {"name": "gpu-0", "attributes": {"type": {"string": "amdgpu"}, "deviceID": {"string": "42"},
                  "productName": {"string": "AMD_Instinct_MI300X_OAM"}, "partitionProfile": {"string": "spx_nps1"}}},
                {"name": "gpu-0-p0", "attributes": {"type": {"string": "amdgpu-partition"}, "deviceID": {"string": "42"},
                  "productName": {"string": "AMD_Instinct_MI300X_OAM"}, "partitionProfile": {"string": "cpx_nps4"}}},
                {"name": "gpu-0-p1", "attributes": {"type": {"string": "amdgpu-partition"}, "deviceID": {"string": "42"},
                  "productName": {"string": "AMD_Instinct_MI300X_OAM"}, "partitionProfile": {"string": "cpx_nps4"}}},
                {"name": "gpu-1-p0", "attributes": {"type": {"string": "amdgpu-partition"}, "deviceID": {"string": "43"},
                  "productName": {"string": "AMD_Instinct_MI300X_OAM"}, "partitionProfile": {"string": "cpx_nps4"}}}
            ]
        }
    }))
    .unwrap();
    let inv = inventory(&[bare_node("n")], &[slice], &[]);
    let e = only(&inv);
    // GPU 42 listed whole and as partitions, GPU 43 only as a partition: 2 GPUs, not 4.
    assert_eq!(e.count, 2);
    assert_eq!(
        e.devices
            .iter()
            .filter(|d| d.resource == "gpu.amd.com/cpx_nps4")
            .count(),
        3
    );
}

#[test]
fn neuron_claim_is_four_devices_with_no_fault_for_its_placeholder_pool() {
    let mut claim: Value = objects("ResourceClaim")
        .into_iter()
        .find(|o| o["metadata"]["name"] == "aws-neuron-dra-docs-pod0-neurons-zdk76")
        .unwrap();
    claim["spec"] = serde_json::json!({});
    claim["metadata"]["namespace"] = "default".into();
    let claim: ResourceClaim = serde_json::from_value(claim).unwrap();
    let read = DraClaim::from_claim(&claim);
    assert_eq!(read.devices.len(), 4);
    assert!(read.devices.iter().all(|d| d.driver == "neuron.aws.com"));
    // No slice publishes the doc's placeholder pool: no node, and nothing to flag.
    let inv = inventory(&[], &[], &[claim]);
    assert!(inv.nodes.is_empty());
}

#[test]
fn nvidia_driver_upgrade_done_is_a_gpu_node_with_no_problem() {
    // Only the upgrade-state label shown (the doc selected the node by `-l nvidia.com/gpu.present`): the
    // GPU operator puts that label only on its GPU nodes, and `upgrade-done` is the steady state.
    let node: Node = named("Node", "nvidia-docs-driver-upgrades-k8s-node-1");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("nvidia"));
    assert!(e.issues.is_empty(), "{:?}", e.issues);
}

#[test]
fn nvidia_driver_upgrade_failed_is_an_issue() {
    let node: Node = named("Node", "nvidia-docs-driver-upgrades-k8s-node-3");
    let inv = inventory(&[node], &[], &[]);
    let e = only(&inv);
    assert_eq!(vendor_of(e), Some("nvidia"));
    assert_eq!(reasons(e), ["DriverUpgradeFailed"]);
    let message = &e.issue(IssueReason::DriverUpgradeFailed).unwrap().message;
    assert!(
        message.contains("nvidia.com/gpu-driver-upgrade-state=upgrade-failed"),
        "{message}"
    );
    assert!(
        crate::inventory::conditions::inventory_conditions(&inv)[1].status,
        "DriverUpgradeFailed degrades the inventory"
    );
}
