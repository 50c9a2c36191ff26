//! What is free, on the real scheduler and KWOK nodes: pods the scheduler binds show up as allocated, free
//! again when they finish or go; pods it cannot place make `GpusAvailable` False; MIG and renamed shared
//! resources keep their names; init containers and sidecars count by the scheduler's rule; other namespaces,
//! finished pods and deleted nodes; CPU-only pod churn writes nothing. Needs kube-scheduler,
//! kube-controller-manager and KWOK (hack/local-cluster.sh); each test fails, never skips, without them.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::allocation::{counts, entry, node, node_holds, wait_gpus_available};
use common::{OperatorProcess, TestEnv, eventually};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const CONVERGE: Duration = Duration::from_secs(30);
/// The issue's promise: a pod bound or gone is in the status within 2 s.
const FOLLOW: Duration = Duration::from_secs(2);
const GPU: &str = "nvidia.com/gpu";

fn h100_node(name: &str, gpus: u32) -> Node {
    let labels = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": gpus.to_string(), "nvidia.com/gpu.memory": "81559" });
    node(name, labels, &[(GPU, &gpus.to_string())])
}

/// A container asking for `resources` (as limits: the API server copies them to requests).
fn container(name: &str, resources: &[(&str, u32)]) -> Value {
    let limits: serde_json::Map<String, Value> = resources
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!(v.to_string())))
        .collect();
    json!({ "name": name, "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
            "resources": { "limits": limits } })
}

/// Creates a pod in `namespace` pinned to `node` by its hostname label (so the scheduler cannot use another
/// test's GPU nodes); `spec` adds containers and init containers. Retried while the namespace's default
/// ServiceAccount does not exist yet (the controller-manager creates it).
async fn create_pod(env: &TestEnv, namespace: &str, name: &str, node: &str, spec: Value) -> Pod {
    let mut spec = spec;
    spec["nodeSelector"] = json!({ "kubernetes.io/hostname": node });
    spec["automountServiceAccountToken"] = json!(false);
    let pod: Pod =
        serde_json::from_value(json!({ "metadata": { "name": name }, "spec": spec })).unwrap();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    eventually(CONVERGE, &format!("creating pod {name}"), || async {
        pods.create(&PostParams::default(), &pod)
            .await
            .map_err(|e| eprintln!("creating pod {name}: {e} (retrying)"))
            .ok()
    })
    .await
}

async fn gpu_pod(env: &TestEnv, name: &str, node: &str, resources: &[(&str, u32)]) -> Pod {
    let spec = json!({ "containers": [container("cuda", resources)] });
    create_pod(env, &env.namespace, name, node, spec).await
}

/// Waits until the scheduler has bound the pod; returns when that was seen.
async fn bound(env: &TestEnv, namespace: &str, name: &str) -> Instant {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    eventually(
        CONVERGE,
        &format!("pod {name} bound by the scheduler"),
        || async {
            let pod = pods.get(name).await.ok()?;
            pod.spec?.node_name.map(|_| Instant::now())
        },
    )
    .await
}

/// Waits until the pod is gone from the API server (KWOK finishes deleting it).
async fn delete_pod(env: &TestEnv, namespace: &str, name: &str) -> Instant {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    pods.delete(name, &DeleteParams::default()).await.unwrap();
    eventually(CONVERGE, &format!("pod {name} gone"), || async {
        matches!(pods.get_opt(name).await, Ok(None)).then(Instant::now)
    })
    .await
}

/// Reports the pod finished, as its kubelet would (phase Succeeded through the status subresource).
async fn finish_pod(env: &TestEnv, namespace: &str, name: &str) -> Instant {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "phase": "Succeeded" } })),
    )
    .await
    .unwrap();
    Instant::now()
}

/// A Ready, schedulable H100 node with `gpus` GPUs, and the operator (scoped to the test) converged on it.
async fn converged_on_h100(env: &TestEnv, name: &str, gpus: u32) -> (String, OperatorProcess) {
    let node = env.create_node(h100_node(name, gpus)).await;
    env.wait_schedulable(&node).await;
    let operator = env.start_operator("30s");
    let free = u64::from(gpus);
    node_holds(
        env,
        Instant::now(),
        CONVERGE,
        &node,
        &[(GPU, 0)],
        &[(GPU, free)],
    )
    .await;
    (node, operator)
}

#[tokio::test]
async fn pods_the_scheduler_binds_are_allocated_within_2_s_and_free_again_when_they_finish_or_go() {
    let env = TestEnv::new("alloc-follow").await;
    let (node, operator) = converged_on_h100(&env, "h100", 8).await;
    // The first reconcile's event is posted after its status write: wait for it, or it would be
    // counted as made by the pods below.
    let events_before = eventually(CONVERGE, "the InventoryObserved event", || async {
        let events = env.events_about(&env.inventory_name()).await;
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("InventoryObserved"))
            .then_some(events.len())
    })
    .await;

    gpu_pod(&env, "two", &node, &[(GPU, 2)]).await;
    gpu_pod(&env, "three", &node, &[(GPU, 3)]).await;
    let seen = bound(&env, &env.namespace, "two")
        .await
        .max(bound(&env, &env.namespace, "three").await);
    let status = node_holds(&env, seen, FOLLOW, &node, &[(GPU, 5)], &[(GPU, 3)]).await;
    assert_eq!(status.free_gpus, 3);
    assert_eq!(status.products[0].free_gpus, 3);
    let resource = &status.resources[0];
    assert_eq!(
        (resource.name.as_str(), resource.allocated, resource.free),
        (GPU, 5, 3)
    );
    let ns = &status.namespaces[0];
    assert_eq!(
        (ns.name.as_str(), &ns.allocated),
        (env.namespace.as_str(), &counts(&[(GPU, 5)]))
    );
    // The ConfigMap's entry and the metrics say the same.
    let configmap = env
        .wait_configmap(FOLLOW, "the node's ConfigMap entry allocated", |data| {
            data.get(&node)
                .is_some_and(|v| v.contains(r#""allocated":{"nvidia.com/gpu":5}"#))
        })
        .await;
    assert!(configmap.data.unwrap()[&node].contains(r#""free":{"nvidia.com/gpu":3}"#));
    let (_, metrics) = operator.http_get("/metrics").await;
    let series = |name: &str| {
        format!(
            "gpu_inventory_{name}{{inventory=\"{}\",node=\"{node}\",resource=\"{GPU}\"}}",
            env.inventory_name()
        )
    };
    assert_eq!(
        common::metric(&metrics, &series("node_allocated")),
        Some(5.0),
        "{metrics}"
    );
    assert_eq!(
        common::metric(&metrics, &series("node_free")),
        Some(3.0),
        "{metrics}"
    );
    let requested = format!(
        "gpu_inventory_namespace_requested{{inventory=\"{}\",namespace=\"{}\",resource=\"{GPU}\"}}",
        env.inventory_name(),
        env.namespace
    );
    assert_eq!(common::metric(&metrics, &requested), Some(5.0), "{metrics}");

    // A one-shot live `scan` of the same nodes reads the same allocation as the operator.
    let scanned = common::fresh_scan::scan_status(&env);
    assert_eq!(
        entry(&scanned, &node).unwrap().allocated,
        counts(&[(GPU, 5)])
    );
    assert_eq!(
        (scanned.free_gpus, &scanned.resources),
        (3, &status.resources)
    );

    let finished = finish_pod(&env, &env.namespace, "two").await;
    node_holds(&env, finished, FOLLOW, &node, &[(GPU, 3)], &[(GPU, 5)]).await;
    let gone = delete_pod(&env, &env.namespace, "three").await;
    let status = node_holds(&env, gone, FOLLOW, &node, &[(GPU, 0)], &[(GPU, 8)]).await;
    assert!(status.namespaces.is_empty(), "{:?}", status.namespaces);
    let events_after = env.events_about(&env.inventory_name()).await;
    assert_eq!(
        events_after.len(),
        events_before,
        "pods coming and going made events: {events_after:?}"
    );
    env.cleanup().await;
}

#[tokio::test]
async fn a_pod_asking_for_more_than_any_node_has_makes_gpus_available_false_until_deleted() {
    let env = TestEnv::new("alloc-demand").await;
    let node = env.create_node(h100_node("small", 2)).await;
    env.wait_schedulable(&node).await;
    let operator = env.start_operator("30s");
    wait_gpus_available(&env, CONVERGE, "True", |s| s.total_gpu_nodes == 1).await;

    gpu_pod(&env, "too-big", &node, &[(GPU, 99)]).await;
    let (status, condition) = wait_gpus_available(&env, CONVERGE, "False", |_| true).await;
    assert_eq!(condition.reason, "GpuDemandExceedsSupply");
    assert_eq!(
        condition.message,
        format!(
            "1 GPU pod waiting, unschedulable: {}: 1 pod (99 {GPU}); 2 whole GPUs free",
            env.namespace
        )
    );
    assert_eq!(status.pending_gpu_pods, 1);
    let warned = eventually(CONVERGE, "a GpuDemandExceedsSupply event", || async {
        let events = env.events_about(&env.inventory_name()).await;
        let warned: Vec<_> = events
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("GpuDemandExceedsSupply"))
            .collect();
        (!warned.is_empty()).then_some(warned)
    })
    .await;
    assert_eq!(warned.len(), 1, "{warned:?}");
    let (_, metrics) = operator.http_get("/metrics").await;
    let inventory = env.inventory_name();
    let pending = format!("gpu_inventory_pending_gpu_pods{{inventory=\"{inventory}\"}}");
    assert_eq!(common::metric(&metrics, &pending), Some(1.0), "{metrics}");
    let per_namespace = format!(
        "gpu_inventory_namespace_pending_gpu_pods{{inventory=\"{inventory}\",namespace=\"{}\"}}",
        env.namespace
    );
    assert_eq!(
        common::metric(&metrics, &per_namespace),
        Some(1.0),
        "{metrics}"
    );

    delete_pod(&env, &env.namespace, "too-big").await;
    let (status, _) = wait_gpus_available(&env, CONVERGE, "True", |_| true).await;
    assert_eq!(status.pending_gpu_pods, 0);
    eventually(CONVERGE, "a GpuDemandMet event", || async {
        let events = env.events_about(&env.inventory_name()).await;
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("GpuDemandMet"))
            .then_some(())
    })
    .await;
    env.cleanup().await;
}

#[tokio::test]
async fn mig_and_renamed_shared_resources_are_counted_under_their_own_names() {
    let env = TestEnv::new("alloc-mig-shared").await;
    let mig_labels = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
        "nvidia.com/gpu.count": "1", "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.10gb.count": "7" });
    let mig = env
        .create_node(node(
            "mig",
            mig_labels,
            &[(GPU, "0"), ("nvidia.com/mig-1g.10gb", "7")],
        ))
        .await;
    let shared_labels = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "Tesla-T4-SHARED",
        "nvidia.com/gpu.count": "2", "nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing" });
    let shared = env
        .create_node(node(
            "shared",
            shared_labels,
            &[(GPU, "0"), ("nvidia.com/gpu.shared", "8")],
        ))
        .await;
    env.wait_schedulable(&mig).await;
    env.wait_schedulable(&shared).await;
    let _operator = env.start_operator("30s");
    env.wait_inventory(&env.inventory_name(), CONVERGE, "two GPU nodes", |s| {
        s.total_gpu_nodes == 2
    })
    .await;

    gpu_pod(&env, "slices", &mig, &[("nvidia.com/mig-1g.10gb", 2)]).await;
    gpu_pod(&env, "replicas", &shared, &[("nvidia.com/gpu.shared", 3)]).await;
    let seen = bound(&env, &env.namespace, "slices")
        .await
        .max(bound(&env, &env.namespace, "replicas").await);
    node_holds(
        &env,
        seen,
        FOLLOW,
        &mig,
        &[(GPU, 0), ("nvidia.com/mig-1g.10gb", 2)],
        &[(GPU, 0), ("nvidia.com/mig-1g.10gb", 5)],
    )
    .await;
    let status = node_holds(
        &env,
        seen,
        FOLLOW,
        &shared,
        &[(GPU, 0), ("nvidia.com/gpu.shared", 3)],
        &[(GPU, 0), ("nvidia.com/gpu.shared", 5)],
    )
    .await;
    let free: BTreeMap<&str, u64> = status
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.free))
        .collect();
    assert_eq!(
        free,
        BTreeMap::from([
            (GPU, 0),
            ("nvidia.com/gpu.shared", 5),
            ("nvidia.com/mig-1g.10gb", 5)
        ])
    );
    assert_eq!(
        status.free_gpus, 0,
        "slices and replicas are never whole GPUs"
    );
    assert!(
        status.products.iter().all(|p| p.free_gpus == 0),
        "{:?}",
        status.products
    );
    env.cleanup().await;
}

#[tokio::test]
async fn init_containers_and_sidecars_count_by_the_schedulers_rule() {
    let env = TestEnv::new("alloc-init").await;
    // 5 GPUs: the scheduler's effective request is exactly 5, the naive sum of the containers' is 8.
    let (node, _operator) = converged_on_h100(&env, "init", 5).await;
    let mut proxy = container("proxy", &[(GPU, 1)]);
    proxy["restartPolicy"] = json!("Always");
    let mut logger = container("logger", &[(GPU, 1)]);
    logger["restartPolicy"] = json!("Always");
    let spec = json!({
        "initContainers": [proxy, container("setup", &[(GPU, 4)]), logger],
        "containers": [container("app", &[(GPU, 2)])],
    });
    create_pod(&env, &env.namespace, "sidecars", &node, spec).await;
    let seen = bound(&env, &env.namespace, "sidecars").await;
    // max(setup 4 + proxy 1, app 2 + proxy 1 + logger 1) = 5: bound by the scheduler on a 5-GPU node, which a
    // naive sum (8) would not fit.
    node_holds(&env, seen, FOLLOW, &node, &[(GPU, 5)], &[(GPU, 0)]).await;
    env.cleanup().await;
}

#[tokio::test]
async fn other_namespaces_finished_pods_and_pods_on_deleted_nodes() {
    let env = TestEnv::new("alloc-scope").await;
    let other = format!("{}-other", env.namespace);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": other } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let (node, _operator) = converged_on_h100(&env, "scope", 8).await;

    gpu_pod(&env, "mine", &node, &[(GPU, 1)]).await;
    create_pod(
        &env,
        &other,
        "theirs",
        &node,
        json!({ "containers": [container("c", &[(GPU, 2)])] }),
    )
    .await;
    gpu_pod(&env, "done", &node, &[(GPU, 4)]).await;
    let seen = bound(&env, &env.namespace, "done").await;
    bound(&env, &other, "theirs").await;
    node_holds(&env, seen, CONVERGE, &node, &[(GPU, 7)], &[(GPU, 1)]).await;
    let finished = finish_pod(&env, &env.namespace, "done").await;
    let status = node_holds(&env, finished, FOLLOW, &node, &[(GPU, 3)], &[(GPU, 5)]).await;
    let per_namespace: BTreeMap<&str, u64> = status
        .namespaces
        .iter()
        .map(|n| (n.name.as_str(), n.allocated[GPU]))
        .collect();
    assert_eq!(
        per_namespace,
        BTreeMap::from([(env.namespace.as_str(), 1), (other.as_str(), 2)])
    );

    env.delete_node(&node).await;
    let inventory = env
        .wait_inventory(
            &env.inventory_name(),
            FOLLOW + Duration::from_secs(1),
            "the node gone",
            |s| s.nodes.is_empty(),
        )
        .await;
    let status = inventory.status.unwrap();
    assert!(
        status.namespaces.is_empty(),
        "pods of a deleted node hold nothing: {:?}",
        status.namespaces
    );
    assert!(status.resources.is_empty(), "{:?}", status.resources);
    let _ = namespaces.delete(&other, &DeleteParams::default()).await;
    env.cleanup().await;
}

#[tokio::test]
async fn pods_coming_and_going_on_cpu_only_nodes_write_nothing() {
    let env = TestEnv::new("alloc-cpu").await;
    env.create_node(h100_node("gpu", 8)).await;
    let cpu = env.create_node(node("cpu", json!({}), &[])).await;
    env.wait_schedulable(&cpu).await;
    let operator = env.start_operator("5s");
    let inventory = env
        .wait_inventory(&env.inventory_name(), CONVERGE, "the GPU node", |s| {
            s.total_gpu_nodes == 1
        })
        .await;
    let configmap = env
        .wait_configmap(CONVERGE, "the ConfigMap", |d| d.len() == 2)
        .await;
    let counts = || async {
        let (_, text) = operator.http_get("/metrics").await;
        ["status", "configmap"].map(|t| {
            common::metric(
                &text,
                &format!("gpu_inventory_guard_writes_total{{target=\"{t}\"}}"),
            )
            .unwrap_or(0.0)
        })
    };
    let writes = || async { counts().await.iter().sum::<f64>() };
    // The objects are visible to the test as soon as the API server has them; the counter moves when the
    // operator has read the answer. Wait for both first writes to be counted, or a late count of the
    // ConfigMap's reads as a write the pods caused.
    eventually(
        CONVERGE,
        "the first status and ConfigMap writes counted",
        || async { counts().await.iter().all(|n| *n >= 1.0).then_some(()) },
    )
    .await;
    let before = writes().await;
    for i in 0..10 {
        create_pod(
            &env,
            &env.namespace,
            &format!("web-{i}"),
            &cpu,
            json!({ "containers": [container("c", &[])] }),
        )
        .await;
    }
    for i in 0..10 {
        bound(&env, &env.namespace, &format!("web-{i}")).await;
    }
    for i in 0..10 {
        delete_pod(&env, &env.namespace, &format!("web-{i}")).await;
    }
    // Longer than a coalescing window and a requeue (5 s): a write would have happened by now.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let after = writes().await;
    assert_eq!(after, before, "CPU-only pods caused writes");
    let inventory_after = env.inventory(&env.inventory_name()).await.unwrap();
    assert_eq!(
        inventory_after.metadata.resource_version,
        inventory.metadata.resource_version
    );
    let configmap_after = env.configmap().await.unwrap();
    assert_eq!(
        configmap_after.metadata.resource_version,
        configmap.metadata.resource_version
    );
    env.cleanup().await;
}
