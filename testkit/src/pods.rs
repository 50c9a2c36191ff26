//! The pods of the bench's allocation scenario and of the soak: what the driver knows of each (`PodRec`), the
//! objects and statuses it writes for them (a kubelet's or the scheduler's statuses, through the status
//! subresource), and the pod writes (create, status, bind, force delete).

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::Res;

/// The GPU resource the pods request.
pub const GPU: &str = "nvidia.com/gpu";

/// The label on every bench pod.
pub const POD_LABEL: &str = "bench.gpu-inventory.dev/pod";
/// The bench pods are spread over this many namespaces, bench-team-0..
pub const NAMESPACES: usize = 5;

/// Where a pod is in its life, as its status says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// No node; `PodScheduled=False`, reason `Unschedulable`.
    Unschedulable,
    /// Bound, `PodScheduled=True`, containers being created.
    Pending,
    /// Bound, its containers running.
    Running,
    /// Finished, every container exited 0.
    Succeeded,
    /// Finished, a container exited non-zero.
    Failed,
}

impl Phase {
    /// Whether a pod in this phase holds what it requests on its node (bound and not finished).
    pub fn holds(self) -> bool {
        matches!(self, Phase::Pending | Phase::Running)
    }
}

/// One pod the driver made, as it should be stored.
#[derive(Clone, Debug)]
pub struct PodRec {
    /// Its namespace ([`namespace_of`]).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The node it is bound to; None: unbound.
    pub node: Option<String>,
    /// nvidia.com/gpu requested (0: a CPU pod).
    pub gpus: u64,
    /// Where it is in its life.
    pub phase: Phase,
}

/// The namespace of pod `i`: the pods go round the [`NAMESPACES`] namespaces.
pub fn namespace_of(i: usize) -> String {
    format!("bench-team-{}", i % NAMESPACES)
}

/// The pod object of `p` as created (its status is written after; a create ignores it).
pub fn pod_object(p: &PodRec) -> Res<Pod> {
    let (image, requests, restart) = if p.gpus > 0 {
        ("registry.example.com/ml/train:v3.2", ("4", "32Gi"), "Never")
    } else {
        (
            "registry.example.com/platform/web:v1.8",
            ("250m", "256Mi"),
            "Always",
        )
    };
    let mut limits = json!({ "memory": requests.1 });
    if p.gpus > 0 {
        limits[GPU] = json!(p.gpus.to_string());
    }
    let mut spec = json!({
        "containers": [{
            "name": "main",
            "image": image,
            "resources": { "requests": { "cpu": requests.0, "memory": requests.1 }, "limits": limits },
        }],
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 30,
    });
    if p.gpus > 0 {
        spec["tolerations"] = json!([{ "key": GPU, "operator": "Exists", "effect": "NoSchedule" }]);
    }
    if let Some(node) = &p.node {
        spec["nodeName"] = json!(node);
    }
    let app = if p.gpus > 0 { "train" } else { "web" };
    Ok(serde_json::from_value(json!({
        "metadata": {
            "name": p.name,
            "namespace": p.namespace,
            "labels": { "app": app, POD_LABEL: "true" },
        },
        "spec": spec,
    }))?)
}

/// The status a kubelet (or, for `Unschedulable`, the scheduler) would have written for `phase`.
pub fn pod_status(p: &PodRec, phase: Phase) -> Value {
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let cond = |t: &str, s: &str| json!({ "type": t, "status": s, "lastTransitionTime": now });
    let image = if p.gpus > 0 {
        "registry.example.com/ml/train:v3.2"
    } else {
        "registry.example.com/platform/web:v1.8"
    };
    let container = |state: Value, ready: bool| {
        json!([{
            "name": "main", "image": image, "imageID": format!("{image}@sha256:{:064x}", p.gpus + 7),
            "containerID": format!("containerd://{:064x}", p.name.len() as u128 * 0x9e37_79b9_7f4a_7c15),
            "ready": ready, "restartCount": 0, "started": ready, "state": state,
        }])
    };
    let qos = json!("Burstable");
    match phase {
        Phase::Unschedulable => json!({
            "phase": "Pending",
            "qosClass": qos,
            "conditions": [{
                "type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": now,
                "message": format!("no node has room: Insufficient {GPU}. preemption: No preemption victims found for incoming pod."),
            }],
        }),
        Phase::Pending => json!({
            "phase": "Pending", "qosClass": qos, "startTime": now,
            "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                cond("ContainersReady", "False"), cond("Ready", "False")],
            "containerStatuses": container(json!({ "waiting": { "reason": "ContainerCreating" } }), false),
        }),
        Phase::Running => json!({
            "phase": "Running", "qosClass": qos, "startTime": now,
            "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                cond("ContainersReady", "True"), cond("Ready", "True")],
            "containerStatuses": container(json!({ "running": { "startedAt": now } }), true),
        }),
        Phase::Succeeded | Phase::Failed => {
            let (code, reason) = match phase {
                Phase::Succeeded => (0, "Completed"),
                _ => (1, "Error"),
            };
            json!({
                "phase": if code == 0 { "Succeeded" } else { "Failed" }, "qosClass": qos, "startTime": now,
                "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                    cond("ContainersReady", "False"), cond("Ready", "False")],
                "containerStatuses": container(json!({ "terminated": {
                    "exitCode": code, "reason": reason, "startedAt": now, "finishedAt": now } }), false),
            })
        }
    }
}

/// Creates `p` and writes its status.
pub async fn create_pod(client: &Client, p: &PodRec) -> Res<()> {
    create_bound(client, p).await?;
    set_phase(client, p, p.phase).await
}

/// Writes the status of `p` for `phase` through the status subresource.
pub async fn set_phase(client: &Client, p: &PodRec, phase: Phase) -> Res<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    let patch = json!({ "status": pod_status(p, phase) });
    api.patch_status(&p.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Binds the unbound pod `p` to `node` (pods/binding, as the scheduler does: sets `spec.nodeName` and
/// `PodScheduled=True`).
pub async fn bind(client: &Client, p: &PodRec, node: &str) -> Res<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    let binding = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": { "name": p.name, "namespace": p.namespace },
        "target": { "apiVersion": "v1", "kind": "Node", "name": node },
    });
    api.create_subresource::<Value, Value>("binding", &p.name, &PostParams::default(), &binding)
        .await?;
    Ok(())
}

/// Deletes `p` at once (grace period 0: no kubelet would ever confirm a graceful delete here).
pub async fn force_delete(client: &Client, p: &PodRec) -> Res<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    api.delete(&p.name, &DeleteParams::default().grace_period(0))
        .await?;
    Ok(())
}

/// Creates `p` bound to its node, as created (no status written yet: phase Pending, no conditions).
pub async fn create_bound(client: &Client, p: &PodRec) -> Res<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), &p.namespace);
    api.create(&PostParams::default(), &pod_object(p)?).await?;
    Ok(())
}
