//! Diagnostics against a real API server: conditions flip, one event per transition, GpusUnhealthy.

mod common;

use std::time::Duration;

use common::{TestEnv, eventually, kubeconfig_path};

const CONVERGE: Duration = Duration::from_secs(30);

fn reasons(events: &[k8s_openapi::api::core::v1::Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| e.reason.clone().unwrap_or_default())
        .collect()
}

fn ready_reason(s: &gpu_inventory_operator::crd::GpuInventoryStatus) -> Option<(&str, &str)> {
    let c = s.conditions.iter().find(|c| c.type_ == "Ready")?;
    Some((c.status.as_str(), c.reason.as_str()))
}

#[tokio::test]
async fn a_node_going_not_ready_flips_ready_with_one_event_each_way() {
    let env = TestEnv::new("diag-ready").await;
    env.load_fixture_only("gfd-nodes.yaml", &["dgx-h100-01", "laptop-4070"])
        .await;
    let operator = env.start_operator("2s");
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "all Ready", |s| {
        ready_reason(s) == Some(("True", "AllGpuNodesReady"))
    })
    .await;
    let dgx = env.node_name("dgx-h100-01");

    env.set_ready(&dgx, "False").await;
    let flipped = env
        .wait_inventory(&inv, Duration::from_secs(5), "Ready=False", |s| {
            ready_reason(s) == Some(("False", "GpuNodesNotReady"))
        })
        .await
        .status
        .unwrap();
    let ready = flipped
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert!(
        ready.message.contains(&dgx),
        "the message names the node: {}",
        ready.message
    );
    let events = eventually(Duration::from_secs(5), "the NotReady event", || async {
        let events = env.events_about(&inv).await;
        reasons(&events)
            .contains(&"GpuNodeNotReady".to_owned())
            .then_some(events)
    })
    .await;
    let not_ready: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("GpuNodeNotReady"))
        .collect();
    assert_eq!(
        not_ready.len(),
        1,
        "exactly one event: {:?}",
        reasons(&events)
    );
    assert!(
        not_ready[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains(&dgx)
    );
    assert_eq!(not_ready[0].type_.as_deref(), Some("Warning"));

    env.set_ready(&dgx, "True").await;
    env.wait_inventory(&inv, Duration::from_secs(5), "Ready=True again", |s| {
        ready_reason(s) == Some(("True", "AllGpuNodesReady"))
    })
    .await;
    let events = eventually(Duration::from_secs(5), "the Ready event", || async {
        let events = env.events_about(&inv).await;
        reasons(&events)
            .contains(&"GpuNodeReady".to_owned())
            .then_some(events)
    })
    .await;
    // Two requeue periods later, still exactly one event per transition.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let later = env.events_about(&inv).await;
    assert_eq!(
        reasons(&later),
        reasons(&events),
        "no event per reconcile or requeue"
    );
    let count = |r: &str| {
        later
            .iter()
            .filter(|e| e.reason.as_deref() == Some(r))
            .count()
    };
    assert_eq!(
        (count("GpuNodeNotReady"), count("GpuNodeReady")),
        (1, 1),
        "{:?}",
        reasons(&later)
    );

    // Another node, the same reason: an event of its own that names it (kube's Recorder made it a second
    // count of the first node's event, and the laptop was never named).
    let laptop = env.node_name("laptop-4070");
    env.set_ready(&laptop, "False").await;
    let events = eventually(
        Duration::from_secs(5),
        "the laptop's NotReady event",
        || async {
            let events = env.events_about(&inv).await;
            let names_laptop = events.iter().any(|e| {
                e.reason.as_deref() == Some("GpuNodeNotReady")
                    && e.message.as_deref().unwrap_or_default().contains(&laptop)
            });
            names_laptop.then_some(events)
        },
    )
    .await;
    let not_ready: Vec<&str> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("GpuNodeNotReady"))
        .map(|e| e.message.as_deref().unwrap_or_default())
        .collect();
    assert_eq!(not_ready.len(), 2, "{not_ready:?}");
    assert!(
        not_ready.iter().any(|m| m.contains(&dgx)) && not_ready.iter().any(|m| m.contains(&laptop))
    );

    let describe = std::process::Command::new("kubectl")
        .args([
            "--kubeconfig",
            &kubeconfig_path().display().to_string(),
            "describe",
            "gpuinventory",
            &inv,
        ])
        .output()
        .unwrap();
    let describe = String::from_utf8_lossy(&describe.stdout);
    assert!(
        describe.contains("GpuNodeNotReady") && describe.contains("GpuNodeReady"),
        "{describe}"
    );
    drop(operator);
}

#[tokio::test]
async fn allocatable_below_capacity_raises_gpus_unhealthy_once() {
    let env = TestEnv::new("diag-unhealthy").await;
    env.load_fixture_only("gfd-nodes.yaml", &["dgx-h100-01", "laptop-4070"])
        .await;
    let operator = env.start_operator("2s");
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "converged", |s| s.total_gpu_nodes == 2)
        .await;
    let dgx = env.node_name("dgx-h100-01");

    env.set_resources(&dgx, "allocatable", &[("nvidia.com/gpu", "6")])
        .await;
    let status = env
        .wait_inventory(
            &inv,
            Duration::from_secs(5),
            "GpusUnhealthy in the status",
            |s| {
                s.nodes
                    .iter()
                    .any(|n| n.issues.iter().any(|i| i.reason == "GpusUnhealthy"))
            },
        )
        .await
        .status
        .unwrap();
    let issue = status.nodes[0]
        .issues
        .iter()
        .find(|i| i.reason == "GpusUnhealthy")
        .unwrap();
    assert!(
        issue
            .message
            .contains("nvidia.com/gpu capacity 8, allocatable 6"),
        "{}",
        issue.message
    );
    let degraded = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded")
        .unwrap();
    assert_eq!(
        (degraded.status.as_str(), degraded.message.as_str()),
        ("True", "GpusUnhealthy: 1 node")
    );
    env.wait_configmap(
        Duration::from_secs(5),
        "GpusUnhealthy in the ConfigMap entry",
        |d| d.get(&dgx).is_some_and(|v| v.contains("GpusUnhealthy")),
    )
    .await;
    let events = eventually(
        Duration::from_secs(5),
        "the GpusUnhealthy event",
        || async {
            let events = env.events_about(&inv).await;
            reasons(&events)
                .contains(&"GpusUnhealthy".to_owned())
                .then_some(events)
        },
    )
    .await;

    // Over two requeue periods: no further events, no writes.
    let inv_rv = env.inventory(&inv).await.unwrap().metadata.resource_version;
    let cm_rv = env.configmap().await.unwrap().metadata.resource_version;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(reasons(&env.events_about(&inv).await), reasons(&events));
    assert_eq!(
        env.inventory(&inv).await.unwrap().metadata.resource_version,
        inv_rv
    );
    assert_eq!(
        env.configmap().await.unwrap().metadata.resource_version,
        cm_rv
    );
    drop(operator);
}
