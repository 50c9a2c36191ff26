//! Kueue's objects of either served version strip to what the quota rules read; pending Workloads only.

use kube::api::DynamicObject;
use serde_json::json;

use super::*;
use crate::inventory::topology::gang::Toleration;

fn object(value: serde_json::Value) -> DynamicObject {
    serde_json::from_value(value).expect("a Kueue object")
}

#[test]
fn a_cluster_queues_quotas_read_alike_in_v1beta2_and_v1beta1_with_its_cohort_under_either_name() {
    for (version, cohort_key) in [("v1beta2", "cohortName"), ("v1beta1", "cohort")] {
        let queue = object(json!({
            "apiVersion": format!("kueue.x-k8s.io/{version}"), "kind": "ClusterQueue",
            "metadata": { "name": "research" },
            "spec": {
                cohort_key: "org",
                "resourceGroups": [
                    { "coveredResources": ["cpu", "memory"],
                      "flavors": [{ "name": "default", "resources": [
                          { "name": "cpu", "nominalQuota": "300m" }, { "name": "memory", "nominalQuota": "300Mi" }]}]},
                    { "coveredResources": ["nvidia.com/gpu"],
                      "flavors": [
                          { "name": "gb200", "resources": [{ "name": "nvidia.com/gpu", "nominalQuota": 64,
                            "borrowingLimit": "8", "lendingLimit": 16 }]},
                          { "name": "h100", "resources": [{ "name": "nvidia.com/gpu" }]}]}
                ]
            }
        }));
        let stripped = strip_cluster_queue(&queue).expect("read");
        assert_eq!(stripped.cohort.as_deref(), Some("org"), "{version}");
        let gpu = &stripped.groups[1];
        assert_eq!(gpu.covered, ["nvidia.com/gpu"]);
        let gb200 = &gpu.flavors[0].resources[0];
        assert_eq!(
            (gb200.nominal, gb200.borrowing_limit, gb200.lending_limit),
            (64, Some(8), Some(16))
        );
        assert_eq!(
            gpu.flavors[1].resources[0].nominal, 0,
            "nominalQuota defaults to 0"
        );
        assert!(
            stripped.groups[0].flavors[0].resources.is_empty(),
            "cpu and memory are not read"
        );
        assert_eq!(
            stripped.flavors_for("nvidia.com/gpu").collect::<Vec<_>>(),
            ["gb200", "h100"]
        );
    }
}

#[test]
fn a_cohort_keeps_its_parent_and_its_own_quota() {
    let cohort = object(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort",
        "metadata": { "name": "research" },
        "spec": { "parentName": "organization", "resourceGroups": [{ "coveredResources": ["nvidia.com/gpu"],
            "flavors": [{ "name": "gb200", "resources": [{ "name": "nvidia.com/gpu", "nominalQuota": "16" }]}]}]}
    }));
    let stripped = strip_cohort(&cohort).expect("read");
    assert_eq!(stripped.cohort.as_deref(), Some("organization"));
    assert_eq!(stripped.groups[0].flavors[0].resources[0].nominal, 16);
}

#[test]
fn a_flavor_reads_its_labels_taints_tolerations_and_topology() {
    let flavor = object(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": { "name": "gb200" },
        "spec": {
            "nodeLabels": { "cloud.google.com/gke-accelerator": "nvidia-gb200", "pool": "a" },
            "nodeTaints": [{ "key": "dedicated", "value": "ml", "effect": "NoSchedule" }],
            "tolerations": [
                { "key": "spot", "operator": "Exists", "effect": "NoSchedule" },
                { "key": "tier", "operator": "Equal", "value": "gold" }
            ],
            "topologyName": "gke-default"
        }
    }));
    let stripped = strip_flavor(&flavor).expect("read");
    assert_eq!(stripped.node_labels.len(), 2);
    assert_eq!(
        stripped.node_taints,
        [("dedicated".into(), "ml".into(), "NoSchedule".into())]
    );
    assert_eq!(
        stripped.tolerations,
        [
            Toleration {
                key: Some("spot".into()),
                value: None,
                effect: Some("NoSchedule".into())
            },
            Toleration {
                key: Some("tier".into()),
                value: Some("gold".into()),
                effect: None
            },
        ]
    );
    assert_eq!(stripped.topology.as_deref(), Some("gke-default"));
}

fn workload(conditions: serde_json::Value, active: bool) -> DynamicObject {
    object(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": { "name": "job-train-1a2b3", "namespace": "team-a" },
        "spec": {
            "active": active,
            "queueName": "user-queue",
            "podSets": [{
                "name": "workers", "count": 16,
                "topologyRequest": { "required": "nvidia.com/gpu.clique" },
                "template": { "spec": {
                    "initContainers": [{ "name": "warm", "resources": { "limits": { "nvidia.com/gpu": "8" } } }],
                    "containers": [
                        { "name": "trainer", "resources": { "requests": { "cpu": "8", "nvidia.com/gpu": "4" },
                                                              "limits": { "nvidia.com/gpu": "4" } } },
                        { "name": "sidecar", "resources": { "limits": { "nvidia.com/gpu": "1" } } }
                    ]
                }}
            }]
        },
        "status": { "conditions": conditions }
    }))
}

#[test]
fn only_pending_workloads_are_kept_with_what_each_pod_asks_and_where_they_must_land() {
    let pending = strip_workload(&workload(
        json!([{ "type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "couldn't assign flavors" }]),
        true,
    ))
    .expect("pending");
    assert_eq!(
        (pending.namespace.as_str(), pending.queue.as_str()),
        ("team-a", "user-queue")
    );
    let workers = &pending.pod_sets[0];
    assert_eq!(workers.count, 16);
    // 4 + 1 in the containers; the init container's 8 alone is more.
    assert_eq!(workers.per_pod.get("nvidia.com/gpu"), Some(&8));
    assert!(!workers.per_pod.contains_key("cpu"));
    assert_eq!(
        workers.required_level.as_deref(),
        Some("nvidia.com/gpu.clique")
    );
    for (conditions, active) in [
        (
            json!([{ "type": "QuotaReserved", "status": "True" }, { "type": "Admitted", "status": "True" }]),
            true,
        ),
        (json!([{ "type": "Finished", "status": "True" }]), true),
        (json!([]), false),
    ] {
        assert_eq!(
            strip_workload(&workload(conditions.clone(), active)),
            None,
            "{conditions} active={active}"
        );
    }
}

#[test]
fn a_local_queue_without_its_cluster_queue_and_a_queue_with_a_nameless_flavor_are_left_out() {
    let local = object(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": { "name": "user-queue", "namespace": "team-a" }, "spec": {}
    }));
    assert_eq!(strip_local_queue(&local), None);
    let broken = object(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": { "name": "broken" },
        "spec": { "resourceGroups": [{ "coveredResources": ["nvidia.com/gpu"], "flavors": [{ "resources": [] }] }] }
    }));
    assert_eq!(strip_cluster_queue(&broken), None);
}

#[test]
fn a_dumps_kueue_objects_are_sorted_by_kind() {
    let objects: Vec<DynamicObject> = [
        json!({ "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": { "name": "f" }, "spec": {} }),
        json!({ "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue", "metadata": { "name": "q", "namespace": "n" },
                "spec": { "clusterQueue": "cq" } }),
        json!({ "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": { "name": "t" },
                "spec": { "levels": [{ "nodeLabel": "kubernetes.io/hostname" }] } }),
    ]
    .into_iter()
    .map(object)
    .collect();
    let read = KueueObjects::of_dump(&objects);
    assert_eq!(
        (
            read.flavors.len(),
            read.local_queues.len(),
            read.cluster_queues.len()
        ),
        (1, 1, 0)
    );
    assert!(read.input().is_some());
    assert!(
        KueueObjects::default().input().is_none(),
        "nothing to check without Kueue"
    );
}
