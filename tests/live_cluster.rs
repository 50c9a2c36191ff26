//! What a cluster with controllers does to the inventory: kubelet heartbeats (KWOK), the node lifecycle
//! controller marking a silent node Unknown and tainting it, the scheduler placing GPU pods. Needs
//! kube-controller-manager, kube-scheduler and KWOK (hack/local-cluster.sh runs them; on kind, install KWOK
//! with the stages in hack/kwok/ as .github/workflows/ci.yml does). Each test fails, never skips, without them.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{ClusterPeriods, TEST_LABEL, TestEnv, eventually, wait_for};
use gpu_inventory_operator::crd::GpuNodeEntry;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use serde_json::json;

/// When the node's kubelet last spoke: the later of its Lease renewal and its Ready condition's heartbeat.
async fn last_heartbeat(env: &TestEnv, node: &str) -> jiff::Timestamp {
    let leases: Api<Lease> = Api::namespaced(env.client.clone(), "kube-node-lease");
    let renewed = leases
        .get(node)
        .await
        .ok()
        .and_then(|l| l.spec?.renew_time)
        .map(|t| t.0);
    let node = Api::<Node>::all(env.client.clone())
        .get(node)
        .await
        .unwrap();
    let heartbeat = node
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .and_then(|c| c.last_heartbeat_time)
        .map(|t| t.0);
    renewed
        .max(heartbeat)
        .expect("the node has a Lease or a Ready heartbeat")
}

/// A GPU node as GPU Feature Discovery and the device plugin describe it, Ready, with what the scheduler
/// needs to place pods on it (cpu, memory, pods).
fn gpu_node(name: &str, gpus: u32) -> Node {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": gpus.to_string(),
            "nvidia.com/gpu.memory": "81559",
        }},
        "status": {
            "capacity": { "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string() },
            "allocatable": { "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string() },
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "kubelet is posting ready status" }]
        }
    }))
    .unwrap()
}

fn entry<'a>(
    status: &'a gpu_inventory_operator::crd::GpuInventoryStatus,
    node: &str,
) -> Option<&'a GpuNodeEntry> {
    status.nodes.iter().find(|n| n.name == node)
}

fn reasons(entry: &GpuNodeEntry) -> Vec<&str> {
    entry.issues.iter().map(|i| i.reason.as_str()).collect()
}

/// Prints a measured figure and appends it to target/test-logs/live-cluster-figures.txt (passing tests' output
/// is not shown, and these numbers go into the notes).
fn report(line: String) {
    use std::io::Write;
    eprintln!("{line}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("live-cluster-figures.txt"))
    {
        let _ = writeln!(file, "{} {line}", jiff::Timestamp::now());
    }
}

/// A series the operator must export, read from its /metrics text.
fn metric(text: &str, series: &str) -> f64 {
    common::metric(text, series)
        .unwrap_or_else(|| panic!("no series {series} in /metrics:\n{text}"))
}

#[tokio::test]
async fn heartbeats_of_50_kwok_gpu_nodes_cause_no_writes() {
    let env = TestEnv::new("heartbeats").await;
    let mut names = Vec::new();
    for i in 0..50 {
        names.push(env.create_node(gpu_node(&format!("hb{i:02}"), 8)).await);
    }
    let operator = env.start_operator("5s");
    let periods = operator.periods();
    env.wait_inventory(
        &env.inventory_name(),
        periods.converge(),
        "50 Ready GPU nodes",
        |s| (s.total_gpu_nodes, s.ready_gpu_nodes) == (50, 50),
    )
    .await;
    env.wait_configmap(periods.follow(), "50 node entries", |d| d.len() == 51)
        .await;
    // The test can read a write back before the operator has counted it (the count follows the server's
    // reply): the baseline is taken once the count has held still for one periodic pass (`--requeue`: what
    // the operator still had to write is written by then), and the objects are read after it.
    let writes = || async {
        let (_, text) = operator.http_get("/metrics").await;
        metric(&text, "gpu_inventory_guard_writes_total{target=\"status\"}")
            + metric(
                &text,
                "gpu_inventory_guard_writes_total{target=\"configmap\"}",
            )
    };
    let settle = periods.follow();
    let settling = Instant::now();
    let mut writes_before = writes().await;
    let mut still_since = Instant::now();
    while still_since.elapsed() < periods.requeue {
        assert!(
            settling.elapsed() < settle.limit(),
            "the operator's writes did not stop for {:?} within {settle}: {writes_before} so far",
            periods.requeue
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = writes().await;
        if now != writes_before {
            (writes_before, still_since) = (now, Instant::now());
        }
    }
    let inventory = env.inventory(&env.inventory_name()).await.unwrap();
    let configmap = env.configmap().await.unwrap();
    let nodes: Api<Node> = Api::all(env.client.clone());
    let versions = |list: Vec<Node>| -> BTreeMap<String, String> {
        list.into_iter()
            .map(|n| {
                (
                    n.metadata.name.clone().unwrap(),
                    n.metadata.resource_version.unwrap(),
                )
            })
            .collect()
    };
    let selector = kube::api::ListParams::default().labels(&format!("{TEST_LABEL}={}", env.id));
    let before = versions(nodes.list(&selector).await.unwrap().items);

    // The quiet period covers what it is about: until every node has sent a status heartbeat (its
    // resourceVersion moved; KWOK's heartbeat stage bounds the gap), then two periodic passes, by which any
    // write the heartbeats caused is done.
    let quiet = Instant::now();
    let deadline = ClusterPeriods::get().kwok_heartbeat();
    wait_for(
        deadline,
        "a status heartbeat of each of the 50 KWOK nodes (is KWOK running with status heartbeats: \
         hack/local-cluster.sh, LOCAL_CLUSTER_NODE_STATUS_SECS?)",
        || async {
            let now = versions(
                nodes
                    .list(&selector)
                    .await
                    .map_err(|e| e.to_string())?
                    .items,
            );
            let silent = names
                .iter()
                .filter(|n| before.get(*n) == now.get(*n))
                .count();
            if silent == 0 {
                Ok(())
            } else {
                Err(format!("{silent} of 50 nodes have not heartbeated"))
            }
        },
    )
    .await;
    let heartbeated = quiet.elapsed();
    tokio::time::sleep(2 * periods.requeue).await;

    let writes_after = writes().await;
    let inventory_after = env.inventory(&env.inventory_name()).await.unwrap();
    let configmap_after = env.configmap().await.unwrap();
    report(format!(
        "every one of 50 nodes heartbeated within {heartbeated:.1?}, then {:?} more; operator writes \
         {writes_before} -> {writes_after}; GpuInventory resourceVersion {:?} -> {:?}; ConfigMap {:?} -> {:?}",
        2 * periods.requeue,
        inventory.metadata.resource_version,
        inventory_after.metadata.resource_version,
        configmap.metadata.resource_version,
        configmap_after.metadata.resource_version
    ));
    assert_eq!(writes_after, writes_before, "heartbeats caused writes");
    assert_eq!(
        inventory_after.metadata.resource_version, inventory.metadata.resource_version,
        "the GpuInventory changed"
    );
    assert_eq!(
        configmap_after.metadata.resource_version, configmap.metadata.resource_version,
        "the ConfigMap changed"
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_kwok_node_whose_heartbeats_stop_goes_not_ready_then_ready_again() {
    let env = TestEnv::new("silent-node").await;
    let node = env.create_node(gpu_node("silent", 4)).await;
    let operator = env.start_operator("5s");
    let periods = operator.periods();
    let cluster = ClusterPeriods::get();
    let inventory = env.inventory_name();
    env.wait_inventory(&inventory, periods.converge(), "the Ready node", |s| {
        s.ready_gpu_nodes == 1
    })
    .await;

    // The simulated kubelet goes silent: no more Lease renewals, no status updates. One status heartbeat
    // KWOK had already scheduled may still land, so the clock starts at the kubelet's last word, read back below.
    env.silence_kubelet(&node).await;
    let grace = cluster.node_monitor_grace;
    let deadline = cluster.node_goes_unknown().then(periods.follow());
    let status = env
        .wait_inventory(&inventory, deadline, "NotReady", |s| {
            entry(s, &node).is_some_and(|e| !e.ready)
        })
        .await
        .status
        .unwrap();
    let seen = jiff::Timestamp::now();
    let silent_since = last_heartbeat(&env, &node).await;
    let after = seen.duration_since(silent_since);
    report(format!(
        "the inventory said NotReady {after:#} after the kubelet's last heartbeat (grace {grace:?})"
    ));
    assert!(
        after <= jiff::SignedDuration::try_from(grace + Duration::from_secs(5)).unwrap(),
        "NotReady {after:#} after the last heartbeat: more than the grace period ({grace:?}) + 5 s"
    );
    let e = entry(&status, &node).unwrap();
    assert_eq!(reasons(e), ["NotReady"], "{e:?}");
    assert!(
        e.issues[0].message.contains("Unknown"),
        "the node lifecycle controller's verdict: {e:?}"
    );

    // Heartbeats resume: KWOK renews the Lease again and reports the node Ready.
    // KWOK takes the Lease over at its next renewal and reports the node Ready; the operator follows.
    env.resume_kubelet(&node).await;
    let renew = cluster.kwok_lease_renew;
    let deadline = common::Deadline::new(renew, format!("KWOK's next Lease renewal ({renew:?})"))
        .then(common::Deadline::reaction("KWOK reporting the node Ready"))
        .then(periods.follow());
    env.wait_inventory(&inventory, deadline, "Ready again", |s| {
        entry(s, &node).is_some_and(|e| e.ready && e.issues.is_empty())
    })
    .await;
    env.cleanup().await;
}

/// A pod in the test's namespace asking for `gpus` whole GPUs on `node`, created once the namespace's default
/// ServiceAccount exists (the controller-manager creates it).
async fn create_gpu_pod(env: &TestEnv, name: &str, node: &str, gpus: u32) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { TEST_LABEL: env.id } },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": node },
            "automountServiceAccountToken": false,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }]
        }
    }))
    .unwrap();
    env.create_pod(pod).await;
}

#[tokio::test]
async fn the_scheduler_places_a_gpu_pod_and_leaves_an_oversized_one_pending() {
    let env = TestEnv::new("scheduler").await;
    let node = env.create_node(gpu_node("sched", 2)).await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);

    create_gpu_pod(&env, "one-gpu", &node, 1).await;
    // Bound by the scheduler once the node's not-ready taint is lifted, then Running by KWOK.
    let deadline = ClusterPeriods::get()
        .scheduling()
        .then(common::Deadline::reaction("KWOK starting the pod"));
    let running = eventually(
        deadline,
        "the 1-GPU pod Running on the KWOK node",
        || async {
            let pod = pods.get("one-gpu").await.ok()?;
            let phase = pod.status.as_ref()?.phase.clone()?;
            (phase == "Running").then_some(pod)
        },
    )
    .await;
    assert_eq!(
        running.spec.unwrap().node_name.as_deref(),
        Some(node.as_str()),
        "bound by the scheduler"
    );

    create_gpu_pod(&env, "too-many", &node, 99).await;
    let deadline = ClusterPeriods::get().controller_reaction("kube-scheduler's first attempt");
    let condition = eventually(deadline, "the 99-GPU pod Unschedulable", || async {
        let pod = pods.get("too-many").await.ok()?;
        let conditions = pod.status?.conditions?;
        conditions
            .into_iter()
            .find(|c| c.type_ == "PodScheduled" && c.status == "False")
    })
    .await;
    assert_eq!(condition.reason.as_deref(), Some("Unschedulable"));
    assert!(
        condition
            .message
            .as_deref()
            .unwrap_or("")
            .contains("nvidia.com/gpu"),
        "{condition:?}"
    );
    let pod = pods.get("too-many").await.unwrap();
    assert_eq!(pod.spec.unwrap().node_name, None);
    assert_eq!(pod.status.unwrap().phase.as_deref(), Some("Pending"));
    env.cleanup().await;
}

#[tokio::test]
async fn the_node_controllers_taints_and_cordon_do_not_confuse_the_scanner() {
    let env = TestEnv::new("taints").await;
    let dead = env.create_node(gpu_node("dead", 4)).await;
    let cordoned = env.create_node(gpu_node("cordoned", 4)).await;
    let operator = env.start_operator("5s");
    let cluster = ClusterPeriods::get();
    env.silence_kubelet(&dead).await;
    env.cordon(&cordoned, true).await;

    let nodes: Api<Node> = Api::all(env.client.clone());
    let taint_keys = |node: Node| -> Vec<String> {
        node.spec
            .and_then(|s| s.taints)
            .into_iter()
            .flatten()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect()
    };
    // The dead node: marked Unknown and tainted unreachable by the node lifecycle controller; the cordoned
    // one: tainted unschedulable at its next look.
    let limit = cluster.node_goes_unknown();
    eventually(limit, "the controllers' taints on both nodes", || async {
        let dead_taints = taint_keys(nodes.get(&dead).await.ok()?);
        let cordoned_taints = taint_keys(nodes.get(&cordoned).await.ok()?);
        (dead_taints.contains(&"node.kubernetes.io/unreachable:NoSchedule".to_owned())
            && cordoned_taints.contains(&"node.kubernetes.io/unschedulable:NoSchedule".to_owned()))
        .then_some(())
    })
    .await;

    let status = env
        .wait_inventory(
            &env.inventory_name(),
            operator.periods().follow(),
            "the dead node NotReady",
            |s| entry(s, &dead).is_some_and(|e| !e.ready),
        )
        .await
        .status
        .unwrap();
    let (dead_entry, cordoned_entry) = (
        entry(&status, &dead).unwrap(),
        entry(&status, &cordoned).unwrap(),
    );
    assert_eq!(
        reasons(dead_entry),
        ["NotReady"],
        "taints are not GPU issues: {dead_entry:?}"
    );
    assert_eq!(
        reasons(cordoned_entry),
        ["Unschedulable"],
        "{cordoned_entry:?}"
    );
    assert!(cordoned_entry.ready && cordoned_entry.unschedulable);
    assert_eq!(
        (dead_entry.count, cordoned_entry.count),
        (4, 4),
        "GPUs still counted"
    );
    env.cleanup().await;
}
