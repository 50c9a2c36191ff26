//! Device health in pod status (KEP-4680): the kubelet writes, per container, the health of each device
//! allocated to it (`status.containerStatuses[].allocatedResourcesStatus`), for device-plugin resources
//! (`nvidia.com/gpu`) and for DRA claims (`claim:<claim>/<request>`) alike. A pod running on a device that
//! failed is an issue on its node, naming the pod, the resource or claim, and the device. (The kubelet's
//! reports are read in `sources::convert::k8s_pod`.)

use crate::inventory::model::{Issue, IssueReason};
use crate::inventory::text::capped_list;

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
