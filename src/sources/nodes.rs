//! The one node watch of the process, and the cache every publisher reads.
//!
//! Nodes are big (images, managed fields, annotations) and chatty (heartbeats). The cache keeps each as the
//! core's [`ClusterNode`] (only what the scanner reads), and it signals a change only when that changed, so
//! heartbeats wake nobody.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::sync::Arc;

use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use super::changes::ChangeSignal;
use super::config::SourcesConfig;
use super::dump::Dump;
use super::reader::{Listed, OneShot, Reader, Start};
use super::slim::SlimNode;
use super::snapshot::Snapshot;
use super::stripped::{StrippedStore, feed, stripped_store};
use crate::error::{Error, Result};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::runtime::backoff;
use crate::runtime::health::Health;

/// The nodes (`--node-label-selector`'s, or all), each kept as the core's [`ClusterNode`].
pub(crate) struct NodeReader {
    selector: Option<String>,
    table: Arc<HealthTable>,
}

impl NodeReader {
    pub(crate) fn new(config: &SourcesConfig) -> NodeReader {
        NodeReader {
            selector: config.node_label_selector.clone(),
            table: config.health.clone(),
        }
    }
}

impl Reader for NodeReader {
    type Objects = Vec<Arc<ClusterNode>>;
    type Store = StrippedStore<ClusterNode>;

    fn name(&self) -> &'static str {
        "nodes"
    }

    fn watch(&self, start: &Start<'_>) -> (Self::Store, impl Future<Output = ()> + Send + 'static) {
        watch_nodes(
            start.client.clone(),
            self.selector.as_deref(),
            self.table.clone(),
            start.health.clone(),
            start.signal.clone(),
        )
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let cluster = match from {
            OneShot::Dump(dump) => return Ok(Listed::all(dump_nodes(dump, &self.table))),
            OneShot::Cluster(cluster) => cluster,
        };
        let mut params = cluster.params();
        if let Some(selector) = self.selector.as_deref() {
            params = params.labels(selector);
        }
        // Decoded slim and stripped page by page, as the watch's cache is.
        let api: Api<SlimNode> = Api::all(cluster.client.clone());
        let table = &self.table;
        let nodes = cluster
            .list(&api, params, |slim| {
                Some(Arc::new(slim.to_cluster_node(table)))
            })
            .await
            .map_err(Error::kube(format!("listing nodes on {}", cluster.url)))?;
        Ok(Listed::all(nodes))
    }

    fn fill(&self, nodes: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.nodes = nodes;
    }
}

/// The nodes of a dump, and those its ResourceSlices name that it holds no Node object of (`kubectl get
/// resourceslices -o yaml` alone): the nodes they name, from their devices, each noted as such. In a cluster
/// a Node always exists.
fn dump_nodes(dump: &Dump, table: &HealthTable) -> Vec<Arc<ClusterNode>> {
    let mut nodes: Vec<Arc<ClusterNode>> = dump
        .nodes
        .iter()
        .map(|node| Arc::new(ClusterNode::from_node(node, table)))
        .collect();
    let named: BTreeSet<&str> = dump
        .slices
        .iter()
        .filter_map(|s| s.spec.node_name.as_deref())
        .filter(|name| !name.is_empty())
        .collect();
    let present: HashSet<&str> = nodes.iter().map(|n| &*n.name).collect();
    let absent: Vec<Arc<ClusterNode>> = named
        .into_iter()
        .filter(|name| !present.contains(name))
        .map(|name| Arc::new(ClusterNode::named_by_slices(name)))
        .collect();
    nodes.extend(absent);
    nodes
}

/// Starts the node watch: returns the cache and the task that feeds it (run it until shutdown). The task
/// signals `changes` whenever a node changed in a way the scanner can see.
pub(crate) fn watch_nodes(
    client: Client,
    label_selector: Option<&str>,
    table: std::sync::Arc<HealthTable>,
    health: Health,
    changes: ChangeSignal,
) -> (
    StrippedStore<ClusterNode>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (store, mut writer) =
        stripped_store(move |slim: &SlimNode| Some(slim.to_cluster_node(&table)));
    // Pages are read whole before decoding: 100 nodes (~1.5 MiB of JSON) instead of the default 500 keeps the
    // start-up peak low at the cost of a few more LIST pages.
    let mut config = watcher::Config::default().page_size(100);
    if let Some(selector) = label_selector {
        config = config.labels(selector);
    }
    // Decoded slim (only the fields the scanner reads are built), then turned into the core's node.
    let api: Api<SlimNode> = Api::all(client);
    let task = async move {
        let events = watcher(api, config).backoff(backoff::WATCH.backoff());
        feed("nodes", events, &mut writer, &health, &changes).await;
    };
    (store, task)
}
