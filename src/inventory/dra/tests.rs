//! The DRA rules on slices and claims shaped like NVIDIA's driver and the scheduler write them.

use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use serde_json::{Value, json};

use super::*;

pub(crate) fn drivers() -> Vec<String> {
    vec![DEFAULT_DRIVER.to_owned()]
}

/// A whole-GPU device as NVIDIA's driver publishes it (attributes bare, in the driver's domain).
pub(crate) fn gpu(index: u32, uuid: &str) -> Value {
    json!({
        "name": format!("gpu-{index}"),
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": uuid},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": "Ampere"},
            "cudaComputeCapability": {"version": "8.0.0"},
            "driverVersion": {"version": "580.95.5"},
            "resource.kubernetes.io/pciBusID": {"string": format!("0000:{:02x}:00.0", index + 7)},
        },
        "capacity": {"memory": {"value": "80Gi"}},
    })
}

pub(crate) fn mig(name: &str, profile: &str, parent: &str) -> Value {
    json!({
        "name": name,
        "attributes": {
            "type": {"string": "mig"},
            "profile": {"string": profile},
            "parentUUID": {"string": parent},
            "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        },
        "capacity": {"memory": {"value": "9856Mi"}},
    })
}

pub(crate) fn slice_value(node: &str, generation: i64, count: i64, devices: Vec<Value>) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpu.nvidia.com-{generation}")},
        "spec": {
            "driver": DEFAULT_DRIVER, "nodeName": node,
            "pool": {"name": node, "generation": generation, "resourceSliceCount": count},
            "devices": devices,
        },
    })
}

pub(crate) fn slice(node: &str, devices: Vec<Value>) -> DraSlice {
    from_value(slice_value(node, 1, 1, devices))
}

pub(crate) fn from_value(value: Value) -> DraSlice {
    let slice: ResourceSlice = serde_json::from_value(value).expect("a ResourceSlice");
    DraSlice::from_slice(&slice, &drivers()).expect("a gpu.nvidia.com slice")
}

/// A claim the scheduler allocated `devices` of `pool` to (`admin`: with adminAccess).
pub(crate) fn claim(name: &str, pool: &str, devices: &[&str], admin: bool) -> DraClaim {
    let results: Vec<Value> = devices
        .iter()
        .map(|d| json!({"request": "gpu", "driver": DEFAULT_DRIVER, "pool": pool, "device": d, "adminAccess": admin}))
        .collect();
    claim_from(json!({
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": devices.len()}}]}},
        "status": {"allocation": {"devices": {"results": results}}},
    }))
}

pub(crate) fn claim_from(value: Value) -> DraClaim {
    let claim: ResourceClaim = serde_json::from_value(value).expect("a ResourceClaim");
    DraClaim::from_claim(&claim)
}

fn view(slices: &[DraSlice], claims: &[DraClaim]) -> DraView {
    let drivers = drivers();
    resolve(&DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        classes: Vec::new(),
        taint_rules: Vec::new(),
    })
}

fn eight_gpus(node: &str) -> DraSlice {
    slice(
        node,
        (0..8).map(|i| gpu(i, &format!("GPU-{node}-{i}"))).collect(),
    )
}

const WHOLE: &str = "gpu.nvidia.com/gpu";

#[test]
fn whole_gpus_are_counted_allocated_once_and_admin_access_takes_nothing() {
    let claims = [
        claim("train", "n1", &["gpu-0", "gpu-1"], false),
        // A second claim on gpu-1 (a shared device): still one device allocated.
        claim("shared", "n1", &["gpu-1"], false),
        claim("monitor", "n1", &["gpu-2"], true),
    ];
    let view = view(&[eight_gpus("n1")], &claims);
    let node = &view.nodes["n1"];
    assert_eq!(node.gpus, 8);
    assert_eq!(node.product.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    assert_eq!(node.memory_mib, Some(81920));
    assert_eq!(node.capacity[WHOLE], 8);
    assert_eq!(node.allocatable[WHOLE], 8);
    assert_eq!(node.allocated[WHOLE], 2);
    assert_eq!(node.free[WHOLE], 6);
    let gpu1 = node.devices.iter().find(|d| d.name == "gpu-1").unwrap();
    let holders: Vec<String> = gpu1.claims.iter().map(ToString::to_string).collect();
    assert_eq!(holders, ["ml/shared", "ml/train"]);
    let gpu2 = node.devices.iter().find(|d| d.name == "gpu-2").unwrap();
    assert!(
        gpu2.free && gpu2.claims.is_empty(),
        "adminAccess does not allocate"
    );
    assert!(node.issues.is_empty());
}

#[test]
fn mig_devices_are_their_own_resource_and_a_gpu_is_never_added_to_its_partitions() {
    // GPU 0 whole; GPU 1 in MIG mode, published as its partitions only (static MIG).
    let devices = vec![
        gpu(0, "GPU-0"),
        mig("gpu-1-mig-1g10gb-0", "1g.10gb", "GPU-1"),
        mig("gpu-1-mig-1g10gb-1", "1g.10gb", "GPU-1"),
        mig("gpu-1-mig-3g40gb-0", "3g.40gb", "GPU-1"),
    ];
    let view = view(
        &[slice("n1", devices)],
        &[claim("c", "n1", &["gpu-1-mig-1g10gb-0"], false)],
    );
    let node = &view.nodes["n1"];
    assert_eq!(node.gpus, 2, "one whole GPU and one MIG parent");
    assert_eq!(node.capacity[WHOLE], 1);
    assert_eq!(node.capacity["gpu.nvidia.com/mig-1g.10gb"], 2);
    assert_eq!(node.allocated["gpu.nvidia.com/mig-1g.10gb"], 1);
    assert_eq!(node.free["gpu.nvidia.com/mig-1g.10gb"], 1);
    assert_eq!(node.free["gpu.nvidia.com/mig-3g.40gb"], 1);
    assert_eq!(node.free[WHOLE], 1);
}

#[test]
fn a_gpu_with_an_allocated_partition_is_not_free_and_neither_are_the_partitions_of_an_allocated_gpu()
 {
    // Partitionable devices: the GPU and its MIG devices draw on one counter set; parentUUID links them too.
    let mut whole = gpu(0, "GPU-0");
    whole["consumesCounters"] = json!([{"counterSet": "gpu-0-counter-set", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "98"}}}]);
    let part = |name: &str, mem: &str, sms: &str| {
        let mut d = mig(name, "3g.40gb", "GPU-0");
        d["consumesCounters"] = json!([{"counterSet": "gpu-0-counter-set", "counters": {"memory": {"value": mem}, "multiprocessors": {"value": sms}}}]);
        d
    };
    let mut value = slice_value(
        "n1",
        1,
        1,
        vec![
            whole,
            part("mig-a", "40Gi", "42"),
            part("mig-b", "40Gi", "42"),
        ],
    );
    value["spec"]["sharedCounters"] = json!([{"name": "gpu-0-counter-set", "counters": {"memory": {"value": "80Gi"}, "multiprocessors": {"value": "98"}}}]);
    let slices = [from_value(value)];

    let one_partition = view(&slices, &[claim("c", "n1", &["mig-a"], false)]);
    let free: Vec<&str> = one_partition.nodes["n1"]
        .devices
        .iter()
        .filter(|d| d.free)
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        free,
        ["mig-b"],
        "the GPU is taken by its partition; the other partition still fits"
    );
    assert_eq!(
        one_partition.nodes["n1"].gpus, 1,
        "the partitions' parent is the listed GPU"
    );

    let whole_gpu = view(&slices, &[claim("c", "n1", &["gpu-0"], false)]);
    assert!(whole_gpu.nodes["n1"].devices.iter().all(|d| !d.free));
    assert_eq!(whole_gpu.nodes["n1"].free[WHOLE], 0);
    assert_eq!(whole_gpu.nodes["n1"].free["gpu.nvidia.com/mig-3g.40gb"], 0);
}

#[test]
fn tainted_devices_are_unavailable_with_an_issue_naming_device_key_value_and_effect() {
    let mut sick = gpu(3, "GPU-3");
    sick["taints"] = json!([{"key": "gpu.nvidia.com/xid", "value": "79", "effect": "NoExecute"}]);
    let mut soft = gpu(4, "GPU-4");
    soft["taints"] = json!([{"key": "example.com/maintenance", "effect": "None"}]);
    let view = view(&[slice("n1", vec![gpu(0, "GPU-0"), sick, soft])], &[]);
    let node = &view.nodes["n1"];
    assert_eq!(
        (
            node.capacity[WHOLE],
            node.allocatable[WHOLE],
            node.free[WHOLE]
        ),
        (3, 2, 2)
    );
    assert_eq!(node.issues.len(), 1);
    assert_eq!(node.issues[0].reason, "GpuDeviceTainted");
    assert!(
        node.issues[0]
            .message
            .contains("gpu-3 (gpu.nvidia.com/xid=79:NoExecute)"),
        "{}",
        node.issues[0].message
    );
}

#[test]
fn an_incomplete_pool_is_an_issue_and_its_devices_are_not_free() {
    let slices = [from_value(slice_value(
        "n1",
        3,
        2,
        (0..4).map(|i| gpu(i, &format!("U{i}"))).collect(),
    ))];
    let node = &view(&slices, &[]).nodes["n1"];
    assert_eq!(node.capacity[WHOLE], 4);
    assert_eq!(node.free[WHOLE], 0);
    assert_eq!(node.allocatable[WHOLE], 0);
    assert_eq!(node.issues[0].reason, "DraPoolIncomplete");
    assert!(
        node.issues[0]
            .message
            .contains("gpu.nvidia.com/n1 generation 3 has 1 of 2 slices")
    );
}

#[test]
fn unknown_and_retyped_attributes_never_fail_a_read() {
    let device = json!({
        "name": "odd",
        "attributes": {
            "type": {"string": "GPU "},
            "index": {"int": 0}, "minor": {"int": 0}, "pcieBusID": {"string": "0000:07:00.0"},
            "productName": {"int": 7},
            "futureThing": {"string": "x"},
        },
        "capacity": {"memory": {"value": "not-a-quantity"}},
    });
    let slice = from_value(slice_value("n1", 1, 1, vec![device]));
    let d = &slice.devices[0];
    assert_eq!(
        d.kind.as_deref(),
        Some("gpu"),
        "type is trimmed and lower-cased"
    );
    assert_eq!(d.product.as_deref(), Some("7"));
    assert_eq!(d.memory_mib, None);
    let untyped = from_value(slice_value("n2", 1, 1, vec![json!({"name": "bare"})]));
    assert_eq!(
        resource_name(
            DEFAULT_DRIVER,
            &device_kind(DEFAULT_DRIVER, &untyped.devices[0])
        ),
        "gpu.nvidia.com/device"
    );
}

#[test]
fn slices_of_other_drivers_are_not_read_and_results_naming_unknown_devices_count_nowhere() {
    let mut other = slice_value("n1", 1, 1, vec![gpu(0, "X")]);
    other["spec"]["driver"] = json!("compute-domain.nvidia.com");
    let other: ResourceSlice = serde_json::from_value(other).unwrap();
    assert!(DraSlice::from_slice(&other, &drivers()).is_none());
    let view = view(
        &[eight_gpus("n1")],
        &[claim("stale", "n1", &["gpu-99"], false)],
    );
    assert_eq!(view.nodes["n1"].allocated[WHOLE], 0);
    assert!(view.nodes["n1"].devices.iter().all(|d| d.claims.is_empty()));
}

#[test]
fn unallocated_claims_wait_for_gpus_only_when_their_class_selects_the_driver() {
    let pending = |class: &str| {
        claim_from(json!({
            "metadata": {"name": format!("wants-{class}"), "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": class, "count": 2}}]}},
        }))
    };
    let classes = [
        DraClass { name: "mig.nvidia.com".into(), expressions: vec!["device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'".into()], extended_resource: None },
        DraClass { name: "compute-domain-default-channel.nvidia.com".into(), expressions: vec!["device.driver == 'compute-domain.nvidia.com'".into()], extended_resource: None },
    ];
    let claims = [
        pending("mig.nvidia.com"),
        pending("compute-domain-default-channel.nvidia.com"),
        pending("gpu.nvidia.com"),
        pending("unknown.example.com"),
    ];
    let drivers = drivers();
    let view = resolve(&DraInput {
        drivers: &drivers,
        slices: Vec::new(),
        claims: claims.iter().collect(),
        classes: classes.iter().collect(),
        taint_rules: Vec::new(),
    });
    let mut waiting: Vec<&str> = view
        .unallocated_gpu_claims
        .keys()
        .map(|(_, n)| n.as_str())
        .collect();
    waiting.sort();
    assert_eq!(waiting, ["wants-gpu.nvidia.com", "wants-mig.nvidia.com"]);
    let wants = view.waits_for("ml", &["wants-mig.nvidia.com".into(), "absent".into()]);
    assert_eq!(
        wants.into_iter().collect::<Vec<_>>(),
        [("mig.nvidia.com".to_owned(), 2)]
    );
}
