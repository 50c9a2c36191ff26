//! The third round of reading real nodes (#38), live: real objects from users' issues
//! (tests/fixtures/reading/, with their sources and an expert's reading) created on the local API server, and
//! each new issue reason raised and cleared by the operator as the node changes.

mod common;

use std::time::Duration;

use common::allocation::entry;
use common::{TestEnv, eventually};
use gpu_inventory_operator::crd::GpuInventoryStatus;

const CONVERGE: Duration = Duration::from_secs(30);
const FIXTURE: &str = "reading/nvidia-nodes.yaml";

/// The reasons of a node's issues in the status, or None while the node is not listed.
fn reasons(status: &GpuInventoryStatus, node: &str) -> Option<Vec<String>> {
    entry(status, node).map(|e| e.issues.iter().map(|i| i.reason.clone()).collect())
}

fn has(status: &GpuInventoryStatus, node: &str, reason: &str) -> bool {
    reasons(status, node).is_some_and(|r| r.iter().any(|x| x == reason))
}

#[tokio::test]
async fn a_device_resource_at_0_is_a_gpu_node_whose_devices_are_gone_until_they_come_back() {
    let env = TestEnv::new("read3-gone").await;
    // open-edge-platform/geti#1501 (nvidia.com/gpu 0) and projectbluefin#586 (amd.com/gpu 0).
    env.load_fixture_only(
        FIXTURE,
        &["geti-v2-1501-hinton", "projectbluefin-lab-586-ghost"],
    )
    .await;
    let (geti, amd) = (
        env.node_name("geti-v2-1501-hinton"),
        env.node_name("projectbluefin-lab-586-ghost"),
    );
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "both nodes with GpuDevicesGone", |s| {
            has(s, &geti, "GpuDevicesGone") && has(s, &amd, "GpuDevicesGone")
        })
        .await
        .status
        .unwrap();
    let amd_entry = entry(&status, &amd).unwrap();
    assert_eq!(
        (amd_entry.vendor.as_deref(), amd_entry.count),
        (Some("amd"), 0),
        "an AMD GPU node with no device left"
    );
    let message = &amd_entry
        .issues
        .iter()
        .find(|i| i.reason == "GpuDevicesGone")
        .unwrap()
        .message;
    assert!(message.contains("amd.com/gpu advertised at 0"), "{message}");

    // The device plugin registers the GPUs again: the issue clears.
    env.set_resources(&geti, "capacity", &[("nvidia.com/gpu", "2")])
        .await;
    env.set_resources(&geti, "allocatable", &[("nvidia.com/gpu", "2")])
        .await;
    env.wait_inventory(&inv, Duration::from_secs(10), "geti's GPUs back", |s| {
        entry(s, &geti).is_some_and(|e| e.count == 2) && !has(s, &geti, "GpuDevicesGone")
    })
    .await;
    // The event is posted after the status write that cleared the issue: wait for it.
    eventually(
        Duration::from_secs(10),
        "the GpuDevicesGoneResolved event",
        || async {
            env.events_about(&inv).await.into_iter().find(|e| {
                e.reason.as_deref() == Some("GpuDevicesGoneResolved")
                    && e.message.as_deref().unwrap_or_default().contains(&geti)
            })
        },
    )
    .await;
}

#[tokio::test]
async fn operands_the_gpu_operator_will_not_run_are_an_issue_that_explains_the_0() {
    let env = TestEnv::new("read3-operands").await;
    // NVIDIA/gpu-operator#661 (operands=false, nvidia.com/gpu 0) and #491 (deploy labels emptied).
    env.load_fixture_only(FIXTURE, &["gpu-operator-661-node", "gpu-operator-491-node"])
        .await;
    let (off, cleared) = (
        env.node_name("gpu-operator-661-node"),
        env.node_name("gpu-operator-491-node"),
    );
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "OperandsDisabled on both", |s| {
            has(s, &off, "OperandsDisabled") && has(s, &cleared, "OperandsDisabled")
        })
        .await
        .status
        .unwrap();
    assert!(
        !has(&status, &off, "GpuDevicesGone"),
        "the label explains the 0: one finding, not two: {:?}",
        reasons(&status, &off)
    );

    // Someone sets the operands back to true, but the device plugin has not registered GPUs yet: the 0 is
    // no longer explained, and is told as devices gone.
    env.set_label(&off, "nvidia.com/gpu.deploy.operands", Some("true"))
        .await;
    env.wait_inventory(
        &inv,
        Duration::from_secs(10),
        "OperandsDisabled cleared",
        |s| !has(s, &off, "OperandsDisabled") && has(s, &off, "GpuDevicesGone"),
    )
    .await;
}

#[tokio::test]
async fn a_cordon_nvsentinel_holds_after_its_checks_recovered_is_a_stale_quarantine_until_one_fails_again()
 {
    use k8s_openapi::api::core::v1::Node;
    use kube::api::{Api, Patch, PatchParams};

    let env = TestEnv::new("read3-stale").await;
    // NVIDIA/NVSentinel#458: cordoned with NVSentinel's labels, both syslog checks healthy again.
    env.load_fixture_only(FIXTURE, &["nvsentinel-458-node"])
        .await;
    let node = env.node_name("nvsentinel-458-node");
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "StaleQuarantine", |s| {
            has(s, &node, "StaleQuarantine")
        })
        .await
        .status
        .unwrap();
    let reasons_now = reasons(&status, &node).unwrap();
    assert!(
        !reasons_now
            .iter()
            .any(|r| r == "GpuNodeQuarantined" || r == "Unschedulable"),
        "{reasons_now:?}"
    );

    // A check fails again: the quarantine holds for a reason, and is told as such.
    let body = serde_json::json!({ "status": { "conditions": [{
        "type": "SysLogsXIDError", "status": "True", "reason": "SysLogsXIDErrorIsNotHealthy",
        "message": "ErrorCode:79 GPU:0 fell off the bus Recommended Action=RESTART_VM;",
        "lastHeartbeatTime": "2026-12-01T00:00:00Z", "lastTransitionTime": "2026-12-01T00:00:00Z",
    }] } });
    Api::<Node>::all(env.client.clone())
        .patch_status(&node, &PatchParams::default(), &Patch::Strategic(body))
        .await
        .unwrap();
    env.wait_inventory(&inv, Duration::from_secs(10), "quarantined again", |s| {
        has(s, &node, "GpuNodeQuarantined") && !has(s, &node, "StaleQuarantine")
    })
    .await;
}
