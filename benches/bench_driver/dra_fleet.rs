//! The DRA scenario's fleet: BENCH_DRA_NODES nodes (cloned from the CPU templates: no GPU labels and no
//! device plugin, so each node's GPUs are known only from its ResourceSlice), one ResourceSlice per node of
//! BENCH_DRA_GPUS_PER_NODE whole GPUs shaped like NVIDIA's DRA driver publishes them (tests/fixtures/dra),
//! NVIDIA's `gpu.nvidia.com` DeviceClass, and BENCH_DRA_CLAIMS ResourceClaims in a few namespaces, each
//! allocated one device through the status subresource as kube-scheduler would write it. Nothing else runs
//! on the cluster (etcd + kube-apiserver), so no controller clears an allocation or deletes a claim.

use std::time::Instant;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use testkit::cluster::{self, Templates};
use testkit::dra_objects::{self, DEVICE_CLASS};
use testkit::settings::bench::DraSettings;

use crate::dra_truth::{ClaimRec, DraTruth, NAMESPACES, namespace_of, node_name};
use crate::{Res, log};

/// The resource the operator counts whole DRA GPUs under.
pub const WHOLE_GPU: &str = "gpu.nvidia.com/gpu";
/// Label on the driver's slices and claims, for the clean-up.
const DRA_LABEL: &str = "bench.gpu-inventory.dev/dra";
/// Node `i`: a CPU template's labels and status (Ready, cpu/memory/pods, `images` container images).
fn make_node(templates: &Templates, i: usize, images: usize) -> Node {
    // With `gpu_every` = usize::MAX no index but 0 is a GPU node's, and the indices passed start at 1.
    let mut node = cluster::make_kwok_node(&[], templates, i + 1, usize::MAX, images);
    let name = node_name(i);
    let labels = node.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("kubernetes.io/hostname".into(), name.clone());
    node.metadata.name = Some(name);
    // No KWOK on this cluster: the node keeps the status it was created with.
    node.metadata.annotations = None;
    node
}

/// Node `i`'s slice: one pool named after the node, generation 1, one slice.
fn slice(i: usize, gpus: usize) -> Res<ResourceSlice> {
    let devices = (0..gpus)
        .map(|d| dra_objects::gpu_device(i, d, None))
        .collect();
    let object = dra_objects::slice(&node_name(i), 1, devices, (DRA_LABEL, "true"));
    Ok(serde_json::from_value(object)?)
}

/// A claim for one whole GPU.
fn claim_object(c: &ClaimRec) -> Res<ResourceClaim> {
    let object = dra_objects::claim(&c.namespace, &c.name, (DRA_LABEL, "true"));
    Ok(serde_json::from_value(object)?)
}

/// Writes the claim's allocation through the status subresource (a merge patch: null clears it).
pub async fn write_allocation(client: &Client, c: &ClaimRec, at: Option<(&str, usize)>) -> Res<()> {
    let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &c.namespace);
    let patch = json!({ "status": { "allocation": dra_objects::allocation(at) } });
    api.patch_status(&c.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// No bench slices, claims or nodes left from an earlier run; the namespaces and the DeviceClass exist.
pub async fn clean(client: &Client) -> Res<()> {
    let lp = ListParams::default().labels(&format!("{DRA_LABEL}=true"));
    let namespaces: Api<Namespace> = Api::all(client.clone());
    for k in 0..NAMESPACES {
        let object = serde_json::from_value(json!({ "metadata": { "name": namespace_of(k) } }))?;
        match namespaces.create(&PostParams::default(), &object).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        let claims: Api<ResourceClaim> = Api::namespaced(client.clone(), &namespace_of(k));
        claims
            .delete_collection(&DeleteParams::default(), &lp)
            .await?;
    }
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    slices
        .delete_collection(&DeleteParams::default(), &lp)
        .await?;
    let class: DeviceClass = serde_json::from_value(dra_objects::device_class())?;
    Api::<DeviceClass>::all(client.clone())
        .patch(
            DEVICE_CLASS,
            &PatchParams::apply("gpu-inventory-bench").force(),
            &Patch::Apply(&class),
        )
        .await?;
    cluster::delete_bench_nodes(client).await
}

/// Seconds each part of the set-up took.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetupSecs {
    pub nodes: f64,
    pub slices: f64,
    pub claims: f64,
}

/// Creates the nodes, their slices, and the claims of `truth` with their allocations.
pub async fn create(
    client: &Client,
    d: &DraSettings,
    templates: &Templates,
    images: usize,
    truth: &DraTruth,
) -> Res<SetupSecs> {
    let nodes = cluster::create_nodes_with(client, d.nodes, |i| make_node(templates, i, images))
        .await?
        .as_secs_f64();
    log(format!(
        "dra: created {} nodes in {nodes:.1}s; creating their slices",
        d.nodes
    ));
    let t0 = Instant::now();
    let slices: Api<ResourceSlice> = Api::all(client.clone());
    futures::stream::iter(0..d.nodes)
        .map(|i| {
            let slices = slices.clone();
            async move {
                let object = slice(i, d.gpus_per_node)?;
                slices.create(&PostParams::default(), &object).await?;
                Res::Ok(())
            }
        })
        .buffer_unordered(d.create_concurrency)
        .try_collect::<()>()
        .await?;
    let slice_secs = t0.elapsed().as_secs_f64();
    log(format!(
        "dra: {} slices in {slice_secs:.1}s; creating {} claims (create + allocation), {} in flight",
        d.nodes,
        truth.claims.len(),
        d.create_concurrency
    ));
    let t0 = Instant::now();
    futures::stream::iter(&truth.claims)
        .map(|c| async move {
            let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &c.namespace);
            api.create(&PostParams::default(), &claim_object(c)?)
                .await?;
            let at = c.at.map(|(n, dev)| (truth.nodes[n].as_str(), dev));
            write_allocation(client, c, at)
                .await
                .map_err(|e| format!("claim {}/{}: {e}", c.namespace, c.name))?;
            Res::Ok(())
        })
        .buffer_unordered(d.create_concurrency)
        .try_collect::<()>()
        .await?;
    Ok(SetupSecs {
        nodes,
        slices: slice_secs,
        claims: t0.elapsed().as_secs_f64(),
    })
}
