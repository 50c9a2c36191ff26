//! GPU health that others publish on the Node, read by the running operator against the real API server and
//! KWOK nodes: a health monitor's condition (NVSentinel's `GpuMemWatch`) raises `GpuHealthCheckFailed` within
//! 2 s and clears when the monitor sets it False; heartbeats of the kubelet and of the monitor write nothing; a
//! remediation taint and NVSentinel's cordon labels say who took the node out of service and why; the GPU
//! operator's driver-upgrade walk is information until it fails; and a node known only by
//! `nvidia.com/gpu.present` is a GPU node missing its resources once the grace period has passed.
//!
//! KWOK (hack/kwok/node-heartbeat-with-lease.yaml) rewrites a managed node's kubelet conditions (Ready and the
//! pressures) with a strategic merge keyed by `type`: a condition it does not own, as a monitor sets one
//! through the status subresource, is kept as it is, heartbeat time included; the test's monitor refreshes
//! that heartbeat itself ([`set_condition`]), as NVSentinel and node-problem-detector do. KWOK schedules a
//! node's next status heartbeat anew on every change of the node (10-20 s later), so a monitor patching more
//! often than that starves the kubelet's heartbeats: the quiet-minute test paces its monitor above KWOK's gap.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::allocation::{entry, node};
use common::{ClusterPeriods, Deadline, OperatorProcess, TestEnv, eventually, metric, wait_for};
use gpu_inventory_operator::crd::{GpuInventoryStatus, GpuNodeStatus, NodeIssue};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// The issue's target for a node change to reach its GpuNode (as tests/gpunodes.rs measures it).
const REACT: Duration = Duration::from_secs(2);

/// The product label GPU Feature Discovery puts on an H100 node.
const H100: &str = "NVIDIA-H100-80GB-HBM3";

/// NVIDIA's driver-upgrade label.
const UPGRADE_STATE: &str = "nvidia.com/gpu-driver-upgrade-state";

/// A Ready KWOK node with 8 H100s (the device plugin's resource, GPU Feature Discovery's labels).
fn h100_node(name: &str) -> Node {
    node(
        name,
        json!({ "nvidia.com/gpu.product": H100, "nvidia.com/gpu.count": "8" }),
        &[("nvidia.com/gpu", "8")],
    )
}

/// A time as the API writes it (whole seconds).
fn api_time(at: Timestamp) -> String {
    Timestamp::from_second(at.as_second()).unwrap().to_string()
}

/// Sets one node condition through the status subresource, as a health monitor does: a strategic merge keyed
/// by `type` (the kubelet's conditions stay), heartbeat now, last transition at `transition`.
async fn set_condition(
    env: &TestEnv,
    node: &str,
    type_: &str,
    status: &str,
    (reason, message): (&str, &str),
    transition: Timestamp,
) {
    let body = json!({ "status": { "conditions": [{
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastHeartbeatTime": api_time(Timestamp::now()),
        "lastTransitionTime": api_time(transition),
    }] } });
    Api::<Node>::all(env.client.clone())
        .patch_status(node, &PatchParams::default(), &Patch::Strategic(body))
        .await
        .unwrap_or_else(|e| panic!("setting condition {type_}={status} on {node}: {e}"));
}

/// A node's conditions as the server holds them: type -> (status, lastHeartbeatTime).
async fn conditions(env: &TestEnv, node: &str) -> BTreeMap<String, (String, Option<Timestamp>)> {
    let found = Api::<Node>::all(env.client.clone())
        .get(node)
        .await
        .unwrap_or_else(|e| panic!("reading node {node}: {e}"));
    found
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .map(|c| (c.type_, (c.status, c.last_heartbeat_time.map(|t| t.0))))
        .collect()
}

/// The node's issue of `reason`, if it has one.
fn issue<'a>(issues: &'a [NodeIssue], reason: &str) -> Option<&'a NodeIssue> {
    issues.iter().find(|i| i.reason == reason)
}

fn reasons(issues: &[NodeIssue]) -> Vec<&str> {
    issues.iter().map(|i| i.reason.as_str()).collect()
}

/// The GpuNode status's issue of `reason`, if it has one.
fn gpunode_issue<'a>(status: &'a GpuNodeStatus, reason: &str) -> Option<&'a NodeIssue> {
    issue(&status.node.issues, reason)
}

/// The inventory's `Degraded` condition.
fn degraded(status: &GpuInventoryStatus) -> Option<&Condition> {
    status.conditions.iter().find(|c| c.type_ == "Degraded")
}

fn degraded_is(status: &GpuInventoryStatus, want: &str) -> bool {
    degraded(status).is_some_and(|c| c.status == want)
}

/// The sum of every `gpu_inventory_guard_writes_total` series (status, ConfigMap, GpuNodes, ...).
async fn writes(operator: &OperatorProcess) -> f64 {
    let (_, text) = operator.http_get("/metrics").await;
    let series: Vec<f64> = text
        .lines()
        .filter(|l| l.starts_with("gpu_inventory_guard_writes_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(
        !series.is_empty(),
        "no gpu_inventory_guard_writes_total series in /metrics"
    );
    series.iter().sum()
}

/// `gpu_inventory_node_issues` of one reason in the test's inventory.
async fn node_issues(env: &TestEnv, operator: &OperatorProcess, reason: &str) -> Option<f64> {
    let (_, text) = operator.http_get("/metrics").await;
    metric(
        &text,
        &format!(
            "gpu_inventory_node_issues{{inventory=\"{}\",reason=\"{reason}\"}}",
            env.inventory_name()
        ),
    )
}

/// Waits until an event of `reason` about the test's inventory mentions `node`; returns (type, message).
async fn event_about(
    env: &TestEnv,
    deadline: impl Into<Deadline>,
    reason: &str,
    node: &str,
) -> (String, String) {
    let inv = env.inventory_name();
    wait_for(
        deadline,
        &format!("a {reason} event naming {node}"),
        || async {
            let events = env.events_about(&inv).await;
            events
                .iter()
                .find(|e| {
                    e.reason.as_deref() == Some(reason)
                        && e.message.as_deref().is_some_and(|m| m.contains(node))
                })
                .map(|e| {
                    (
                        e.type_.clone().unwrap_or_default(),
                        e.message.clone().unwrap_or_default(),
                    )
                })
                .ok_or_else(|| {
                    let seen: Vec<&str> =
                        events.iter().filter_map(|e| e.reason.as_deref()).collect();
                    format!("events {seen:?}")
                })
        },
    )
    .await
}

/// Waits (from the operator's start) until `node`'s GpuNode shows 8 GPUs and no issue, and the inventory is
/// not Degraded.
async fn healthy(env: &TestEnv, operator: &OperatorProcess, node: &str) {
    let periods = operator.periods();
    env.wait_gpunode(node, periods.converge(), "8 GPUs and no issue", |s| {
        s.node.count == 8 && s.node.issues.is_empty()
    })
    .await;
    env.wait_inventory(
        &env.inventory_name(),
        periods.follow(),
        "the inventory not Degraded",
        |s| entry(s, node).is_some() && degraded_is(s, "False"),
    )
    .await;
}

#[tokio::test]
async fn nvsentinel_condition_raises_an_issue_within_2s_and_clears_when_false() {
    let env = TestEnv::new("health-nvsentinel").await;
    let name = env.create_node(h100_node("h100")).await;
    let operator = env.start_operator("30s");
    let follow = operator.periods().follow();
    healthy(&env, &operator, &name).await;
    assert_eq!(
        node_issues(&env, &operator, "GpuHealthCheckFailed").await,
        Some(0.0)
    );

    // NVSentinel's DCGM memory watch finds a double-bit ECC error.
    let transition = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let started = Instant::now();
    set_condition(
        &env,
        &name,
        "GpuMemWatch",
        "True",
        ("GpuMemWatchIsNotHealthy", "GPU 3 ECC DBE"),
        transition,
    )
    .await;
    let gpunode = env
        .wait_gpunode(
            &name,
            REACT.saturating_sub(started.elapsed()),
            "GpuHealthCheckFailed in the GpuNode",
            |s| gpunode_issue(s, "GpuHealthCheckFailed").is_some(),
        )
        .await;
    eprintln!("GpuMemWatch=True -> GpuNode: {:?}", started.elapsed());
    let status = gpunode.status.unwrap();
    let failed = gpunode_issue(&status, "GpuHealthCheckFailed").unwrap();
    for part in [
        "GpuMemWatch",
        "NVIDIA NVSentinel",
        "GpuMemWatchIsNotHealthy",
        "GPU 3 ECC DBE",
    ] {
        assert!(
            failed.message.contains(part),
            "the issue names {part:?}: {}",
            failed.message
        );
    }
    assert_eq!(failed.severity, "Degraded");
    assert_eq!(
        failed
            .since
            .as_deref()
            .map(|s| s.parse::<Timestamp>().unwrap()),
        Some(transition),
        "since: the condition's lastTransitionTime"
    );
    assert_eq!(reasons(&status.node.issues), ["GpuHealthCheckFailed"]);
    assert!(status.node.ready, "a failed health check is not NotReady");
    assert_eq!(
        status.issue_reasons.as_deref(),
        Some("GpuHealthCheckFailed")
    );

    let inventory = env
        .wait_inventory(
            &env.inventory_name(),
            &follow,
            "the inventory Degraded by GpuHealthCheckFailed",
            |s| {
                entry(s, &name).is_some_and(|e| issue(&e.issues, "GpuHealthCheckFailed").is_some())
                    && degraded_is(s, "True")
            },
        )
        .await;
    eprintln!("GpuMemWatch=True -> inventory: {:?}", started.elapsed());
    let inv_status = inventory.status.unwrap();
    let condition = degraded(&inv_status).unwrap();
    assert!(
        condition.message.contains("GpuHealthCheckFailed: 1 node"),
        "{}",
        condition.message
    );
    assert!(
        inv_status
            .problem_nodes
            .iter()
            .any(|p| p.name == name && p.reasons == ["GpuHealthCheckFailed"]),
        "{:?}",
        inv_status.problem_nodes
    );
    let (type_, message) = event_about(&env, &follow, "GpuHealthCheckFailed", &name).await;
    assert_eq!(type_, "Warning", "{message}");
    assert!(message.contains("GPU 3 ECC DBE"), "{message}");
    eventually(&follow, "gpu_inventory_node_issues 1", || async {
        (node_issues(&env, &operator, "GpuHealthCheckFailed").await == Some(1.0)).then_some(())
    })
    .await;

    // The monitor finds the GPU healthy again.
    let started = Instant::now();
    set_condition(
        &env,
        &name,
        "GpuMemWatch",
        "False",
        ("GpuMemWatchIsHealthy", "GPU memory is healthy"),
        Timestamp::now(),
    )
    .await;
    env.wait_gpunode(
        &name,
        REACT.saturating_sub(started.elapsed()),
        "GpuHealthCheckFailed cleared in the GpuNode",
        |s| s.node.issues.is_empty() && s.issue_reasons.is_none(),
    )
    .await;
    eprintln!("GpuMemWatch=False -> GpuNode: {:?}", started.elapsed());
    env.wait_inventory(
        &env.inventory_name(),
        &follow,
        "the inventory no longer Degraded",
        |s| entry(s, &name).is_some_and(|e| e.issues.is_empty()) && degraded_is(s, "False"),
    )
    .await;
    let (type_, message) = event_about(&env, &follow, "GpuHealthCheckFailedResolved", &name).await;
    assert_eq!(type_, "Normal", "{message}");
    eventually(&follow, "gpu_inventory_node_issues 0", || async {
        (node_issues(&env, &operator, "GpuHealthCheckFailed").await == Some(0.0)).then_some(())
    })
    .await;
    // The condition is still on the node (False): the monitor's word that the GPU is fine, no issue.
    assert_eq!(
        conditions(&env, &name)
            .await
            .get("GpuMemWatch")
            .map(|c| c.0.as_str()),
        Some("False")
    );
}

/// The test's health monitor reporting (NVSentinel sets its conditions with every check): `healthy`'s GPU memory
/// is fine, `failing` has an Xid 79, both since `since`; the heartbeat is now.
async fn monitor_reports(env: &TestEnv, healthy: &str, failing: &str, since: Timestamp) {
    set_condition(
        env,
        healthy,
        "GpuMemWatch",
        "False",
        ("GpuMemWatchIsHealthy", "GPU memory is healthy"),
        since,
    )
    .await;
    set_condition(
        env,
        failing,
        "SysLogsXIDError",
        "True",
        (
            "SysLogsXIDErrorIsNotHealthy",
            "Xid 79: GPU has fallen off the bus",
        ),
        since,
    )
    .await;
}

#[tokio::test]
async fn heartbeats_of_a_node_with_a_health_condition_write_nothing_for_a_minute() {
    const QUIET: Duration = Duration::from_secs(60);
    // How often the test's monitor refreshes its conditions' heartbeats. KWOK (re)schedules a node's next
    // status heartbeat on every change of the node, the monitor's too: a monitor patching more often than
    // KWOK's longest gap would leave the kubelet's heartbeats out. A little more than that gap lets both
    // beat within the minute.
    let kwok_gap = ClusterPeriods::get().kwok_heartbeat_max;
    let monitor_every = kwok_gap + Duration::from_secs(8);
    let env = TestEnv::new("health-quiet").await;
    let healthy_node = env.create_node(h100_node("watched")).await;
    let failing_node = env.create_node(h100_node("xid")).await;
    let since = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    monitor_reports(&env, &healthy_node, &failing_node, since).await;
    let operator = env.start_operator("5s");
    let periods = operator.periods();
    env.wait_gpunode(
        &failing_node,
        periods.converge(),
        "GpuHealthCheckFailed for the Xid",
        |s| gpunode_issue(s, "GpuHealthCheckFailed").is_some(),
    )
    .await;
    env.wait_gpunode(&healthy_node, periods.follow(), "no issue", |s| {
        s.node.count == 8 && s.node.issues.is_empty()
    })
    .await;
    // The start-up settles: the node lifecycle controller lifts the new nodes' not-ready taints, and the writes
    // stop: the count holds still for one periodic pass.
    for n in [&healthy_node, &failing_node] {
        env.wait_schedulable(n).await;
    }
    let mut before = writes(&operator).await;
    let mut still_since = Instant::now();
    let settle = periods.follow();
    let settling = Instant::now();
    while still_since.elapsed() < periods.requeue {
        assert!(
            settling.elapsed() < settle.limit(),
            "the operator's writes did not stop for {:?} within {settle}: {before} so far",
            periods.requeue
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
        let now = writes(&operator).await;
        if now != before {
            (before, still_since) = (now, Instant::now());
        }
    }
    let versions = || async {
        let inventory = env.inventory(&env.inventory_name()).await.unwrap();
        let configmap = env.configmap().await.unwrap();
        let mut gpunodes: Vec<(String, Option<String>)> = env
            .gpunodes()
            .await
            .into_iter()
            .map(|n| {
                (
                    n.metadata.name.unwrap_or_default(),
                    n.metadata.resource_version,
                )
            })
            .collect();
        gpunodes.sort();
        (
            inventory.metadata.resource_version,
            configmap.metadata.resource_version,
            gpunodes,
        )
    };
    let versions_before = versions().await;
    assert_eq!(versions_before.2.len(), 2, "{versions_before:?}");
    let ready_heartbeat =
        |c: &BTreeMap<String, (String, Option<Timestamp>)>| c.get("Ready").and_then(|r| r.1);
    let mut kwok_before = BTreeMap::new();
    for n in [&healthy_node, &failing_node] {
        kwok_before.insert(n.clone(), ready_heartbeat(&conditions(&env, n).await));
    }

    // A minute of heartbeats: KWOK's (every node's kubelet conditions, every 10-20 s) and the monitor's.
    let quiet = Instant::now();
    let mut kwok_beats: BTreeMap<String, Vec<Duration>> = BTreeMap::new();
    let mut monitor_at = Vec::new();
    let mut monitor_beats = 0;
    let mut next_report = quiet + Duration::from_secs(2);
    while quiet.elapsed() < QUIET {
        if Instant::now() >= next_report {
            monitor_reports(&env, &healthy_node, &failing_node, since).await;
            monitor_beats += 1;
            monitor_at.push(quiet.elapsed());
            next_report += monitor_every;
        }
        for n in [&healthy_node, &failing_node] {
            let now = conditions(&env, n).await;
            let beat = ready_heartbeat(&now);
            if beat != kwok_before[n] {
                kwok_beats
                    .entry(n.clone())
                    .or_default()
                    .push(quiet.elapsed());
                kwok_before.insert(n.clone(), beat);
            }
            let monitor_type = if n == &healthy_node {
                "GpuMemWatch"
            } else {
                "SysLogsXIDError"
            };
            assert!(
                now.contains_key(monitor_type),
                "KWOK's heartbeat dropped the monitor's condition {monitor_type} from {n}: {now:?}"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // A write the last heartbeats caused would be done within two periodic passes.
    tokio::time::sleep(2 * periods.requeue).await;
    let (after, versions_after) = (writes(&operator).await, versions().await);
    eprintln!(
        "{QUIET:?}: KWOK heartbeats at {kwok_beats:.1?}, the monitor's at {monitor_at:.1?}; writes \
         {before} -> {after}"
    );
    assert!(
        [&healthy_node, &failing_node]
            .iter()
            .all(|n| kwok_beats.get(*n).is_some_and(|b| !b.is_empty())),
        "every KWOK node heartbeated in {QUIET:?} (its stage's longest gap is {kwok_gap:?}): {kwok_beats:?}"
    );
    assert!(monitor_beats >= 2, "{monitor_beats} monitor heartbeats");
    assert_eq!(
        after, before,
        "writes while the kubelet and the health monitor heartbeated"
    );
    assert_eq!(
        versions_after, versions_before,
        "the GpuInventory, ConfigMap and GpuNodes (resourceVersions) did not change"
    );
    let failing = env.gpunode(&failing_node).await.unwrap().status.unwrap();
    assert!(
        gpunode_issue(&failing, "GpuHealthCheckFailed").is_some_and(|i| i
            .since
            .as_deref()
            .and_then(|s| s.parse::<Timestamp>().ok())
            == Some(since)),
        "the issue holds, since the condition's transition: {:?}",
        failing.node.issues
    );
}

#[tokio::test]
async fn a_remediation_taint_and_cordon_labels_name_who_and_why() {
    let env = TestEnv::new("health-quarantine").await;
    let quarantined = env.create_node(h100_node("xid79")).await;
    let cordoned = env.create_node(h100_node("maint")).await;
    let operator = env.start_operator("30s");
    let follow = operator.periods().follow();
    healthy(&env, &operator, &quarantined).await;
    healthy(&env, &operator, &cordoned).await;
    // The taints list is replaced below: the node lifecycle controller's not-ready taint is gone first.
    env.wait_schedulable(&quarantined).await;

    // NVSentinel's fault quarantine: cordon, who and why, and its taint.
    Api::<Node>::all(env.client.clone())
        .patch(
            &quarantined,
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "labels": {
                    "k8saas.nvidia.com/cordon-by": "nvsentinel",
                    "k8saas.nvidia.com/cordon-reason": "GpuXidError-79",
                } },
                "spec": {
                    "unschedulable": true,
                    "taints": [{ "key": "nvidia.com/gpu-xid-error", "value": "79", "effect": "NoSchedule" }],
                },
            })),
        )
        .await
        .expect("quarantining the node");
    // A plain cordon, nobody saying why.
    env.cordon(&cordoned, true).await;

    let status = env
        .wait_gpunode(&quarantined, &follow, "GpuNodeQuarantined", |s| {
            s.node.unschedulable && gpunode_issue(s, "GpuNodeQuarantined").is_some()
        })
        .await
        .status
        .unwrap();
    let quarantine = gpunode_issue(&status, "GpuNodeQuarantined").unwrap();
    for part in [
        "NVIDIA NVSentinel",
        "k8saas.nvidia.com/cordon-by=nvsentinel",
        "GpuXidError-79",
        "nvidia.com/gpu-xid-error=79:NoSchedule",
    ] {
        assert!(
            quarantine.message.contains(part),
            "the issue names {part:?}: {}",
            quarantine.message
        );
    }
    assert_eq!(quarantine.severity, "Degraded");
    assert_eq!(
        reasons(&status.node.issues),
        ["GpuNodeQuarantined"],
        "the cordon is NVSentinel's: no plain Unschedulable"
    );

    let status = env
        .wait_gpunode(&cordoned, &follow, "Unschedulable", |s| {
            s.node.unschedulable && gpunode_issue(s, "Unschedulable").is_some()
        })
        .await
        .status
        .unwrap();
    assert_eq!(
        reasons(&status.node.issues),
        ["Unschedulable"],
        "a cordon nobody explains is no quarantine"
    );

    let inventory = env
        .wait_inventory(
            &env.inventory_name(),
            &follow,
            "both in the inventory",
            |s| {
                entry(s, &quarantined).is_some_and(|e| reasons(&e.issues) == ["GpuNodeQuarantined"])
                    && entry(s, &cordoned).is_some_and(|e| reasons(&e.issues) == ["Unschedulable"])
            },
        )
        .await
        .status
        .unwrap();
    let condition = degraded(&inventory).unwrap();
    assert_eq!(condition.status, "True");
    assert!(
        condition.message.contains("GpuNodeQuarantined: 1 node")
            && condition.message.contains("Unschedulable: 1 node"),
        "{}",
        condition.message
    );
    let (type_, message) = event_about(&env, &follow, "GpuNodeQuarantined", &quarantined).await;
    assert_eq!(type_, "Warning", "{message}");
    assert!(message.contains("GpuXidError-79"), "{message}");

    // NVSentinel puts the node back: no cordon, no labels, no taint, no issue.
    Api::<Node>::all(env.client.clone())
        .patch(
            &quarantined,
            &PatchParams::default(),
            &Patch::Merge(json!({
                "metadata": { "labels": {
                    "k8saas.nvidia.com/cordon-by": null,
                    "k8saas.nvidia.com/cordon-reason": null,
                } },
                "spec": { "unschedulable": false, "taints": null },
            })),
        )
        .await
        .expect("putting the node back");
    env.wait_gpunode(&quarantined, &follow, "no issue once put back", |s| {
        !s.node.unschedulable && s.node.issues.is_empty()
    })
    .await;
    let (type_, _) = event_about(&env, &follow, "GpuNodeQuarantinedResolved", &quarantined).await;
    assert_eq!(type_, "Normal");
}

#[tokio::test]
async fn a_driver_upgrade_walk_is_information_until_it_fails() {
    let env = TestEnv::new("health-upgrade").await;
    let name = env.create_node(h100_node("h100")).await;
    let operator = env.start_operator("30s");
    let follow = operator.periods().follow();
    healthy(&env, &operator, &name).await;
    let inv = env.inventory_name();

    // The GPU operator's upgrade controller walks the node through its states, cordoning and uncordoning it.
    let walk: [(&str, Option<bool>); 4] = [
        ("upgrade-required", None),
        ("cordon-required", Some(true)),
        ("drain-required", None),
        ("uncordon-required", Some(false)),
    ];
    let mut cordoned = false;
    for (state, cordon) in walk {
        env.set_label(&name, UPGRADE_STATE, Some(state)).await;
        if let Some(cordon) = cordon {
            env.cordon(&name, cordon).await;
            cordoned = cordon;
        }
        let label = format!("{UPGRADE_STATE}={state}");
        // The status that shows this step (state and cordon) is the one whose condition must not be Degraded.
        let status = env
            .wait_inventory(&inv, &follow, &format!("the step {state}"), |s| {
                entry(s, &name).is_some_and(|e| {
                    e.unschedulable == cordoned
                        && issue(&e.issues, "DriverUpgradeInProgress")
                            .is_some_and(|i| i.message.contains(&label))
                })
            })
            .await
            .status
            .unwrap();
        let node = entry(&status, &name).unwrap();
        assert_eq!(
            reasons(&node.issues),
            ["DriverUpgradeInProgress"],
            "{state}: the upgrade's cordon is no Unschedulable"
        );
        let upgrading = issue(&node.issues, "DriverUpgradeInProgress").unwrap();
        assert_eq!(upgrading.severity, "Info", "{state}");
        assert!(
            upgrading.message.contains("NVIDIA GPU operator"),
            "{}",
            upgrading.message
        );
        let condition = degraded(&status).unwrap();
        assert_eq!(
            condition.status, "False",
            "{state}: planned work does not degrade the inventory: {}",
            condition.message
        );
        // The GpuNode says the same.
        env.wait_gpunode(&name, &follow, &format!("the step {state}"), |s| {
            s.node.unschedulable == cordoned
                && s.issue_reasons.as_deref() == Some("DriverUpgradeInProgress")
                && gpunode_issue(s, "DriverUpgradeInProgress")
                    .is_some_and(|i| i.message.contains(&label) && i.severity == "Info")
        })
        .await;
        if state == "upgrade-required" {
            let (type_, message) =
                event_about(&env, &follow, "DriverUpgradeInProgress", &name).await;
            assert_eq!(
                type_, "Normal",
                "information is told, not warned: {message}"
            );
        }
    }

    env.set_label(&name, UPGRADE_STATE, Some("upgrade-done"))
        .await;
    let status = env
        .wait_inventory(&inv, &follow, "upgrade-done: no issue", |s| {
            entry(s, &name).is_some_and(|e| e.issues.is_empty() && !e.unschedulable)
        })
        .await
        .status
        .unwrap();
    assert!(degraded_is(&status, "False"), "{:?}", degraded(&status));
    env.wait_gpunode(&name, &follow, "upgrade-done: no issue", |s| {
        s.node.issues.is_empty()
    })
    .await;
    let (type_, _) = event_about(&env, &follow, "DriverUpgradeInProgressResolved", &name).await;
    assert_eq!(type_, "Normal");

    env.set_label(&name, UPGRADE_STATE, Some("upgrade-failed"))
        .await;
    let status = env
        .wait_inventory(&inv, &follow, "upgrade-failed: DriverUpgradeFailed", |s| {
            entry(s, &name).is_some_and(|e| issue(&e.issues, "DriverUpgradeFailed").is_some())
        })
        .await
        .status
        .unwrap();
    let node = entry(&status, &name).unwrap();
    assert_eq!(reasons(&node.issues), ["DriverUpgradeFailed"]);
    let failed = issue(&node.issues, "DriverUpgradeFailed").unwrap();
    assert_eq!(failed.severity, "Degraded");
    assert!(
        failed
            .message
            .contains(&format!("{UPGRADE_STATE}=upgrade-failed")),
        "{}",
        failed.message
    );
    let condition = degraded(&status).unwrap();
    assert_eq!(condition.status, "True", "{}", condition.message);
    assert!(
        condition.message.contains("DriverUpgradeFailed: 1 node"),
        "{}",
        condition.message
    );
    let (type_, _) = event_about(&env, &follow, "DriverUpgradeFailed", &name).await;
    assert_eq!(type_, "Warning");
}

#[tokio::test]
async fn a_node_known_only_by_gpu_present_is_a_gpu_node_missing_its_resources_after_the_grace() {
    const GRACE: Duration = Duration::from_secs(3);
    let env = TestEnv::new("health-present").await;
    // Nothing changes on the node when its grace runs out: the operator's next periodic pass reports it.
    let operator = env.start_operator_with("5s", &["--resources-grace", "3s"]);
    let periods = operator.periods();
    env.wait_inventory(
        &env.inventory_name(),
        periods.converge(),
        "the operator's first status",
        |_| true,
    )
    .await;

    // The GPU operator's node feature rule found a GPU; the driver and the device plugin are not up yet.
    let created = Instant::now();
    let name = env
        .create_node(node(
            "present",
            json!({ "nvidia.com/gpu.present": "true" }),
            &[],
        ))
        .await;
    let first = env
        .wait_gpunode(
            &name,
            Deadline::reaction("the operator following a new node"),
            "a GpuNode for the node",
            |_| true,
        )
        .await
        .status
        .unwrap();
    let first_seen = created.elapsed();
    eprintln!(
        "GpuNode after {first_seen:?}: issues {:?}",
        first.node.issues
    );
    assert_eq!(first.vendor.as_deref(), Some("nvidia"));
    assert_eq!(first.node.count, 0);
    if first_seen < GRACE {
        assert!(
            gpunode_issue(&first, "GpuResourcesMissing").is_none(),
            "GpuResourcesMissing {first_seen:?} after the node appeared, within the grace of {GRACE:?}: {:?}",
            first.node.issues
        );
    }
    let deadline = Deadline::new(GRACE, "the grace (--resources-grace 3s)").then(periods.follow());
    let status = env
        .wait_gpunode(
            &name,
            deadline,
            "GpuResourcesMissing after the grace",
            |s| gpunode_issue(s, "GpuResourcesMissing").is_some(),
        )
        .await
        .status
        .unwrap();
    let missing_after = created.elapsed();
    eprintln!("GpuResourcesMissing after {missing_after:?}");
    assert!(
        missing_after >= GRACE,
        "GpuResourcesMissing {missing_after:?} after the node was created, before the grace of {GRACE:?}"
    );
    let missing = gpunode_issue(&status, "GpuResourcesMissing").unwrap();
    for part in ["nvidia.com/gpu.present", "no nvidia.com/gpu"] {
        assert!(
            missing.message.contains(part),
            "the issue names {part:?}: {}",
            missing.message
        );
    }
    assert_eq!(missing.severity, "Degraded");
    env.wait_inventory(
        &env.inventory_name(),
        periods.follow(),
        "the inventory Degraded by the missing resources",
        |s| {
            entry(s, &name).is_some_and(|e| issue(&e.issues, "GpuResourcesMissing").is_some())
                && degraded_is(s, "True")
        },
    )
    .await;

    // The device plugin registers: 8 GPUs.
    for field in ["capacity", "allocatable"] {
        env.set_resources(&name, field, &[("nvidia.com/gpu", "8")])
            .await;
    }
    let started = Instant::now();
    env.wait_gpunode(&name, periods.follow(), "8 GPUs, nothing missing", |s| {
        s.node.count == 8 && s.node.issues.is_empty()
    })
    .await;
    eprintln!("resources advertised -> GpuNode: {:?}", started.elapsed());
    env.wait_inventory(
        &env.inventory_name(),
        periods.follow(),
        "the inventory no longer Degraded",
        |s| entry(s, &name).is_some_and(|e| e.issues.is_empty()) && degraded_is(s, "False"),
    )
    .await;
    let (type_, _) =
        event_about(&env, periods.follow(), "GpuResourcesMissingResolved", &name).await;
    assert_eq!(type_, "Normal");
}
