//! The one node watch of the process, and the cache every publisher reads.
//!
//! Nodes are big (images, managed fields, annotations) and chatty (heartbeats). The cache keeps each as the
//! core's [`ClusterNode`] (only what the scanner reads), and it signals a change only when that changed, so
//! heartbeats wake nobody.

use std::future::Future;

use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use super::changes::ChangeSignal;
use super::slim::SlimNode;
use super::stripped::{StrippedStore, feed, stripped_store};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::runtime::backoff;
use crate::runtime::health::Health;

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
