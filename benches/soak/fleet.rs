//! The soak's fleet: SOAK_NODES nodes created through the API with their status (the bench driver's KWOK-style
//! nodes, no KWOK annotation: on the etcd + kube-apiserver cluster nothing but the soak changes them), every
//! SOAK_GPU_EVERY-th a GPU node from the fixtures, and SOAK_PODS_PER_GPU_NODE one-GPU pods bound to each GPU
//! node, Running (status written as a kubelet would, through the status subresource).

use std::collections::BTreeMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::json;
use testkit::cluster::{self, Templates};
use testkit::pods::{GPU, NAMESPACES, Phase, PodRec, create_pod, namespace_of};
use testkit::settings::soak::Settings;

use crate::{Res, log};

const CREATE_CONCURRENCY: usize = 32;

/// A GPU node as made: its name and allocatable `nvidia.com/gpu`.
#[derive(Clone, Debug)]
pub struct GpuNode {
    pub name: String,
    pub gpus: u64,
}

pub struct Fleet {
    pub nodes: Vec<Node>,
    pub gpu_nodes: Vec<GpuNode>,
    pub pods: Vec<PodRec>,
}

/// The nodes and pods, as planned (nothing is sent).
pub fn plan(s: &Settings, templates: &Templates) -> Res<Fleet> {
    let gpu_templates = cluster::kwok_gpu_templates(templates);
    if gpu_templates.is_empty() {
        return Err("no GPU node with GFD labels and nvidia.com/gpu in the fixtures".into());
    }
    let mut nodes = Vec::with_capacity(s.nodes);
    let mut gpu_nodes = Vec::new();
    for i in 0..s.nodes {
        let mut node =
            cluster::make_kwok_node(&gpu_templates, templates, i, s.gpu_every, s.node_images);
        // Nothing plays kubelet: the node keeps the status it is created with.
        node.metadata.annotations = None;
        if i.is_multiple_of(s.gpu_every) {
            gpu_nodes.push(GpuNode {
                name: cluster::kwok_node_name(i, s.gpu_every),
                gpus: allocatable_gpus(&node),
            });
        }
        nodes.push(node);
    }
    let mut pods = Vec::new();
    for node in &gpu_nodes {
        for _ in 0..s.pods_per_gpu_node.min(node.gpus) {
            pods.push(gpu_pod(pods.len(), &node.name));
        }
    }
    Ok(Fleet {
        nodes,
        gpu_nodes,
        pods,
    })
}

fn allocatable_gpus(node: &Node) -> u64 {
    node.status
        .as_ref()
        .and_then(|s| s.allocatable.as_ref())
        .and_then(|a| a.get(GPU))
        .and_then(|q| q.0.parse().ok())
        .unwrap_or(0)
}

/// Pod number `k`: one GPU, bound to `node`, Running.
pub fn gpu_pod(k: usize, node: &str) -> PodRec {
    PodRec {
        namespace: namespace_of(k),
        name: format!("soak-{k:07}"),
        node: Some(node.to_owned()),
        gpus: 1,
        phase: Phase::Running,
    }
}

/// The namespaces the pods live in, and `operator_ns` (ConfigMap and Lease).
pub async fn create_namespaces(client: &Client, operator_ns: &str) -> Res<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let names = (0..NAMESPACES)
        .map(namespace_of)
        .chain([operator_ns.to_owned()]);
    for name in names {
        let ns = serde_json::from_value(json!({ "metadata": { "name": name } }))?;
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(format!("creating namespace {name}: {e}").into()),
        }
    }
    Ok(())
}

/// Creates the planned nodes, then the pods (create, then status).
pub async fn create(client: &Client, fleet: &Fleet) -> Res<()> {
    let took = cluster::create_nodes_with(client, fleet.nodes.len(), |i| fleet.nodes[i].clone())
        .await
        .map_err(|e| format!("creating the nodes: {e}"))?;
    log(format!(
        "created {} nodes ({} GPU nodes) in {:.1}s; creating {} pods",
        fleet.nodes.len(),
        fleet.gpu_nodes.len(),
        took.as_secs_f64(),
        fleet.pods.len()
    ));
    futures::stream::iter(&fleet.pods)
        .map(|p| async move {
            create_pod(client, p)
                .await
                .map_err(|e| format!("pod {}/{}: {e}", p.namespace, p.name))
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(())
}

/// GPUs held per GPU node by `pods` (the churn keeps each node within its allocatable).
pub fn held(pods: &[PodRec]) -> BTreeMap<String, u64> {
    let mut held = BTreeMap::new();
    for p in pods.iter().filter(|p| p.phase.holds()) {
        if let Some(node) = &p.node {
            *held.entry(node.clone()).or_default() += p.gpus;
        }
    }
    held
}
