//! The allocation scenario's fleet: nodes (every BENCH_ALLOC_GPU_EVERY-th a GPU node with
//! BENCH_ALLOC_GPUS_PER_NODE `nvidia.com/gpu`, some tainted `nvidia.com/gpu=present:NoSchedule`), and pods
//! created already bound (`spec.nodeName`) with their status written through the status subresource, as a
//! kubelet would have: nothing schedules, runs or deletes them (the cluster is etcd + kube-apiserver).
//! The GPU nodes are of kinds (`GpuKind`: a fixture node and the labels that make it, e.g., an A100); the
//! scale scenario (scale_fleet.rs) plans its fleet of more kinds, cordoned nodes and DRA slots with `plan_with`.
//!
//! The pods, for P pods of which Q request GPUs and U of those are pending:
//! - U GPU pods with no node, `PodScheduled=False` (`Unschedulable`), 1 GPU (2 for every 4th);
//! - Q - U GPU pods bound round-robin to the GPU nodes, 1 GPU each (2 for every 7th). On each node they run
//!   until the node's share is reached (8, 6, 4, 7, 5 of 8 GPUs, in turn), the rest have finished
//!   (`Succeeded`, every 11th `Failed`) and hold nothing; every 13th running one is still `Pending` on its
//!   node (bound, `PodScheduled=True`, containers being created), which holds its GPUs as a running one does;
//! - P - Q CPU pods (cpu and memory only) bound round-robin to all nodes, GPU nodes included, every 50th
//!   `Succeeded`.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use testkit::cluster::{self, Templates};
use testkit::pods::{NAMESPACES, POD_LABEL, Phase, PodRec, create_pod, namespace_of};
use testkit::settings::bench::AllocSettings;

use crate::{Res, log};

pub use testkit::pods::GPU;
/// The GPU template (tests/fixtures/gfd-nodes.yaml): 8 x H100 with GFD labels and the device plugin.
const GPU_TEMPLATE: &str = "dgx-h100-01";
const H100: &str = "NVIDIA-H100-80GB-HBM3";
/// Every 4th GPU node: the H100 template relabelled as an A100 whose MIG strategy is `none`.
const A100: &str = "NVIDIA-A100-SXM4-80GB";

/// A GPU node as the driver made it.
#[derive(Clone, Debug)]
pub struct GpuNodeSpec {
    pub name: String,
    pub allocatable: u64,
    pub product: String,
    pub tainted: bool,
    /// `spec.unschedulable` (cordoned).
    pub cordoned: bool,
    /// GFD says `nvidia.com/mig.strategy=single` (with `mig.config=all-disabled`: MIG is off, each
    /// `nvidia.com/gpu` a whole GPU), as on the H100 template; the A100 nodes say `none`.
    pub mig_single: bool,
}

/// A kind of GPU node: the fixture node it is cloned from (its labels; the clone gets a Ready status, cpu,
/// memory, pods and container images as the other bench nodes do), and what makes it this kind.
#[derive(Clone, Debug)]
pub struct GpuKind {
    pub template: Node,
    /// GFD's `nvidia.com/gpu.product` on it.
    pub product: String,
    /// Labels set on the clone, over the template's (`nvidia.com/gpu.count` is `allocatable` unless set here).
    pub labels: Vec<(&'static str, String)>,
    /// Labels taken off the clone.
    pub remove: Vec<&'static str>,
    /// The `nvidia.com/gpu` the device plugin advertises (capacity and allocatable).
    pub allocatable: u64,
    /// It is labelled `nvidia.com/mig.strategy=single`.
    pub mig_single: bool,
}

impl GpuKind {
    /// The fixture node `name` of the GPU templates (gfd-nodes.yaml, homelab-nodes.yaml), as it is.
    pub fn fixture(
        templates: &Templates,
        name: &str,
        product: &str,
        allocatable: u64,
    ) -> Res<Self> {
        let template = templates
            .gpu
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(name))
            .cloned()
            .ok_or(format!("no {name} in the fixtures"))?;
        Ok(GpuKind {
            template,
            product: product.into(),
            labels: Vec::new(),
            remove: Vec::new(),
            allocatable,
            mig_single: false,
        })
    }

    /// The DGX H100 of gfd-nodes.yaml (`mig.strategy=single`, MIG disabled) with `gpus` nvidia.com/gpu.
    pub fn h100(templates: &Templates, gpus: u64) -> Res<Self> {
        let mut kind = Self::fixture(templates, GPU_TEMPLATE, H100, gpus)?;
        kind.mig_single = true;
        Ok(kind)
    }

    /// The DGX H100 relabelled as another model (`product` and the GFD labels that go with it), MIG
    /// strategy `none`.
    pub fn relabelled(
        templates: &Templates,
        gpus: u64,
        product: &str,
        labels: &[(&'static str, &str)],
    ) -> Res<Self> {
        let mut kind = Self::fixture(templates, GPU_TEMPLATE, product, gpus)?;
        kind.labels = labels.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        kind.labels.push(("nvidia.com/gpu.product", product.into()));
        kind.labels.push(("nvidia.com/mig.strategy", "none".into()));
        kind.remove = vec!["nvidia.com/mig.config", "nvidia.com/mig.config.state"];
        Ok(kind)
    }

    /// The allocation scenario's A100 (every 4th GPU node).
    pub fn a100(templates: &Templates, gpus: u64) -> Res<Self> {
        let labels = [
            ("nvidia.com/gpu.memory", "81920"),
            ("nvidia.com/gpu.family", "ampere"),
            ("nvidia.com/gpu.compute.major", "8"),
            ("nvidia.com/gpu.machine", "DGXA100"),
        ];
        Self::relabelled(templates, gpus, A100, &labels)
    }
}

/// What a GPU slot of the fleet (every `gpu_every`-th node) holds: a GPU node of `kind`, tainted
/// `nvidia.com/gpu=present:NoSchedule` or cordoned or neither.
pub struct Slot<'k> {
    pub kind: &'k GpuKind,
    pub tainted: bool,
    pub cordoned: bool,
}

/// The nodes and pods of the fleet, as planned (nothing is sent).
pub struct Plan {
    pub nodes: Vec<Node>,
    pub gpu_nodes: Vec<GpuNodeSpec>,
    pub pods: Vec<PodRec>,
}

/// The allocation scenario's fleet: H100 GPU nodes, every 4th an A100, every `taint_every`-th tainted.
pub fn plan(a: &AllocSettings, templates: &Templates, images: usize) -> Res<Plan> {
    let h100 = GpuKind::h100(templates, a.gpus_per_node)?;
    let a100 = GpuKind::a100(templates, a.gpus_per_node)?;
    Ok(plan_with(a, templates, images, |j| {
        Some(Slot {
            kind: if j % 4 == 3 { &a100 } else { &h100 },
            tainted: a.taint_every > 0 && j % a.taint_every == a.taint_every / 2,
            cordoned: false,
        })
    }))
}

/// The fleet of `a.nodes` nodes, every `a.gpu_every`-th a GPU slot: GPU slot `j` holds what `slot(j)` says,
/// or no node at all (None: the slot is another fleet's, e.g. the scale scenario's DRA nodes); the rest are
/// CPU nodes. Then the pods over them (`plan_pods`).
pub fn plan_with<'k>(
    a: &AllocSettings,
    templates: &Templates,
    images: usize,
    slot: impl Fn(usize) -> Option<Slot<'k>>,
) -> Plan {
    let mut nodes = Vec::with_capacity(a.nodes);
    let mut gpu_nodes = Vec::new();
    for i in 0..a.nodes {
        let gpu = i.is_multiple_of(a.gpu_every);
        let slot = if gpu { slot(i / a.gpu_every) } else { None };
        if gpu && slot.is_none() {
            continue;
        }
        let template = slot
            .as_ref()
            .map(|s| std::slice::from_ref(&s.kind.template));
        let mut node =
            cluster::make_kwok_node(template.unwrap_or(&[]), templates, i, a.gpu_every, images);
        // No KWOK in this cluster; the node keeps the status it was created with.
        node.metadata.annotations = None;
        if let Some(slot) = slot {
            let spec = GpuNodeSpec {
                name: cluster::kwok_node_name(i, a.gpu_every),
                allocatable: slot.kind.allocatable,
                product: slot.kind.product.clone(),
                tainted: slot.tainted,
                cordoned: slot.cordoned,
                mig_single: slot.kind.mig_single,
            };
            shape_gpu_node(&mut node, &spec, slot.kind);
            if a.topology {
                let labels = node.metadata.labels.get_or_insert_with(Default::default);
                labels.extend(cluster::topology_labels(gpu_nodes.len()));
            }
            gpu_nodes.push(spec);
        }
        nodes.push(node);
    }
    let pods = plan_pods(a, &nodes, &gpu_nodes);
    Plan {
        nodes,
        gpu_nodes,
        pods,
    }
}

/// The GPU count, the kind's labels, the taint or the cordon of a GPU node.
fn shape_gpu_node(node: &mut Node, spec: &GpuNodeSpec, kind: &GpuKind) {
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("nvidia.com/gpu.count".into(), spec.allocatable.to_string());
    for (k, v) in &kind.labels {
        labels.insert((*k).into(), v.clone());
    }
    for k in &kind.remove {
        labels.remove(*k);
    }
    let status = node.status.get_or_insert_with(Default::default);
    for r in [&mut status.capacity, &mut status.allocatable] {
        r.get_or_insert_with(Default::default)
            .insert(GPU.into(), Quantity(spec.allocatable.to_string()));
    }
    let node_spec = node.spec.get_or_insert_with(Default::default);
    if spec.tainted {
        node_spec.taints = Some(vec![Taint {
            key: GPU.into(),
            value: Some("present".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]);
    }
    if spec.cordoned {
        node_spec.unschedulable = Some(true);
    }
}

/// The GPUs the running pods of GPU node `j` take at most: 8, 6, 4, 7, 5 of 8 in turn (scaled).
fn running_share(j: usize, allocatable: u64) -> u64 {
    let eighths = [8, 6, 4, 7, 5][j % 5];
    allocatable * eighths / 8
}

fn plan_pods(a: &AllocSettings, nodes: &[Node], gpu_nodes: &[GpuNodeSpec]) -> Vec<PodRec> {
    let gpu_pods = a.gpu_pods.min(a.pods);
    let pending = a.pending.min(gpu_pods);
    let mut pods = Vec::with_capacity(a.pods);
    for u in 0..pending {
        pods.push(PodRec {
            namespace: namespace_of(u),
            name: format!("pend-{u:05}"),
            node: None,
            gpus: if u % 4 == 0 { 2 } else { 1 },
            phase: Phase::Unschedulable,
        });
    }
    let mut held = vec![0u64; gpu_nodes.len()];
    for k in 0..(gpu_pods - pending) {
        if gpu_nodes.is_empty() {
            break;
        }
        let j = k % gpu_nodes.len();
        let gpus = if k % 7 == 0 { 2 } else { 1 };
        let phase = if held[j] + gpus <= running_share(j, gpu_nodes[j].allocatable) {
            held[j] += gpus;
            if k % 13 == 0 {
                Phase::Pending
            } else {
                Phase::Running
            }
        } else if k % 11 == 0 {
            Phase::Failed
        } else {
            Phase::Succeeded
        };
        pods.push(PodRec {
            namespace: namespace_of(k),
            name: format!("gpu-{k:05}"),
            node: Some(gpu_nodes[j].name.clone()),
            gpus,
            phase,
        });
    }
    for c in 0..(a.pods - gpu_pods) {
        let node = nodes[c % nodes.len()].metadata.name.clone();
        pods.push(PodRec {
            namespace: namespace_of(c),
            name: format!("cpu-{c:05}"),
            node,
            gpus: 0,
            phase: if c % 50 == 49 {
                Phase::Succeeded
            } else {
                Phase::Running
            },
        });
    }
    pods
}

/// No bench pods or nodes left from an earlier run; the namespaces exist.
pub async fn clean(client: &Client) -> Res<()> {
    let lp = ListParams::default().labels(&format!("{POD_LABEL}=true"));
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for i in 0..NAMESPACES {
        let ns = namespace_of(i);
        let object = serde_json::from_value(json!({ "metadata": { "name": ns } }))?;
        match namespaces.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
        pods.delete_collection(&DeleteParams::default().grace_period(0), &lp)
            .await?;
    }
    cluster::delete_bench_nodes(client).await
}

/// Creates the planned nodes and pods (pods `concurrency` in flight: create, then status); returns the
/// seconds each took. `scenario` names the scenario in the log.
pub async fn create(
    client: &Client,
    plan: &Plan,
    concurrency: usize,
    scenario: &str,
) -> Res<(f64, f64)> {
    let nodes = cluster::create_nodes_with(client, plan.nodes.len(), |i| plan.nodes[i].clone())
        .await?
        .as_secs_f64();
    log(format!(
        "{scenario}: created {} nodes ({} GPU nodes) in {nodes:.1}s; creating {} pods, {concurrency} in flight",
        plan.nodes.len(),
        plan.gpu_nodes.len(),
        plan.pods.len()
    ));
    let t0 = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let progress = async {
        loop {
            tokio::time::sleep(Duration::from_secs(30)).await;
            let n = done.load(std::sync::atomic::Ordering::Relaxed);
            log(format!(
                "{scenario}: {n} pods after {:.0}s ({:.0}/s)",
                t0.elapsed().as_secs_f64(),
                n as f64 / t0.elapsed().as_secs_f64()
            ));
        }
    };
    let creates = futures::stream::iter(&plan.pods)
        .map(|p| {
            let done = &done;
            async move {
                create_pod(client, p)
                    .await
                    .map_err(|e| format!("pod {}/{}: {e}", p.namespace, p.name))?;
                done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Res::Ok(())
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<()>();
    tokio::select! {
        r = creates => r?,
        _ = progress => unreachable!(),
    }
    Ok((nodes, t0.elapsed().as_secs_f64()))
}
