//! A test's Kueue quota objects made through Kueue's own API (ResourceFlavors, ClusterQueues, Cohorts,
//! LocalQueues, Workloads of any shape), read back (a ClusterQueue's status, a Workload's admission) and
//! changed; every one labelled with the test's id and deleted when dropped (`objects::delete_labelled`).

use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testkit::waits::Deadline;

use super::objects::{condition, delete_labelled, resource, wait_active};
use super::{GROUP, VERSION};
use crate::common::test_env::{TEST_LABEL, TestEnv};
use crate::common::waiting::wait_for;

/// The GPU resource the nodes offer and the queues hold quota of.
pub const GPU: &str = "nvidia.com/gpu";

/// The plural of each kind the tests make.
fn plural(kind: &str) -> &'static str {
    match kind {
        "ResourceFlavor" => "resourceflavors",
        "ClusterQueue" => "clusterqueues",
        "Cohort" => "cohorts",
        "LocalQueue" => "localqueues",
        "Workload" => "workloads",
        "Topology" => "topologies",
        other => panic!("no Kueue kind {other} in the tests"),
    }
}

/// Whether Kueue admitted a Workload: `Some(true)` quota reserved, `Some(false)` its scheduler refused it
/// (the message), `None` not decided yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// `QuotaReserved=True`.
    Reserved,
    /// `QuotaReserved=False`, with Kueue's message.
    Pending(String),
}

/// A test's Kueue objects.
pub struct QuotaObjects {
    client: Client,
    id: String,
    namespace: String,
}

impl QuotaObjects {
    /// The objects of `env` (none yet).
    pub fn new(env: &TestEnv) -> QuotaObjects {
        QuotaObjects {
            client: env.client.clone(),
            id: env.id.clone(),
            namespace: env.namespace.clone(),
        }
    }

    fn api(&self, kind: &str) -> Api<DynamicObject> {
        let resource = resource(kind, plural(kind));
        if matches!(kind, "LocalQueue" | "Workload") {
            Api::namespaced_with(self.client.clone(), &self.namespace, &resource)
        } else {
            Api::all_with(self.client.clone(), &resource)
        }
    }

    /// The name of the test's object `suffix` (`<id>-<suffix>`: cluster-scoped names are shared by tests).
    pub fn name(&self, suffix: &str) -> String {
        format!("{}-{suffix}", self.id)
    }

    /// Creates `kind` `<id>-<suffix>` with `spec`; returns its name.
    pub async fn create(&self, kind: &str, suffix: &str, spec: Value) -> String {
        let name = self.name(suffix);
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": format!("{GROUP}/{VERSION}"), "kind": kind,
            "metadata": { "name": name, "labels": { TEST_LABEL: self.id } },
            "spec": spec,
        }))
        .unwrap();
        self.api(kind)
            .create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating {kind} {name}: {e}"));
        name
    }

    /// Merges `spec` into the spec of `kind` `name`.
    pub async fn patch_spec(&self, kind: &str, name: &str, spec: Value) {
        self.patch_object(kind, name, json!({ "spec": spec })).await;
    }

    /// Merges `patch` into `kind` `name` (its metadata, say).
    pub async fn patch_object(&self, kind: &str, name: &str, patch: Value) {
        self.api(kind)
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("patching {kind} {name}: {e}"));
    }

    /// Deletes `kind` `name` (its finalizers cleared: Kueue lifts a Workload's only when it sees the delete).
    pub async fn delete(&self, kind: &str, name: &str) {
        let api = self.api(kind);
        let clear = json!({ "metadata": { "finalizers": null } });
        let _ = api
            .patch(name, &PatchParams::default(), &Patch::Merge(clear))
            .await;
        api.delete(name, &Default::default())
            .await
            .unwrap_or_else(|e| panic!("deleting {kind} {name}: {e}"));
    }

    /// Waits until Kueue's ClusterQueue `name` reports `field` (`total`, `borrowed`) of the GPU's reservation
    /// as `value` in its status (Kueue writes it after the admission).
    pub async fn wait_reservation(&self, name: &str, field: &str, value: &str) {
        let api = self.api("ClusterQueue");
        wait_for(
            Deadline::reaction("Kueue's ClusterQueue controller, after an admission"),
            &format!("ClusterQueue {name} reporting {field} {value} GPUs reserved"),
            || async {
                let cq = api
                    .get(name)
                    .await
                    .map_err(|e| format!("reading it: {e}"))?;
                let reserved = cq
                    .data
                    .pointer("/status/flavorsReservation/0/resources")
                    .and_then(Value::as_array)
                    .and_then(|r| r.iter().find(|r| r["name"] == GPU))
                    .map(|r| r[field].clone());
                if reserved == Some(json!(value)) {
                    Ok(())
                } else {
                    Err(format!("{field}: {reserved:?}"))
                }
            },
        )
        .await;
    }

    /// Waits until Kueue calls ClusterQueue `name` Active (its caches hold its flavors).
    pub async fn wait_active(&self, name: &str) {
        wait_active(&self.client, name, None).await;
    }

    /// Submits Workload `<id>-<suffix>` to LocalQueue `queue`: `pods` pods of `gpus` GPUs each, all in one
    /// domain of `level` when given. Returns its name.
    pub async fn submit(
        &self,
        suffix: &str,
        queue: &str,
        pods: u32,
        gpus: u32,
        level: Option<&str>,
    ) -> String {
        let gpus = gpus.to_string();
        let mut pod_set = json!({
            "name": "main",
            "count": pods,
            "template": { "spec": {
                "restartPolicy": "Never",
                "containers": [{ "name": "job", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                                 "resources": { "requests": { GPU: gpus }, "limits": { GPU: gpus } } }],
            } },
        });
        if let Some(level) = level {
            pod_set["topologyRequest"] = json!({ "required": level });
        }
        self.create(
            "Workload",
            suffix,
            json!({ "queueName": queue, "podSets": [pod_set] }),
        )
        .await
    }

    /// Waits for Kueue's decision on Workload `name`.
    pub async fn admission(&self, name: &str) -> Admission {
        let api = self.api("Workload");
        wait_for(
            Deadline::reaction("Kueue's scheduler"),
            &format!("Kueue's decision on Workload {name}"),
            || async {
                let workload = api
                    .get(name)
                    .await
                    .map_err(|e| format!("reading it: {e}"))?;
                match condition(&workload.data, "QuotaReserved") {
                    Some((status, _, _)) if status == "True" => Ok(Admission::Reserved),
                    Some((status, _, message)) if status == "False" && !message.is_empty() => {
                        Ok(Admission::Pending(message))
                    }
                    other => Err(format!("QuotaReserved: {other:?}")),
                }
            },
        )
        .await
    }
}

impl Drop for QuotaObjects {
    fn drop(&mut self) {
        delete_labelled(&self.id, &self.namespace);
    }
}
