//! The allocation scenario's fleet: nodes (every BENCH_ALLOC_GPU_EVERY-th a GPU node with
//! BENCH_ALLOC_GPUS_PER_NODE `nvidia.com/gpu`, some tainted `nvidia.com/gpu=present:NoSchedule`), and pods
//! created already bound (`spec.nodeName`) with their status written through the status subresource, as a
//! kubelet would have: nothing schedules, runs or deletes them (the cluster is etcd + kube-apiserver).
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
    /// GFD says `nvidia.com/mig.strategy=single` (with `mig.config=all-disabled`: MIG is off, each
    /// `nvidia.com/gpu` a whole GPU), as on the H100 template; the A100 nodes say `none`.
    pub mig_single: bool,
}

/// The nodes and pods of the fleet, as planned (nothing is sent).
pub struct Plan {
    pub nodes: Vec<Node>,
    pub gpu_nodes: Vec<GpuNodeSpec>,
    pub pods: Vec<PodRec>,
}

pub fn plan(a: &AllocSettings, templates: &Templates, images: usize) -> Res<Plan> {
    let template = templates
        .gpu
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(GPU_TEMPLATE))
        .cloned()
        .ok_or(format!("no {GPU_TEMPLATE} in the fixtures"))?;
    let mut nodes = Vec::with_capacity(a.nodes);
    let mut gpu_nodes = Vec::new();
    for i in 0..a.nodes {
        let mut node = cluster::make_kwok_node(
            std::slice::from_ref(&template),
            templates,
            i,
            a.gpu_every,
            images,
        );
        // No KWOK in this cluster; the node keeps the status it was created with.
        node.metadata.annotations = None;
        if i.is_multiple_of(a.gpu_every) {
            let j = gpu_nodes.len();
            let spec = GpuNodeSpec {
                name: cluster::kwok_node_name(i, a.gpu_every),
                allocatable: a.gpus_per_node,
                product: if j % 4 == 3 { A100 } else { H100 }.into(),
                tainted: a.taint_every > 0 && j % a.taint_every == a.taint_every / 2,
                mig_single: j % 4 != 3,
            };
            shape_gpu_node(&mut node, &spec);
            gpu_nodes.push(spec);
        }
        nodes.push(node);
    }
    let pods = plan_pods(a, &nodes, &gpu_nodes);
    Ok(Plan {
        nodes,
        gpu_nodes,
        pods,
    })
}

/// The GPU count, product and taint of a GPU node.
fn shape_gpu_node(node: &mut Node, spec: &GpuNodeSpec) {
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("nvidia.com/gpu.count".into(), spec.allocatable.to_string());
    if spec.product == A100 {
        for (k, v) in [
            ("nvidia.com/gpu.product", A100),
            ("nvidia.com/gpu.memory", "81920"),
            ("nvidia.com/gpu.family", "ampere"),
            ("nvidia.com/gpu.compute.major", "8"),
            ("nvidia.com/gpu.machine", "DGXA100"),
            ("nvidia.com/mig.strategy", "none"),
        ] {
            labels.insert(k.into(), v.into());
        }
        for k in ["nvidia.com/mig.config", "nvidia.com/mig.config.state"] {
            labels.remove(k);
        }
    }
    let status = node.status.get_or_insert_with(Default::default);
    for r in [&mut status.capacity, &mut status.allocatable] {
        r.get_or_insert_with(Default::default)
            .insert(GPU.into(), Quantity(spec.allocatable.to_string()));
    }
    if spec.tainted {
        node.spec.get_or_insert_with(Default::default).taints = Some(vec![Taint {
            key: GPU.into(),
            value: Some("present".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]);
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
/// seconds each took.
pub async fn create(client: &Client, plan: &Plan, concurrency: usize) -> Res<(f64, f64)> {
    let nodes = cluster::create_nodes_with(client, plan.nodes.len(), |i| plan.nodes[i].clone())
        .await?
        .as_secs_f64();
    log(format!(
        "allocation: created {} nodes ({} GPU nodes) in {nodes:.1}s; creating {} pods, {concurrency} in flight",
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
                "allocation: {n} pods after {:.0}s ({:.0}/s)",
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
