//! `fit --plan`'s second look: the traits of the pods that hold GPUs (`convert::k8s_pod_traits`), read once
//! and only when a plan is needed, where the scan read (the cluster, or the dump). The operator's watches
//! never read them: they are for the one-shot command, so no pod in the long-running caches carries them.
//!
//! Fails closed: without the PodDisruptionBudgets a plan could move a pod one protects, so when they cannot
//! be listed (forbidden, not served, a budget in the dump not read) the answer is why, and no traits.

use std::collections::{HashMap, HashSet};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;

use super::convert::k8s_pod_traits::{Budgets, gang_of, pod_traits};
use super::dump::Dump;
use super::pods::UNFINISHED_PODS;
use super::reader::Cluster;
use crate::error::{api_status, describe_kube_error};
use crate::inventory::allocation::GpuPod;
use crate::inventory::fragmentation::plan::{Immovable, PodTraits};

/// A pod: (namespace, name).
pub type PodKey = (String, String);

/// Where a one-shot command read its objects, kept for a second look.
pub enum ReadFrom {
    /// The API server.
    Cluster(Cluster),
    /// A dump.
    Dump(Dump),
}

/// The traits read, and what a user should know of how (a dump without budgets).
#[derive(Debug, Default)]
pub struct TraitsRead {
    /// The traits of the pods asked for that were found.
    pub traits: HashMap<PodKey, PodTraits>,
    /// Lines for stderr.
    pub notes: Vec<String>,
}

impl ReadFrom {
    /// The traits of the `wanted` pods (of `namespace` only, where one is given), or why they could not be
    /// read whole.
    pub async fn traits(
        &self,
        namespace: Option<&str>,
        wanted: &HashSet<PodKey>,
    ) -> Result<TraitsRead, String> {
        match self {
            ReadFrom::Cluster(cluster) => list_traits(cluster, namespace, wanted).await,
            ReadFrom::Dump(dump) => dump_traits(dump, namespace, wanted),
        }
    }
}

/// Lists the budgets, then the pods page by page, keeping the traits of the wanted pods only.
async fn list_traits(
    cluster: &Cluster,
    namespace: Option<&str>,
    wanted: &HashSet<PodKey>,
) -> Result<TraitsRead, String> {
    let pdbs: Api<PodDisruptionBudget> = scoped(cluster, namespace);
    let listed = cluster
        .list(&pdbs, cluster.params(), Some)
        .await
        .map_err(|e| budgets_unread(&e, &cluster.url, namespace))?;
    let budgets = Budgets::new(&listed);
    drop(listed);
    let pods: Api<Pod> = scoped(cluster, namespace);
    let mut gathered = Gathered::default();
    cluster
        .list(&pods, cluster.params().fields(UNFINISHED_PODS), |pod| {
            gathered.take(&pod, wanted, &budgets);
            None::<()>
        })
        .await
        .map_err(|e| {
            format!(
                "the pods' priorities and owners could not be read on {}: {}; no plan is made",
                cluster.url,
                describe_kube_error(&e)
            )
        })?;
    Ok(gathered.done(Vec::new()))
}

/// The traits from a dump: its pods and its budgets. A budget the dump reader skipped fails closed; a dump
/// with none is read as a cluster without any, and says so.
fn dump_traits(
    dump: &Dump,
    namespace: Option<&str>,
    wanted: &HashSet<PodKey>,
) -> Result<TraitsRead, String> {
    if let Some(skipped) = dump
        .skipped
        .iter()
        .find(|s| s.kind == "PodDisruptionBudget")
    {
        return Err(format!(
            "PodDisruptionBudget {} in the dump was not read ({}): a plan could move a pod it protects, so \
             none is made; fix it or export it again (kubectl get poddisruptionbudgets.v1.policy -A -o yaml)",
            skipped.name, skipped.reason
        ));
    }
    let ours = |object_namespace: Option<&str>| {
        namespace.is_none_or(|n| object_namespace.unwrap_or_default() == n)
    };
    let budgets = Budgets::new(
        dump.budgets
            .iter()
            .filter(|b| ours(b.metadata.namespace.as_deref())),
    );
    let mut notes = Vec::new();
    if dump.budgets.is_empty() {
        notes.push(
            "the dump holds no PodDisruptionBudget: the plan assumes none protects the pods; if the cluster \
             has some, export them with the pods (kubectl get nodes,pods,poddisruptionbudgets -A -o yaml)"
                .to_owned(),
        );
    }
    let mut gathered = Gathered::default();
    for pod in dump
        .pods
        .iter()
        .filter(|p| ours(p.metadata.namespace.as_deref()))
    {
        gathered.take(pod, wanted, &budgets);
    }
    Ok(gathered.done(notes))
}

/// The traits of the wanted pods, and the gangs that have GPU pods beyond them.
#[derive(Default)]
struct Gathered {
    traits: HashMap<PodKey, PodTraits>,
    beyond: HashSet<String>,
}

impl Gathered {
    /// Takes `pod`'s traits when it is wanted; else, when it is bound and holds or asks for GPUs, notes its
    /// gang: a gang is moved whole, and the plan does not know where that pod could go.
    fn take(&mut self, pod: &Pod, wanted: &HashSet<PodKey>, budgets: &Budgets) {
        let key = key_of(pod);
        if wanted.contains(&key) {
            self.traits.insert(key, pod_traits(pod, budgets));
            return;
        }
        let bound = pod.spec.as_ref().is_some_and(|s| s.node_name.is_some());
        if bound
            && GpuPod::from_pod(pod).is_some()
            && let Some(gang) = gang_of(pod)
        {
            self.beyond.insert(gang);
        }
    }

    /// The traits, a gang with pods beyond them pinned.
    fn done(mut self, notes: Vec<String>) -> TraitsRead {
        for traits in self.traits.values_mut() {
            if let Some(gang) = traits.gang.as_ref().filter(|g| self.beyond.contains(*g))
                && traits.immovable.is_none()
            {
                traits.immovable = Some(Immovable::GangBeyond(gang.clone()));
            }
        }
        TraitsRead {
            traits: self.traits,
            notes,
        }
    }
}

/// The API of a namespaced kind in `namespace`, or in every namespace.
fn scoped<K>(cluster: &Cluster, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    K::DynamicType: Default,
{
    match namespace {
        Some(namespace) => Api::namespaced(cluster.client.clone(), namespace),
        None => Api::all(cluster.client.clone()),
    }
}

fn key_of(pod: &Pod) -> PodKey {
    (
        pod.metadata.namespace.clone().unwrap_or_default(),
        pod.metadata.name.clone().unwrap_or_default(),
    )
}

/// Why the budgets could not be listed, and what to grant or check, failing closed.
fn budgets_unread(error: &kube::Error, url: &str, namespace: Option<&str>) -> String {
    let (scope, flag) = match namespace {
        Some(namespace) => (
            format!("in namespace {namespace}"),
            format!("-n {namespace}"),
        ),
        None => ("in every namespace".to_owned(), "-A".to_owned()),
    };
    let what = match (api_status(error), error) {
        (Some(403), kube::Error::Api(status)) => format!(
            "{} (403 Forbidden); grant list on poddisruptionbudgets (API group policy) {scope} to this \
             identity (check: kubectl auth can-i list poddisruptionbudgets.policy {flag})",
            status.message
        ),
        (Some(404), _) => {
            "policy/v1 is not served (404): Kubernetes 1.21 or later serves it".to_owned()
        }
        _ => describe_kube_error(error),
    };
    format!(
        "PodDisruptionBudgets could not be listed on {url}: {what}. Without them a plan could move a pod one \
         protects, so none is made"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::dump::parse_dump;

    /// A `kubectl get pods,poddisruptionbudgets -A -o yaml` dump: a Deployment's pod under a budget that
    /// allows none, a Job's pod, and `budget` (a PodDisruptionBudget item, or nothing).
    fn dump(budget: &str) -> Dump {
        let text = format!(
            "apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata:
    name: db-0
    namespace: ml
    labels: {{app: db}}
    ownerReferences:
    - {{apiVersion: apps/v1, kind: ReplicaSet, name: db-6f7, uid: u1, controller: true}}
  spec:
    priority: 100
    nodeName: gpu-1
    containers: [{{name: c, image: i, resources: {{limits: {{nvidia.com/gpu: '4'}}}}}}]
  status: {{phase: Running}}
- apiVersion: v1
  kind: Pod
  metadata:
    name: train-abc
    namespace: ml
    labels: {{batch.kubernetes.io/job-name: train}}
    ownerReferences:
    - {{apiVersion: batch/v1, kind: Job, name: train, uid: u2, controller: true}}
  spec:
    nodeName: gpu-1
    containers: [{{name: c, image: i, resources: {{limits: {{nvidia.com/gpu: '2'}}}}}}]
  status: {{phase: Running}}
{budget}"
        );
        parse_dump(text.as_bytes(), "dump.yaml").unwrap()
    }

    fn wanted() -> HashSet<PodKey> {
        [("ml", "db-0"), ("ml", "train-abc"), ("ml", "gone")]
            .into_iter()
            .map(|(n, p)| (n.to_owned(), p.to_owned()))
            .collect()
    }

    fn key(pod: &str) -> PodKey {
        ("ml".to_owned(), pod.to_owned())
    }

    #[test]
    fn a_dumps_budgets_and_pods_give_the_traits() {
        let v1 = "- apiVersion: policy/v1
  kind: PodDisruptionBudget
  metadata: {name: db, namespace: ml}
  spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
  status: {disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1}
";
        let read = dump_traits(&dump(v1), None, &wanted()).unwrap();
        assert!(read.notes.is_empty(), "{:?}", read.notes);
        let db = &read.traits[&key("db-0")];
        assert_eq!(
            (db.priority, db.immovable.clone(), db.owner.as_deref()),
            (
                100,
                Some(Immovable::NoDisruption("ml/db".into())),
                Some("ReplicaSet/db-6f7")
            )
        );
        assert_eq!(
            read.traits[&key("train-abc")].gang.as_deref(),
            Some("Job ml/train")
        );
        // `-n other`: neither the pods nor the budget of `ml` are read.
        let other = dump_traits(&dump(v1), Some("other"), &wanted()).unwrap();
        assert!(other.traits.is_empty());
    }

    #[test]
    fn a_gang_with_a_gpu_pod_beyond_the_wanted_ones_stays_whole() {
        // Another pod of Job ml/train holds GPUs on a node the plan does not weigh (say, left out by -l).
        let beyond = "- apiVersion: v1
  kind: Pod
  metadata:
    name: train-def
    namespace: ml
    ownerReferences:
    - {apiVersion: batch/v1, kind: Job, name: train, uid: u2, controller: true}
  spec:
    nodeName: gpu-9
    containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: '2'}}}]
  status: {phase: Running}
";
        let read = dump_traits(&dump(beyond), None, &wanted()).unwrap();
        assert_eq!(
            read.traits[&key("train-abc")].immovable,
            Some(Immovable::GangBeyond("Job ml/train".into()))
        );
        assert_eq!(read.traits[&key("db-0")].immovable, None);
        assert!(!read.traits.contains_key(&key("train-def")));
        // A pod of the gang holding no GPU (a launcher) does not pin it.
        let launcher = beyond.replace("{limits: {nvidia.com/gpu: '2'}}", "{}");
        let read = dump_traits(&dump(&launcher), None, &wanted()).unwrap();
        assert_eq!(read.traits[&key("train-abc")].immovable, None);
    }

    #[test]
    fn a_budget_the_dump_could_not_read_fails_closed_and_none_at_all_is_said() {
        let old = "- apiVersion: policy/v1beta1
  kind: PodDisruptionBudget
  metadata: {name: db, namespace: ml}
  spec: {minAvailable: 1, selector: {}}
";
        let why = dump_traits(&dump(old), None, &wanted()).unwrap_err();
        assert!(
            why.starts_with("PodDisruptionBudget ml/db in the dump was not read"),
            "{why}"
        );
        let read = dump_traits(&dump(""), None, &wanted()).unwrap();
        assert!(
            read.notes[0].starts_with("the dump holds no PodDisruptionBudget"),
            "{:?}",
            read.notes
        );
        assert_eq!(read.traits.len(), 2);
    }
}
