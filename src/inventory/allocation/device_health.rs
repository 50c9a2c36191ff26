//! Device health in pod status (KEP-4680): the kubelet writes, per container, the health of each device
//! allocated to it (`status.containerStatuses[].allocatedResourcesStatus`), for device-plugin resources
//! (`nvidia.com/gpu`) and for DRA claims (`claim:<claim>/<request>`) alike. A pod running on a device that
//! failed is an issue on its node, naming the pod, the resource or claim, and the device.

use k8s_openapi::api::core::v1::{ContainerStatus, PodStatus};

use crate::inventory::model::{Issue, IssueReason};
use crate::inventory::text::capped_list;

/// The health value the kubelet writes for a device that failed.
const UNHEALTHY: &str = "Unhealthy";
/// The health value the kubelet writes when the plugin or driver stopped reporting the device's health.
const UNKNOWN: &str = "Unknown";

/// One allocated device the kubelet reports `Unhealthy`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeviceHealth {
    /// The container it is allocated to.
    pub container: String,
    /// The resource (`nvidia.com/gpu`) or claim request (`claim:<claim>/<request>`) it was allocated for.
    pub resource: String,
    /// The device's ID as its plugin or driver names it (`resourceID`).
    pub device: String,
}

/// The `Unhealthy` devices of every container, init container and ephemeral container, sorted. `Unknown`
/// (the plugin stopped reporting: [`unknown_devices`]) and `Healthy` are not kept.
pub(crate) fn unhealthy_devices(status: &PodStatus) -> Vec<DeviceHealth> {
    devices_reported(status, UNHEALTHY)
}

/// The devices whose health the kubelet reports `Unknown` (normal for a moment after a plugin restart; an
/// issue once it lasts the operator's grace period), sorted.
pub(crate) fn unknown_devices(status: &PodStatus) -> Vec<DeviceHealth> {
    devices_reported(status, UNKNOWN)
}

fn devices_reported(status: &PodStatus, health: &str) -> Vec<DeviceHealth> {
    let containers = [
        status.init_container_statuses.as_ref(),
        status.container_statuses.as_ref(),
        status.ephemeral_container_statuses.as_ref(),
    ];
    let mut unhealthy: Vec<DeviceHealth> = containers
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|c| container_devices(c, health))
        .collect();
    unhealthy.sort();
    unhealthy.dedup();
    unhealthy
}

fn container_devices(container: &ContainerStatus, health: &str) -> Vec<DeviceHealth> {
    let mut found = Vec::new();
    for status in container.allocated_resources_status.iter().flatten() {
        for device in status.resources.iter().flatten() {
            if device.health.as_deref() == Some(health) {
                found.push(DeviceHealth {
                    container: container.name.clone(),
                    resource: status.name.clone(),
                    device: device.resource_id.clone(),
                });
            }
        }
    }
    found
}

/// `AllocatedDeviceUnhealthy` for the pods on a node whose allocated devices are `Unhealthy`: each pod by
/// `namespace/name`, with its devices (`resource device`).
pub(crate) fn unhealthy_issue<'p>(
    pods: impl Iterator<Item = (&'p str, &'p str, &'p [DeviceHealth])>,
) -> Option<Issue> {
    let listed = pods_and_devices(pods)?;
    Some(Issue::new(
        IssueReason::AllocatedDeviceUnhealthy,
        format!(
            "the kubelet reports allocated devices Unhealthy: {listed}; the pods keep running on them until \
             restarted elsewhere (check the device plugin's or DRA driver's health reports and the node's \
             kernel log)"
        ),
    ))
}

/// `AllocatedDeviceHealthUnknown` for the pods on a node whose allocated devices report `Unknown` (held back
/// by the operator for its grace period).
pub(crate) fn unknown_issue<'p>(
    pods: impl Iterator<Item = (&'p str, &'p str, &'p [DeviceHealth])>,
) -> Option<Issue> {
    let listed = pods_and_devices(pods)?;
    Some(Issue::new(
        IssueReason::AllocatedDeviceHealthUnknown,
        format!(
            "the kubelet reports the health of allocated devices Unknown: {listed}; their device plugin or DRA \
             driver stopped reporting it (check that its pod on this node runs)"
        ),
    ))
}

/// `pod ns/name: resource device (container c), ...` for the pods with devices, by name; `None` when none.
fn pods_and_devices<'p>(
    pods: impl Iterator<Item = (&'p str, &'p str, &'p [DeviceHealth])>,
) -> Option<String> {
    let mut seen: Vec<String> = pods
        .filter(|(_, _, devices)| !devices.is_empty())
        .map(|(namespace, name, devices)| {
            let devices: Vec<String> = devices
                .iter()
                .map(|d| format!("{} {} (container {})", d.resource, d.device, d.container))
                .collect();
            format!("pod {namespace}/{name}: {}", devices.join(", "))
        })
        .collect();
    if seen.is_empty() {
        return None;
    }
    // By name, whatever order the pod watch handed them in (no write for a reordering).
    seen.sort();
    Some(capped_list(seen.iter().map(String::as_str)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unhealthy_devices_are_kept_from_every_kind_of_container() {
        let status: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{
                "name": "train", "image": "cuda", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [
                        { "resourceID": "GPU-b", "health": "Unhealthy" },
                        { "resourceID": "GPU-a", "health": "Healthy" },
                        { "resourceID": "GPU-c", "health": "Unknown" } ] },
                    { "name": "claim:gpus/gpu", "resources": [
                        { "resourceID": "gpu.nvidia.com/node-a/gpu-3", "health": "Unhealthy" } ] }
                ]
            }],
            "initContainerStatuses": [{
                "name": "warmup", "image": "cuda", "imageID": "", "ready": false, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [{ "resourceID": "GPU-b", "health": "Unhealthy" }] }
                ]
            }]
        }))
        .unwrap();
        let found = unhealthy_devices(&status);
        let seen: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|d| (d.container.as_str(), d.resource.as_str(), d.device.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("train", "claim:gpus/gpu", "gpu.nvidia.com/node-a/gpu-3"),
                ("train", "nvidia.com/gpu", "GPU-b"),
                ("warmup", "nvidia.com/gpu", "GPU-b"),
            ]
        );
    }

    #[test]
    fn unknown_devices_are_kept_apart_and_make_their_own_issue() {
        let status: PodStatus = serde_json::from_value(serde_json::json!({
            "containerStatuses": [{
                "name": "train", "image": "cuda", "imageID": "", "ready": true, "restartCount": 0,
                "allocatedResourcesStatus": [
                    { "name": "nvidia.com/gpu", "resources": [
                        { "resourceID": "GPU-b", "health": "Unhealthy" },
                        { "resourceID": "GPU-c", "health": "Unknown" } ] }
                ]
            }]
        }))
        .unwrap();
        let unknown = unknown_devices(&status);
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].device, "GPU-c");
        let issue = unknown_issue([("ns", "p", &unknown[..])].into_iter()).unwrap();
        assert_eq!(issue.reason, IssueReason::AllocatedDeviceHealthUnknown);
        assert!(issue.reason.needs_grace());
        assert!(
            issue.message.contains("pod ns/p: nvidia.com/gpu GPU-c"),
            "{}",
            issue.message
        );
        assert_eq!(unknown_issue([("ns", "p", &[][..])].into_iter()), None);
    }

    #[test]
    fn the_issue_names_each_pod_and_device_in_name_order() {
        let device = |id: &str| DeviceHealth {
            container: "c".into(),
            resource: "nvidia.com/gpu".into(),
            device: id.into(),
        };
        let b = [device("GPU-2")];
        let a = [device("GPU-1")];
        let issue = unhealthy_issue(
            [
                ("ns", "b", &b[..]),
                ("ns", "a", &a[..]),
                ("ns", "healthy", &[][..]),
            ]
            .into_iter(),
        )
        .unwrap();
        assert_eq!(issue.reason, IssueReason::AllocatedDeviceUnhealthy);
        assert!(
            issue.message.starts_with(
                "the kubelet reports allocated devices Unhealthy: pod ns/a: nvidia.com/gpu GPU-1 \
                 (container c), pod ns/b: nvidia.com/gpu GPU-2 (container c)"
            ),
            "{}",
            issue.message
        );
        assert_eq!(
            unhealthy_issue([("ns", "healthy", &[][..])].into_iter()),
            None
        );
    }
}
