//! Pods as real controllers make them, laid out where a test wants them: a Deployment of one replica is
//! placed on one node by cordoning the test's other nodes while the real scheduler places its pod (then the
//! pod is the ReplicaSet's, and deleting it makes the ReplicaSet create another, placed by the scheduler);
//! a DaemonSet pinned to one node by its hostname; PodDisruptionBudgets and PriorityClasses. For `fit --plan`,
//! whose moves are carried out by deleting pods and letting their controllers recreate them.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::Client;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::test_env::{DeleteOnDrop, TEST_LABEL};
use super::waiting::eventually;
use testkit::waits::{Deadline, LOAD_ALLOWANCE, SCHEDULER_MAX_BACKOFF};

/// A controller's pod reaching the scheduler and being bound: the controllers' reaction, one scheduler
/// back-off (a node uncordoned is an event the scheduler waits out), and the load allowance.
fn bound_within() -> Deadline {
    Deadline::new(
        SCHEDULER_MAX_BACKOFF + LOAD_ALLOWANCE,
        "kube-scheduler's max back-off plus the load allowance",
    )
}

/// One test's workloads in `namespace`, on its `nodes`.
pub struct Workloads {
    client: Client,
    id: String,
    namespace: String,
    nodes: Vec<String>,
}

/// A container asking for `gpus` whole GPUs, exiting at once on SIGTERM.
fn gpu_pod_spec(gpus: u32, node_selector: Value, class: Option<&str>) -> Value {
    json!({
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 0,
        "priorityClassName": class,
        "nodeSelector": node_selector,
        "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                         "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }],
    })
}

impl Workloads {
    /// The workloads of the test `id` in `namespace`, whose nodes are `nodes`.
    pub fn new(client: &Client, id: &str, namespace: &str, nodes: &[String]) -> Workloads {
        Workloads {
            client: client.clone(),
            id: id.to_owned(),
            namespace: namespace.to_owned(),
            nodes: nodes.to_vec(),
        }
    }

    /// PriorityClasses `<id>-<suffix>` of these values (`preempting`: whether its pods may preempt), and
    /// the guard that deletes them (they are cluster-scoped: the namespace's deletion leaves them).
    pub async fn priority_classes(&self, classes: &[(&str, i32, bool)]) -> DeleteOnDrop {
        let api: Api<PriorityClass> = Api::all(self.client.clone());
        let mut made = Vec::new();
        for (suffix, value, preempting) in classes {
            let name = format!("{}-{suffix}", self.id);
            let policy = if *preempting {
                "PreemptLowerPriority"
            } else {
                "Never"
            };
            let class: PriorityClass = serde_json::from_value(json!({
                "metadata": { "name": name, "labels": { TEST_LABEL: self.id } },
                "value": value, "preemptionPolicy": policy,
            }))
            .unwrap();
            api.create(&PostParams::default(), &class).await.unwrap();
            made.push(format!("priorityclass/{name}"));
        }
        DeleteOnDrop(made)
    }

    /// A Deployment `name` of one pod (`app: name`) of `gpus` GPUs on the test's nodes, of `class`.
    pub fn deployment(&self, name: &str, gpus: u32, class: Option<&str>) -> Deployment {
        let labels = json!({ "app": name, TEST_LABEL: self.id });
        serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": {
                "replicas": 1,
                "selector": { "matchLabels": { "app": name } },
                "template": { "metadata": { "labels": labels },
                              "spec": gpu_pod_spec(gpus, json!({ TEST_LABEL: self.id }), class) },
            }
        }))
        .unwrap()
    }

    /// Creates `deployment` while every test node but `on` is cordoned, waits until the scheduler bound its
    /// pod, and fails unless it is on `on`; the other nodes stay cordoned (see [`Self::uncordon`]). Its pod.
    pub async fn place(&self, deployment: &Deployment, on: &str) -> String {
        for node in &self.nodes {
            self.cordon(node, node != on).await;
        }
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), &self.namespace);
        api.create(&PostParams::default(), deployment)
            .await
            .unwrap();
        let app = deployment.metadata.name.as_deref().unwrap();
        let (pod, node) = self.bound_pod(app, None).await;
        assert_eq!(node, on, "{app}'s pod placed on a cordoned node");
        pod
    }

    /// A DaemonSet `name` (`app: name`) of `gpus` GPUs per pod, on node `on` alone; its pod once bound.
    pub async fn daemon_set(&self, name: &str, gpus: u32, on: &str) -> String {
        let selector = json!({ TEST_LABEL: self.id, "kubernetes.io/hostname": on });
        let set: DaemonSet = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": {
                "selector": { "matchLabels": { "app": name } },
                "template": { "metadata": { "labels": { "app": name, TEST_LABEL: self.id } },
                              "spec": gpu_pod_spec(gpus, selector, None) },
            }
        }))
        .unwrap();
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), &self.namespace);
        api.create(&PostParams::default(), &set).await.unwrap();
        let (pod, node) = self.bound_pod(name, None).await;
        assert_eq!(node, on, "the DaemonSet's pod is pinned to {on}");
        pod
    }

    /// A PodDisruptionBudget `name` over the pods `app: app` keeping `min_available`, once the disruption
    /// controller has written what it allows; that number.
    pub async fn budget(&self, name: &str, app: &str, min_available: u32) -> i32 {
        let budget: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "minAvailable": min_available, "selector": { "matchLabels": { "app": app } } },
        }))
        .unwrap();
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client.clone(), &self.namespace);
        api.create(&PostParams::default(), &budget).await.unwrap();
        eventually(bound_within(), &format!("{name}'s status"), || async {
            let budget = api.get(name).await.ok()?;
            let status = budget.status?;
            (status.observed_generation == budget.metadata.generation)
                .then_some(status.disruptions_allowed)
                .flatten()
        })
        .await
    }

    /// Takes every test node's cordon off.
    pub async fn uncordon(&self) {
        for node in &self.nodes {
            self.cordon(node, false).await;
        }
    }

    async fn cordon(&self, node: &str, cordoned: bool) {
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({ "spec": { "unschedulable": cordoned } });
        api.patch(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }

    /// The pod of `app` (other than `not`) once the scheduler bound it: its name and node. Fails when `app`
    /// has more than one such pod.
    pub async fn bound_pod(&self, app: &str, not: Option<&str>) -> (String, String) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let params = ListParams::default().labels(&format!("app={app}"));
        let what = format!("{app}'s pod bound");
        let bound = eventually(bound_within(), &what, || async {
            let pods = api.list(&params).await.ok()?.items;
            let pods: Vec<(String, Option<String>)> = pods
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| (p.metadata.name.unwrap(), p.spec.and_then(|s| s.node_name)))
                .filter(|(name, _)| Some(name.as_str()) != not)
                .collect();
            let all_bound = !pods.is_empty() && pods.iter().all(|(_, node)| node.is_some());
            all_bound.then_some(pods)
        })
        .await;
        assert_eq!(bound.len(), 1, "{app}: one pod, bound once: {bound:?}");
        let (name, node) = bound.into_iter().next().unwrap();
        (name, node.unwrap())
    }
}
