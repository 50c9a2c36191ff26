//! A test's Kueue objects: one Topology, a ResourceFlavor that selects the test's nodes and names that
//! Topology, a ClusterQueue with more GPU quota than any test asks for (so only the topology decides), a
//! LocalQueue in the test's namespace, and the Workloads it submits. Deleted when dropped.

use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use testkit::waits::Deadline;

use super::assignment::{Decision, decision_of};
use super::process::KueueProcess;
use super::{GROUP, VERSION};
use crate::common::test_env::{TEST_LABEL, TestEnv};
use crate::common::waiting::wait_for;

/// The GPU resource the nodes offer and the Workloads ask for.
pub const GPU: &str = "nvidia.com/gpu";

/// More GPUs than every node of a test together: the ClusterQueue's quota never refuses, the topology does.
const NOMINAL_QUOTA: &str = "100000";

/// Kueue's `kind` (plural `plural`) at the tests' version.
pub fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, kind), plural)
}

/// A test's TAS queue: its objects' names (all the test's id) and the client that made them.
pub struct TasQueue {
    client: Client,
    name: String,
    namespace: String,
}

impl TasQueue {
    /// Creates the Topology of `levels` (node label keys, the widest first), the ResourceFlavor of the test's
    /// nodes, the ClusterQueue and the LocalQueue; waits until Kueue calls the ClusterQueue Active, which it
    /// does once its caches hold the flavor and the topology: from then on it is ready to decide.
    pub async fn create(env: &TestEnv, kueue: &mut KueueProcess, levels: &[&str]) -> TasQueue {
        let queue = TasQueue {
            client: env.client.clone(),
            name: env.id.clone(),
            namespace: env.namespace.clone(),
        };
        let name = &queue.name;
        let levels: Vec<Value> = levels.iter().map(|l| json!({ "nodeLabel": l })).collect();
        queue
            .create_object("Topology", "topologies", json!({ "levels": levels }))
            .await;
        queue
            .create_object(
                "ResourceFlavor",
                "resourceflavors",
                json!({ "nodeLabels": { TEST_LABEL: name }, "topologyName": name }),
            )
            .await;
        let quota = json!([{ "name": GPU, "nominalQuota": NOMINAL_QUOTA }]);
        queue
            .create_object(
                "ClusterQueue",
                "clusterqueues",
                json!({
                    "namespaceSelector": { "matchLabels": { TEST_LABEL: name } },
                    "resourceGroups": [{ "coveredResources": [GPU],
                                         "flavors": [{ "name": name, "resources": quota }] }],
                }),
            )
            .await;
        queue
            .create_object("LocalQueue", "localqueues", json!({ "clusterQueue": name }))
            .await;
        wait_active(&queue.client, name, Some(kueue)).await;
        queue
    }

    async fn create_object(&self, kind: &str, plural: &str, spec: Value) {
        let namespaced = kind == "LocalQueue";
        let resource = resource(kind, plural);
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        };
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/{VERSION}"), "kind": kind,
            "metadata": { "name": self.name, "labels": { TEST_LABEL: self.name } },
            "spec": spec,
        }))
        .unwrap();
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating {kind} {}: {e}", self.name));
    }

    fn workloads(&self) -> Api<DynamicObject> {
        Api::namespaced_with(
            self.client.clone(),
            &self.namespace,
            &resource("Workload", "workloads"),
        )
    }

    /// Submits a Workload of one PodSet: `pods` pods of `gpus_per_pod` GPUs each, all required in one domain
    /// of `level`; waits for Kueue's decision (one reaction of its scheduler).
    pub async fn submit(&self, name: &str, pods: u32, gpus_per_pod: u32, level: &str) -> Decision {
        let gpus = gpus_per_pod.to_string();
        let workload: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/{VERSION}"), "kind": "Workload",
            "metadata": { "name": name, "labels": { TEST_LABEL: self.name } },
            "spec": {
                "queueName": self.name,
                "podSets": [{
                    "name": "main",
                    "count": pods,
                    "topologyRequest": { "required": level },
                    "template": { "spec": {
                        "restartPolicy": "Never",
                        "containers": [{ "name": "job", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                         "resources": { "requests": { GPU: gpus }, "limits": { GPU: gpus } } }],
                    } },
                }],
            },
        }))
        .unwrap();
        self.workloads()
            .create(&PostParams::default(), &workload)
            .await
            .unwrap_or_else(|e| panic!("creating Workload {name}: {e}"));
        self.decision(name).await
    }

    /// Waits for Kueue's decision on Workload `name`: quota reserved (with its topology assignment) or not.
    pub async fn decision(&self, name: &str) -> Decision {
        let workloads = self.workloads();
        wait_for(
            Deadline::reaction("Kueue's scheduler"),
            &format!("Kueue's decision on Workload {name}"),
            || async {
                let workload = workloads
                    .get(name)
                    .await
                    .map_err(|e| format!("reading it: {e}"))?;
                decision_of(&workload.data)
            },
        )
        .await
    }

    /// Deletes Workload `name` and waits until it is gone (Kueue lifts its finalizer).
    pub async fn withdraw(&self, name: &str) {
        let workloads = self.workloads();
        workloads
            .delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("deleting Workload {name}: {e}"));
        wait_for(
            Deadline::reaction("Kueue, lifting the Workload's finalizer"),
            &format!("Workload {name} gone"),
            || async {
                match workloads.get_opt(name).await {
                    Ok(None) => Ok(()),
                    Ok(Some(w)) => Err(format!(
                        "still there: finalizers {:?}",
                        w.metadata.finalizers
                    )),
                    Err(e) => Err(format!("reading it: {e}")),
                }
            },
        )
        .await;
    }
}

impl Drop for TasQueue {
    fn drop(&mut self) {
        delete_labelled(&self.name, &self.namespace);
    }
}

/// Waits until Kueue calls ClusterQueue `name` Active, which it does once its caches hold the queue's flavors
/// (and their topologies): from then on it is ready to decide. With `kueue`, a Kueue that exited meanwhile (its
/// webhook port taken, a CRD missing) says why at once.
pub async fn wait_active(client: &Client, name: &str, mut kueue: Option<&mut KueueProcess>) {
    let cqs: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("ClusterQueue", "clusterqueues"));
    let what = format!("Kueue calling ClusterQueue {name} Active");
    let deadline = Deadline::reaction("Kueue's start-up (its caches filled from the API server)")
        .then(Deadline::reaction("Kueue's ClusterQueue controller"));
    wait_for(deadline, &what, || {
        if let Some(kueue) = kueue.as_deref_mut() {
            kueue.assert_running();
        }
        let cqs = &cqs;
        async move {
            let cq = cqs
                .get(name)
                .await
                .map_err(|e| format!("reading it: {e}"))?;
            match condition(&cq.data, "Active") {
                Some((status, _, _)) if status == "True" => Ok(()),
                Some((status, reason, message)) => {
                    Err(format!("Active {status} {reason}: {message}"))
                }
                None => Err("no Active condition yet".to_owned()),
            }
        }
    })
    .await;
}

/// Deletes a test's Kueue objects (labelled with its id; the namespaced ones in `namespace`), the Workloads
/// first. Kueue puts finalizers on them, which a Kueue already stopped (a failed test) would never lift: they
/// are cleared before each delete. Runs on a thread of its own: it is called from `Drop`, inside the test's
/// (then blocked) runtime.
pub fn delete_labelled(id: &str, namespace: &str) {
    let (name, namespace) = (id.to_owned(), namespace.to_owned());
    let _ = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            // The test's client is bound to its (now blocked) runtime: a fresh one, as TestEnv's Drop does.
            let client = crate::common::cluster_access::client().await;
            let selector = format!("{TEST_LABEL}={name}");
            let kinds = [
                ("Workload", "workloads", true),
                ("LocalQueue", "localqueues", true),
                ("ClusterQueue", "clusterqueues", false),
                ("Cohort", "cohorts", false),
                ("ResourceFlavor", "resourceflavors", false),
                ("Topology", "topologies", false),
            ];
            for (kind, plural, namespaced) in kinds {
                let api: Api<DynamicObject> = if namespaced {
                    Api::namespaced_with(client.clone(), &namespace, &resource(kind, plural))
                } else {
                    Api::all_with(client.clone(), &resource(kind, plural))
                };
                let listed = api
                    .list(&kube::api::ListParams::default().labels(&selector))
                    .await;
                for object in listed.map(|l| l.items).unwrap_or_default() {
                    let Some(object_name) = object.metadata.name else {
                        continue;
                    };
                    let clear = json!({ "metadata": { "finalizers": null } });
                    let _ = api
                        .patch(&object_name, &PatchParams::default(), &Patch::Merge(clear))
                        .await;
                    let _ = api.delete(&object_name, &DeleteParams::default()).await;
                }
            }
        });
    })
    .join();
}

/// The condition `type` of an object's status: (status, reason, message).
pub fn condition(object: &Value, type_: &str) -> Option<(String, String, String)> {
    let conditions = object.pointer("/status/conditions")?.as_array()?;
    let found = conditions.iter().find(|c| c["type"] == type_)?;
    let text = |key: &str| found[key].as_str().unwrap_or("").to_owned();
    Some((text("status"), text("reason"), text("message")))
}
