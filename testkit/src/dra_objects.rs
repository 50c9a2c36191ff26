//! DRA objects shaped like NVIDIA's DRA driver and kube-scheduler write them (tests/fixtures/dra): whole-GPU
//! devices, a node's ResourceSlice, NVIDIA's `gpu.nvidia.com` DeviceClass, a one-GPU ResourceClaim and its
//! `status.allocation`. Pure JSON builders, for the bench driver's DRA scenario and the soak.

use serde_json::{Value, json};

/// The driver the operator watches by default (`--dra-driver`).
pub const DRIVER: &str = "gpu.nvidia.com";
/// NVIDIA's DeviceClass for whole GPUs (tests/fixtures/dra/device-classes.yaml).
pub const DEVICE_CLASS: &str = "gpu.nvidia.com";
/// The taint NVIDIA's health monitor puts on a GPU that reported an XID error.
pub const XID_TAINT: &str = "gpu.nvidia.com/xid";

/// A UUID-shaped, stable identifier of GPU `device` of node number `node`.
pub fn gpu_uuid(node: usize, device: usize) -> String {
    let x = (node as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ device as u64;
    format!(
        "GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        x >> 32,
        (x >> 16) & 0xffff,
        x & 0xffff,
        device,
        node
    )
}

/// Whole H100 `device` of node number `node` as NVIDIA's DRA driver (25.8 and later) publishes it; `xid`, when
/// set, is the value of an `XID_TAINT` NoSchedule taint on it.
pub fn gpu_device(node: usize, device: usize, xid: Option<&str>) -> Value {
    let mut object = json!({
        "name": format!("gpu-{device}"),
        "attributes": {
            "type": { "string": "gpu" },
            "uuid": { "string": gpu_uuid(node, device) },
            "productName": { "string": "NVIDIA H100 80GB HBM3" },
            "brand": { "string": "Nvidia" },
            "architecture": { "string": "Hopper" },
            "cudaComputeCapability": { "version": "9.0.0" },
            "cudaDriverVersion": { "version": "13.0.0" },
            "driverVersion": { "version": "580.95.5" },
            "resource.kubernetes.io/pciBusID": { "string": format!("0000:{:02x}:00.0", 0x18 + 0x10 * device) },
            "resource.kubernetes.io/pcieRoot": { "string": format!("pci0000:{:02x}", device / 2) },
        },
        "capacity": { "memory": { "value": "80Gi" } },
    });
    if let Some(value) = xid {
        object["taints"] = json!([{ "key": XID_TAINT, "value": value, "effect": "NoSchedule" }]);
    }
    object
}

/// The one slice of node `node_name`'s pool (named after the node) at `generation`, with `devices`.
pub fn slice(node_name: &str, generation: i64, devices: Vec<Value>, label: (&str, &str)) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": { "name": format!("{node_name}-{DRIVER}"), "labels": { label.0: label.1 } },
        "spec": {
            "driver": DRIVER, "nodeName": node_name,
            "pool": { "name": node_name, "generation": generation, "resourceSliceCount": 1 },
            "devices": devices,
        },
    })
}

/// NVIDIA's DeviceClass for whole GPUs, as its chart installs it (a CEL selector on `type`).
pub fn device_class() -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": { "name": DEVICE_CLASS },
        "spec": { "selectors": [{ "cel": { "expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'" } }] },
    })
}

/// A claim for one whole GPU, as a ResourceClaimTemplate of NVIDIA's demos makes it.
pub fn claim(namespace: &str, name: &str, label: (&str, &str)) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": { "name": name, "namespace": namespace, "labels": { label.0: label.1 } },
        "spec": { "devices": { "requests": [{ "name": "gpu", "exactly": {
            "deviceClassName": DEVICE_CLASS, "allocationMode": "ExactCount", "count": 1 } }] } },
    })
}

/// A claim's `status.allocation` as kube-scheduler writes it for device `device` of node `node` (whose pool
/// is named after it), or null (deallocated).
pub fn allocation(at: Option<(&str, usize)>) -> Value {
    match at {
        Some((node, device)) => json!({
            "devices": { "results": [{
                "request": "gpu", "driver": DRIVER, "pool": node, "device": format!("gpu-{device}") }] },
            "nodeSelector": { "nodeSelectorTerms": [{ "matchFields": [{
                "key": "metadata.name", "operator": "In", "values": [node] }] }] },
        }),
        None => Value::Null,
    }
}
