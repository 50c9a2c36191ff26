//! Where `scan` (and `fit`) get their objects: a dump file, or the cluster listed page by page, each stripped
//! as the operator's sources strip them.

use std::io::Read;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::{Api, DynamicObject, ListParams};

use super::cli::{GlobalArgs, ScanArgs};
use crate::error::{Error, Result};
use crate::inventory::allocation::GpuPod;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::{DraClaim, DraClass, DraSlice};
use crate::inventory::health::HealthTable;
use crate::inventory::topology::TopologyLevels;
use crate::runtime::client::connect;
use crate::sources::Snapshot;
use crate::sources::dra::dra_api_served;
use crate::sources::dump::{Dump, parse_dump};
use crate::sources::kueue::KueueObjects;
use crate::sources::kueue::topology::{KueueTopology, TOPOLOGIES, strip_topology};
use crate::sources::pods::UNFINISHED_PODS;
use crate::sources::slim::{SlimNode, SlimPod};
use crate::sources::taint_rules::{strip_rule, taint_rule_resource, taint_rules_served};

/// The objects of a dump, stripped as the operator's sources strip them.
pub(crate) fn dump_snapshot(
    dump: Dump,
    drivers: Arc<[String]>,
    table: Arc<HealthTable>,
) -> Snapshot {
    let mut nodes: Vec<Arc<ClusterNode>> = dump
        .nodes
        .iter()
        .map(|node| Arc::new(ClusterNode::from_node(node, &table)))
        .collect();
    // Slices of nodes the dump holds no Node object of (`kubectl get resourceslices -o yaml` alone): the
    // nodes they name, from their devices, each noted as such. In a cluster a Node always exists.
    let named: std::collections::BTreeSet<&str> = dump
        .slices
        .iter()
        .filter_map(|s| s.spec.node_name.as_deref())
        .filter(|name| !name.is_empty())
        .collect();
    let present: std::collections::HashSet<&str> = nodes.iter().map(|n| &*n.name).collect();
    let absent: Vec<Arc<ClusterNode>> = named
        .into_iter()
        .filter(|name| !present.contains(name))
        .map(|name| Arc::new(ClusterNode::named_by_slices(name)))
        .collect();
    nodes.extend(absent);
    Snapshot {
        activity: None,
        nodes,
        pods: dump
            .pods
            .iter()
            .filter_map(GpuPod::from_pod)
            .map(Arc::new)
            .collect(),
        slices: dump
            .slices
            .iter()
            .filter_map(|s| DraSlice::from_slice(s, &drivers))
            .map(Arc::new)
            .collect(),
        claims: dump
            .claims
            .iter()
            .map(|c| Arc::new(DraClaim::from_claim(c)))
            .collect(),
        classes: dump
            .classes
            .iter()
            .map(|c| Arc::new(DraClass::from_class(c)))
            .collect(),
        taint_rules: dump
            .taint_rules
            .iter()
            .filter_map(strip_rule)
            .map(Arc::new)
            .collect(),
        drivers,
        health: table,
        version: 0,
        topology: TopologyLevels::built_in_shared(),
        kueue: KueueObjects::of_dump(&dump.kueue),
        watched: None,
    }
}

pub(crate) fn read_dump(path: &str) -> Result<Dump> {
    let (bytes, source) = if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::InvalidFlag(format!("reading stdin: {e}")))?;
        (bytes, "<stdin>".to_owned())
    } else {
        let bytes =
            std::fs::read(path).map_err(|e| Error::InvalidFlag(format!("reading {path}: {e}")))?;
        (bytes, path.to_owned())
    };
    let dump = parse_dump(&bytes, &source).map_err(|e| Error::InvalidFlag(e.to_string()))?;
    // Objects skipped (an apiVersion not read, a field that does not decode) are said; the rest is scanned.
    for warning in &dump.warnings {
        eprintln!(
            "warning: {}",
            crate::runtime::terminal_text::visible(warning)
        );
    }
    Ok(dump)
}

/// The nodes (stripped as the operator's cache strips them), the GPU pods and, where the server serves
/// `resource.k8s.io/v1`, the DRA objects, listed page by page so a large cluster is never held whole as
/// full objects.
pub(crate) async fn list_cluster(
    global: &GlobalArgs,
    args: &ScanArgs,
    drivers: Arc<[String]>,
) -> Result<(Snapshot, Vec<Arc<KueueTopology>>)> {
    let connection = connect(&global.client_config()).await?;
    let client = connection.client;
    let (topologies, note) = TOPOLOGIES.list(&client, strip_topology).await;
    let (kueue, mut notes) = KueueObjects::list(&client).await;
    notes.extend(note);
    let topologies: Vec<Arc<KueueTopology>> = topologies.into_iter().map(Arc::new).collect();
    let url = &connection.cluster_url;
    let paged = || match args.chunk_size {
        0 => ListParams::default(),
        n => ListParams::default().limit(n),
    };
    let mut params = paged();
    if let Some(selector) = args.selector.as_deref() {
        params = params.labels(selector);
    }
    // Decoded slim and stripped page by page, as the operator's own caches are.
    let nodes: Api<SlimNode> = Api::all(client.clone());
    let table = global.health_table();
    let nodes = list_paged(&nodes, params, |slim| {
        Some(Arc::new(slim.to_cluster_node(&table)))
    })
    .await
    .map_err(Error::kube(format!("listing nodes on {url}")))?;
    // Said once the cluster answered (an unreachable one is one error, not one per Kueue kind), naming the
    // context where several are read side by side.
    let context = match global.context.last() {
        Some(context) => format!("context {context}: "),
        None => String::new(),
    };
    for note in notes {
        eprintln!(
            "warning: {}",
            crate::runtime::terminal_text::visible(&format!("{context}{note}"))
        );
    }
    let pods: Api<SlimPod> = Api::all(client.clone());
    let params = paged().fields(UNFINISHED_PODS);
    let pods = list_paged(&pods, params, |slim| {
        GpuPod::from_pod(&Pod::from(slim)).map(Arc::new)
    })
    .await
    .map_err(Error::kube(format!(
        "listing pods on {url} (scan needs list on pods in every namespace)"
    )))?;
    let mut snapshot = Snapshot {
        nodes,
        pods,
        kueue,
        drivers: drivers.clone(),
        ..Default::default()
    };
    if drivers.is_empty() || dra_api_served(&client).await == Some(false) {
        return Ok((snapshot, topologies));
    }
    list_dra(client, url, &drivers, paged(), &mut snapshot).await?;
    Ok((snapshot, topologies))
}

/// The DRA objects of the drivers (the server serves `resource.k8s.io/v1`): ResourceSlices, ResourceClaims,
/// DeviceClasses, and DeviceTaintRules where a version of them is served.
async fn list_dra(
    client: kube::Client,
    url: &str,
    drivers: &[String],
    params: ListParams,
    snapshot: &mut Snapshot,
) -> Result<()> {
    let dra_error = |what: &str| {
        Error::kube(format!(
            "listing {what} on {url} (scan needs list on resource.k8s.io {what}; `--dra-driver=` skips DRA)"
        ))
    };
    snapshot.slices = list_paged(
        &Api::<ResourceSlice>::all(client.clone()),
        params.clone(),
        |s| DraSlice::from_slice(&s, drivers).map(Arc::new),
    )
    .await
    .map_err(dra_error("resourceslices"))?;
    snapshot.claims = list_paged(
        &Api::<ResourceClaim>::all(client.clone()),
        params.clone(),
        |c| Some(Arc::new(DraClaim::from_claim(&c))),
    )
    .await
    .map_err(dra_error("resourceclaims"))?;
    snapshot.classes = list_paged(
        &Api::<DeviceClass>::all(client.clone()),
        params.clone(),
        |c| Some(Arc::new(DraClass::from_class(&c))),
    )
    .await
    .map_err(dra_error("deviceclasses"))?;
    if let Some(version) = taint_rules_served(&client).await {
        let api: Api<DynamicObject> = Api::all_with(client, &taint_rule_resource(version));
        snapshot.taint_rules = list_paged(&api, params, |r| strip_rule(&r).map(Arc::new))
            .await
            .map_err(dra_error("devicetaintrules"))?;
    }
    Ok(())
}

async fn list_paged<K, T>(
    api: &Api<K>,
    mut params: ListParams,
    mut keep: impl FnMut(K) -> Option<T>,
) -> kube::Result<Vec<T>>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut kept = Vec::new();
    loop {
        let page = api.list(&params).await?;
        kept.extend(page.items.into_iter().filter_map(&mut keep));
        match page.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(kept),
        }
    }
}
