//! Cluster set-up and tear-down: the bench nodes (cloned from the fixtures), the namespace for the ConfigMap,
//! the inventory; and what the scanner says about the nodes as the API server stores them.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ContainerImage, Namespace, Node};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;

use crate::Res;
use crate::lib_api::{
    ClusterNode, GpuInventory, GpuNodeEntry, ScanScope, idle_entry, parse_node_dump, scan_node,
};
use crate::nodes::{KWOK_ANNOTATION, is_ready, set_ready};

/// The label every bench node carries, so one selector finds (and deletes) them all.
const BENCH_LABEL: &str = "bench.gpu-inventory.dev/node";
const CREATE_CONCURRENCY: usize = 32;

/// The node templates of the fixture dumps, GPU and CPU nodes apart.
pub struct Templates {
    /// The nodes the scanner has an entry for.
    pub gpu: Vec<Node>,
    /// The rest.
    pub cpu: Vec<Node>,
}

/// The GPU and CPU nodes of the fixture dumps in `dir` (gfd-nodes.yaml, homelab-nodes.yaml).
pub fn load_templates(dir: &Path) -> Res<Templates> {
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    for file in ["gfd-nodes.yaml", "homelab-nodes.yaml"] {
        let path = dir.join(file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for node in parse_node_dump(&bytes, &path.to_string_lossy())? {
            if scan_node(&ClusterNode::of(&node)).is_some() {
                gpu.push(node);
            } else {
                cpu.push(node);
            }
        }
    }
    if gpu.is_empty() || cpu.is_empty() {
        return Err("the fixtures need GPU and CPU nodes".into());
    }
    Ok(Templates { gpu, cpu })
}

/// Node `i` of N: every fifth a GPU node (fixture label sets, incl. NotReady ones), else a CPU node (every
/// tenth of those NotReady). Each carries `images` container images, as kubelets report them.
pub fn make_node(templates: &Templates, i: usize, images: usize) -> Node {
    let gpu = i.is_multiple_of(5);
    let (mut node, name) = if gpu {
        (
            templates.gpu[(i / 5) % templates.gpu.len()].clone(),
            format!("bench-gpu-{i:05}"),
        )
    } else {
        (
            templates.cpu[i % templates.cpu.len()].clone(),
            format!("bench-cpu-{i:05}"),
        )
    };
    let mut labels = node.metadata.labels.take().unwrap_or_default();
    labels.insert("kubernetes.io/hostname".into(), name.clone());
    labels.insert(BENCH_LABEL.into(), "true".into());
    node.metadata = ObjectMeta {
        name: Some(name),
        labels: Some(labels),
        annotations: node.metadata.annotations.take(),
        ..Default::default()
    };
    if let Some(status) = node.status.as_mut() {
        if !gpu && i % 10 == 3 {
            set_ready(
                status.conditions.get_or_insert_with(Vec::new),
                false,
                "2026-01-01T00:00:00Z",
            );
        }
        status.images = Some((0..images).map(|k| container_image(i, k)).collect());
    }
    node
}

/// GPU nodes per NVLink rack, and racks per network block, of [`topology_labels`].
pub const RACK_NODES: usize = 18;
/// Racks per GKE block of [`topology_labels`].
pub const BLOCK_RACKS: usize = 8;

/// The topology labels of GPU node `j` (the j-th GPU node of a fleet) in a GB200 fleet: its rack's
/// `nvidia.com/gpu.clique` (`<ClusterUUID>.<CliqueID>`, racks of [`RACK_NODES`]), its GKE block and subblock,
/// and a zone (docs/topology.md has what each means).
pub fn topology_labels(j: usize) -> [(String, String); 4] {
    let rack = j / RACK_NODES;
    [
        (
            "nvidia.com/gpu.clique".into(),
            format!("{:08x}-0000-4000-8000-{rack:012x}.32766", rack * 7919),
        ),
        (
            "cloud.google.com/gce-topology-block".into(),
            format!("block-{}", rack / BLOCK_RACKS),
        ),
        (
            "cloud.google.com/gce-topology-subblock".into(),
            format!("subblock-{rack}"),
        ),
        (
            "topology.kubernetes.io/zone".into(),
            format!("zone-{}", rack % 3),
        ),
    ]
}

/// Image `k` of node `i`: a digest and a tag, 50 MB and up.
fn container_image(i: usize, k: usize) -> ContainerImage {
    ContainerImage {
        names: Some(vec![
            format!(
                "registry.example.com/platform/service-{k:02}@sha256:{:064x}",
                (i * 131 + k) as u128 * 0x9e3779b97f4a7c15
            ),
            format!(
                "registry.example.com/platform/service-{k:02}:v1.{k}.{}",
                i % 7
            ),
        ]),
        size_bytes: Some(50_000_000 + (k as i64) * 1_000_003),
    }
}

fn bench_nodes() -> ListParams {
    ListParams::default().labels(&format!("{BENCH_LABEL}=true"))
}

/// Deletes every bench node and waits (up to 120 s) until they are gone.
pub async fn delete_bench_nodes(client: &Client) -> Res<()> {
    let api: Api<Node> = Api::all(client.clone());
    let lp = bench_nodes();
    let _ = api.delete_collection(&DeleteParams::default(), &lp).await?;
    for _ in 0..600 {
        let left = api.list_metadata(&lp.clone().limit(1)).await?;
        if left.items.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err("bench nodes were not deleted within 120 s".into())
}

/// Creates nodes 0..n, CREATE_CONCURRENCY creates in flight; returns how long that took.
pub async fn create_nodes(
    client: &Client,
    templates: &Templates,
    n: usize,
    images: usize,
) -> Res<Duration> {
    create_nodes_with(client, n, |i| make_node(templates, i, images)).await
}

/// Creates `make(0)..make(n-1)`, CREATE_CONCURRENCY creates in flight; returns how long that took.
pub async fn create_nodes_with(
    client: &Client,
    n: usize,
    make: impl Fn(usize) -> Node,
) -> Res<Duration> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let node = make(i);
            async move { api.create(&PostParams::default(), &node).await.map(|_| ()) }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}

/// The GPU templates a healthy KWOK fleet is cloned from: GPU Feature Discovery labels and an
/// `nvidia.com/gpu` capacity (the fixtures' odd cases, e.g. labels without the device plugin, stay out).
pub fn kwok_gpu_templates(templates: &Templates) -> Vec<Node> {
    templates
        .gpu
        .iter()
        .filter(|n| {
            let gfd = n
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key("nvidia.com/gpu.product"));
            let plugin = n
                .status
                .as_ref()
                .and_then(|s| s.capacity.as_ref())
                .and_then(|c| c.get("nvidia.com/gpu"))
                .is_some_and(|q| q.0 != "0");
            gfd && plugin
        })
        .cloned()
        .collect()
}

/// KWOK node `i`: every `gpu_every`-th cloned from `gpu` (GFD labels, `nvidia.com/gpu` capacity and
/// allocatable), the rest from the CPU templates; all annotated for KWOK, Ready, phase Running (KWOK's
/// heartbeat stage selects Running Ready nodes), no taints, cpu/memory/pods in capacity and allocatable, and
/// `images` container images.
pub fn make_kwok_node(
    gpu: &[Node],
    templates: &Templates,
    i: usize,
    gpu_every: usize,
    images: usize,
) -> Node {
    let name = kwok_node_name(i, gpu_every);
    let mut node = match i.is_multiple_of(gpu_every) {
        true => gpu[(i / gpu_every) % gpu.len()].clone(),
        false => templates.cpu[i % templates.cpu.len()].clone(),
    };
    let mut labels = node.metadata.labels.take().unwrap_or_default();
    labels.insert("kubernetes.io/hostname".into(), name.clone());
    labels.insert(BENCH_LABEL.into(), "true".into());
    let mut annotations = node.metadata.annotations.take().unwrap_or_default();
    annotations.insert(KWOK_ANNOTATION.0.into(), KWOK_ANNOTATION.1.into());
    node.metadata = ObjectMeta {
        name: Some(name),
        labels: Some(labels),
        annotations: Some(annotations),
        ..Default::default()
    };
    if let Some(spec) = node.spec.as_mut() {
        spec.taints = None;
    }
    let status = node.status.get_or_insert_with(Default::default);
    let now = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    set_ready(status.conditions.get_or_insert_with(Vec::new), true, &now);
    status.phase = Some("Running".into());
    for resources in [&mut status.capacity, &mut status.allocatable] {
        let r = resources.get_or_insert_with(Default::default);
        for (k, v) in [("cpu", "32"), ("memory", "256Gi"), ("pods", "110")] {
            r.entry(k.into()).or_insert_with(|| Quantity(v.into()));
        }
    }
    status.images = Some((0..images).map(|k| container_image(i, k)).collect());
    node
}

/// The name of KWOK node `i` (`make_kwok_node`).
pub fn kwok_node_name(i: usize, gpu_every: usize) -> String {
    match i.is_multiple_of(gpu_every) {
        true => format!("bench-gpu-{i:05}"),
        false => format!("bench-cpu-{i:05}"),
    }
}

/// Removes the taints of KWOK nodes 0..n, CREATE_CONCURRENCY patches in flight.
pub async fn untaint_kwok_nodes(client: &Client, n: usize, gpu_every: usize) -> Res<()> {
    let api: Api<Node> = Api::all(client.clone());
    let patch = json!({ "spec": { "taints": null } });
    futures::stream::iter(0..n)
        .map(|i| {
            let (api, patch) = (api.clone(), &patch);
            async move {
                let name = kwok_node_name(i, gpu_every);
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(())
}

/// How many bench nodes have a Lease in kube-node-lease (KWOK creates one per node it took).
pub async fn bench_node_leases(client: &Client) -> Res<usize> {
    let api: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let mut count = 0;
    let mut lp = ListParams::default().limit(1000);
    loop {
        let page = api.list_metadata(&lp).await?;
        count += page
            .items
            .iter()
            .filter(|l| l.name_any().starts_with("bench-"))
            .count();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(count),
        }
    }
}

/// Bench nodes whose Ready condition is not True, and how many bench nodes there are.
pub async fn bench_nodes_not_ready(client: &Client) -> Res<(usize, usize)> {
    let api: Api<Node> = Api::all(client.clone());
    let mut not_ready = 0;
    let mut total = 0;
    let mut lp = bench_nodes().limit(500);
    loop {
        let page = api.list(&lp).await?;
        total += page.items.len();
        not_ready += page.items.iter().filter(|n| !is_ready(n)).count();
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok((not_ready, total)),
        }
    }
}

/// A fresh namespace for a run's ConfigMap; no inventory of that name left over.
pub async fn fresh_namespace(client: &Client, namespace: &str, inventory: &str) -> Res<()> {
    let inventories: Api<GpuInventory> = Api::all(client.clone());
    let _ = inventories
        .delete(inventory, &DeleteParams::default())
        .await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": namespace } }))?,
        )
        .await?;
    Ok(())
}

/// After a run that keeps the nodes: the inventory and the namespace go.
pub async fn remove_outputs(client: &Client, namespace: &str, inventory: &str) {
    let inventories: Api<GpuInventory> = Api::all(client.clone());
    let _ = inventories
        .delete(inventory, &DeleteParams::default())
        .await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces.delete(namespace, &DeleteParams::default()).await;
}

/// Before a run: no bench nodes, no inventory of that name left over; a fresh namespace.
pub async fn clean_slate(client: &Client, namespace: &str, inventory: &str) -> Res<()> {
    delete_bench_nodes(client).await?;
    fresh_namespace(client, namespace, inventory).await
}

/// After a run: the inventory, the namespace and the bench nodes go.
pub async fn tear_down(client: &Client, namespace: &str, inventory: &str) -> Res<()> {
    // The namespace never finishes deleting without a controller-manager (LOCAL_CLUSTER_COMPONENTS=apiserver).
    remove_outputs(client, namespace, inventory).await;
    delete_bench_nodes(client).await
}

/// The bench's GPU nodes as stored, and the scanner's entry for each (the truth the watches are held to), read
/// in the scope of all bench nodes as the programs' scans read them (e.g. a GPU node without GFD labels is
/// `GpuLabelsMissing` only when some node in scope has GFD labels).
pub struct GpuNodes {
    /// The GPU nodes as stored, by name.
    pub nodes: BTreeMap<String, Node>,
    /// The scanner's entry of each, by node name.
    pub truth: HashMap<String, GpuNodeEntry>,
    /// The scope the entries were read in: all bench nodes.
    pub scope: ScanScope<'static>,
}

/// Lists the bench nodes: their GPU nodes and the scanner's entry of each ([`GpuNodes`]).
pub async fn list_gpu_nodes(client: &Client) -> Res<GpuNodes> {
    let api: Api<Node> = Api::all(client.clone());
    let listed = api.list(&bench_nodes()).await?;
    let read: Vec<ClusterNode> = listed.items.iter().map(ClusterNode::of).collect();
    let scope = ScanScope::of(&read);
    let mut nodes = BTreeMap::new();
    let mut truth = HashMap::new();
    for node in listed.items {
        if let Some(entry) = idle_entry(&node, scope) {
            truth.insert(entry.name.clone(), entry);
            nodes.insert(node.name_any(), node);
        }
    }
    Ok(GpuNodes {
        nodes,
        truth,
        scope,
    })
}
