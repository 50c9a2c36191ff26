//! Pods as their controllers make them (a Deployment's, a DaemonSet's, the kubelet's mirror, a Job's, a
//! JobSet's, a LeaderWorkerSet's, a Kueue pod group's) and PodDisruptionBudgets as policy/v1 reads them.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::k8s_pod_traits::{Budgets, pod_traits};
use crate::inventory::fragmentation::plan::{Immovable, PodTraits};

/// A running pod in `ml` on `gpu-1` with `labels`, `annotations` and its controller `(apiVersion, kind,
/// name)`, as the API server returns it.
fn pod(name: &str, labels: Value, annotations: Value, owner: Option<(&str, &str, &str)>) -> Pod {
    let owners: Vec<Value> = owner
        .map(|(api_version, kind, owner)| {
            json!({ "apiVersion": api_version, "kind": kind, "name": owner,
                    "uid": "6a1c2f0e-1b7e-4b8e-9d0c-2f4e5a6b7c8d", "controller": true,
                    "blockOwnerDeletion": true })
        })
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": "ml", "labels": labels, "annotations": annotations,
                      "ownerReferences": owners },
        "spec": { "nodeName": "gpu-1", "schedulerName": "default-scheduler",
                  "containers": [{ "name": "main", "image": "cuda",
                                   "resources": { "limits": { "nvidia.com/gpu": "2" } } }] },
        "status": { "phase": "Running" }
    }))
    .unwrap()
}

/// A policy/v1 PodDisruptionBudget in `namespace` with `selector` (JSON `null`: none) and, when `allowed` is
/// some, the disruption controller's status.
fn pdb(namespace: &str, name: &str, selector: Value, allowed: Option<i32>) -> PodDisruptionBudget {
    let status = allowed.map(|allowed| {
        json!({ "observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 2,
                "desiredHealthy": 1, "expectedPods": 2 })
    });
    serde_json::from_value(json!({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": { "name": name, "namespace": namespace, "generation": 1 },
        "spec": { "minAvailable": 1, "selector": selector },
        "status": status
    }))
    .unwrap()
}

fn none() -> Budgets {
    Budgets::default()
}

#[test]
fn a_deployments_pod_moves_and_names_its_replica_set() {
    let mut web = pod(
        "web-7d9f8b6c5-x2x9q",
        json!({ "app": "web", "pod-template-hash": "7d9f8b6c5" }),
        json!({}),
        Some(("apps/v1", "ReplicaSet", "web-7d9f8b6c5")),
    );
    assert_eq!(
        pod_traits(&web, &none()),
        PodTraits {
            owner: Some("ReplicaSet/web-7d9f8b6c5".into()),
            ..Default::default()
        },
        "priority 0 when absent, movable, no gang"
    );
    web.spec.as_mut().unwrap().priority = Some(1000);
    assert_eq!(pod_traits(&web, &none()).priority, 1000);
}

#[test]
fn a_daemon_sets_pod_and_a_static_pod_never_move() {
    let agent = pod(
        "dcgm-exporter-5xk2p",
        json!({ "app": "dcgm-exporter", "controller-revision-hash": "6c9b" }),
        json!({}),
        Some(("apps/v1", "DaemonSet", "dcgm-exporter")),
    );
    let traits = pod_traits(&agent, &none());
    assert_eq!(
        traits.immovable,
        Some(Immovable::DaemonSet("ml/dcgm-exporter".into()))
    );
    assert_eq!(traits.owner.as_deref(), Some("DaemonSet/dcgm-exporter"));
    // The kubelet's mirror: the annotation, and the Node as controller.
    let mirror = pod(
        "etcd-gpu-1",
        json!({ "component": "etcd", "tier": "control-plane" }),
        json!({ "kubernetes.io/config.mirror": "3f0a", "kubernetes.io/config.hash": "3f0a",
                "kubernetes.io/config.source": "file" }),
        Some(("v1", "Node", "gpu-1")),
    );
    assert_eq!(
        pod_traits(&mirror, &none()).immovable,
        Some(Immovable::Static)
    );
    // Either sign alone is enough.
    let annotated = pod(
        "p",
        json!({}),
        json!({ "kubernetes.io/config.mirror": "3f0a" }),
        None,
    );
    assert_eq!(
        pod_traits(&annotated, &none()).immovable,
        Some(Immovable::Static)
    );
    let node_owned = pod("q", json!({}), json!({}), Some(("v1", "Node", "gpu-1")));
    assert_eq!(
        pod_traits(&node_owned, &none()).immovable,
        Some(Immovable::Static)
    );
}

#[test]
fn gangs_come_from_the_label_table_then_from_a_job_owner() {
    let gang = |labels: Value, owner| pod_traits(&pod("p", labels, json!({}), owner), &none()).gang;
    let job = Some(("batch/v1", "Job", "train"));
    assert_eq!(
        gang(
            json!({ "batch.kubernetes.io/job-name": "train", "job-name": "train" }),
            job
        )
        .as_deref(),
        Some("Job ml/train")
    );
    // A JobSet's pod is owned by one of its Jobs: the JobSet is the gang.
    assert_eq!(
        gang(
            json!({ "jobset.sigs.k8s.io/jobset-name": "llama", "jobset.sigs.k8s.io/replicatedjob-name":
                "workers", "batch.kubernetes.io/job-name": "llama-workers-0" }),
            Some(("batch/v1", "Job", "llama-workers-0"))
        )
        .as_deref(),
        Some("JobSet ml/llama")
    );
    // A LeaderWorkerSet's pods (a StatefulSet's) move by replica group.
    assert_eq!(
        gang(
            json!({ "leaderworkerset.sigs.k8s.io/name": "vllm", "leaderworkerset.sigs.k8s.io/group-index":
                "1", "leaderworkerset.sigs.k8s.io/worker-index": "2" }),
            Some(("apps/v1", "StatefulSet", "vllm-1"))
        )
        .as_deref(),
        Some("LeaderWorkerSet ml/vllm group 1")
    );
    assert_eq!(
        gang(
            json!({ "kueue.x-k8s.io/pod-group-name": "sweep", "kueue.x-k8s.io/queue-name": "q" }),
            None
        )
        .as_deref(),
        Some("Kueue pod group ml/sweep")
    );
    assert_eq!(
        gang(
            json!({ "app": "web" }),
            Some(("apps/v1", "ReplicaSet", "web-1"))
        ),
        None
    );
    assert_eq!(
        gang(json!({ "jobset.sigs.k8s.io/jobset-name": "" }), None),
        None,
        "an empty name is no gang"
    );
}

#[test]
fn a_budget_covers_the_pods_its_selector_matches_in_its_namespace() {
    let db = pod("db-0", json!({ "app": "db", "tier": "a" }), json!({}), None);
    let budgets = Budgets::new(&[
        pdb(
            "ml",
            "db",
            json!({ "matchLabels": { "app": "db" } }),
            Some(0),
        ),
        pdb(
            "ml",
            "tiers",
            json!({ "matchExpressions": [{ "key": "tier", "operator": "In", "values": ["a", "b"] }] }),
            Some(2),
        ),
        pdb(
            "ml",
            "not-a",
            json!({ "matchExpressions": [{ "key": "tier", "operator": "NotIn", "values": ["a"] }] }),
            Some(0),
        ),
        pdb("other", "all", json!({}), Some(0)),
        pdb("ml", "nothing", Value::Null, Some(0)),
    ]);
    let traits = pod_traits(&db, &budgets);
    assert_eq!(
        traits.immovable,
        Some(Immovable::NoDisruption("ml/db".into()))
    );
    assert_eq!(traits.budgets, [("ml/tiers".to_owned(), 2)]);
    let web = pod(
        "web-0",
        json!({ "app": "web", "tier": "b" }),
        json!({}),
        None,
    );
    let traits = pod_traits(&web, &budgets);
    assert_eq!(
        traits.immovable,
        Some(Immovable::NoDisruption("ml/not-a".into())),
        "NotIn matches a pod whose value is another"
    );
    assert_eq!(budgets.len(), 5);
}

#[test]
fn an_empty_selector_covers_every_pod_of_its_namespace_and_no_status_allows_nothing() {
    let web = pod("web-0", json!({ "app": "web" }), json!({}), None);
    let everything = Budgets::new(&[pdb("ml", "all", json!({}), Some(1))]);
    assert_eq!(
        pod_traits(&web, &everything).budgets,
        [("ml/all".to_owned(), 1)]
    );
    let unlabelled = pod("bare", Value::Null, json!({}), None);
    assert_eq!(
        pod_traits(&unlabelled, &everything).budgets,
        [("ml/all".to_owned(), 1)]
    );
    // Before the disruption controller writes a status, nothing may be disrupted.
    let fresh = Budgets::new(&[pdb(
        "ml",
        "web",
        json!({ "matchLabels": { "app": "web" } }),
        None,
    )]);
    assert_eq!(
        pod_traits(&web, &fresh).immovable,
        Some(Immovable::NoDisruption("ml/web".into()))
    );
    // A DaemonSet's pod under a budget is pinned by its DaemonSet first.
    let agent = pod(
        "agent",
        json!({ "app": "web" }),
        json!({}),
        Some(("apps/v1", "DaemonSet", "agent")),
    );
    assert_eq!(
        pod_traits(&agent, &fresh).immovable,
        Some(Immovable::DaemonSet("ml/agent".into()))
    );
}

#[test]
fn a_selector_kube_cannot_read_covers_the_whole_namespace() {
    let budgets = Budgets::new(&[pdb(
        "ml",
        "odd",
        json!({ "matchExpressions": [{ "key": "app", "operator": "Near", "values": ["x"] }] }),
        Some(0),
    )]);
    let web = pod("web-0", json!({ "app": "web" }), json!({}), None);
    assert_eq!(
        pod_traits(&web, &budgets).immovable,
        Some(Immovable::NoDisruption("ml/odd".into()))
    );
}
