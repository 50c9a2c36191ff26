//! Sources: what the operator watches, each kind once per process, stripped on arrival to what the core
//! reads, all feeding one [`ChangeSignal`]. Publishers read a [`Snapshot`] and follow [`Changes`].
//!
//! A new source (pods, ResourceSlices, ...) is one more module here: a watch task that strips its objects
//! into a store and calls [`ChangeSignal::notify`] when the core could see the difference, plus a field of
//! [`Snapshot`].

pub mod changes;
pub mod dump;
pub mod nodes;

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::runtime::reflector::Store;

pub use changes::{COALESCE_WINDOW, ChangeSignal, Changes};

use crate::runtime::health::Health;

/// What the sources watch.
#[derive(Clone, Debug, Default)]
pub struct SourcesConfig {
    /// Only nodes matching this label selector (e.g. `nvidia.com/gpu.present=true`); `None`: all nodes.
    pub node_label_selector: Option<String>,
}

/// Read handles on every source's cache, and the change signal they feed.
#[derive(Clone)]
pub struct Sources {
    nodes: Store<Node>,
    // A receiver, not the signal itself: once the feed task (which owns the signal) ends, followers end too.
    changes: Changes,
}

/// What the sources held at one moment, tagged with the change version it is at least as new as.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The [`ChangeSignal`] version read before the caches.
    pub version: u64,
    /// Every cached (stripped) node.
    pub nodes: Vec<Arc<Node>>,
}

impl Sources {
    /// Starts every watch; returns the handles and the task that feeds them (run it until shutdown).
    pub fn start(
        client: Client,
        config: &SourcesConfig,
        health: Health,
    ) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let signal = ChangeSignal::default();
        let changes = signal.subscribe();
        let (nodes, node_feed) = nodes::watch_nodes(
            client,
            config.node_label_selector.as_deref(),
            health,
            signal,
        );
        (Self { nodes, changes }, node_feed)
    }

    /// Resolves once every source has its first full list.
    pub async fn wait_until_ready(&self) {
        // The writer lives as long as the feed task; if it is gone the process is shutting down anyway.
        let _ = self.nodes.wait_until_ready().await;
    }

    /// The current change version (cheap: decide whether a cached scan is still current).
    pub fn version(&self) -> u64 {
        self.changes.version()
    }

    /// Everything the sources hold now.
    pub fn snapshot(&self) -> Snapshot {
        let version = self.changes.version();
        Snapshot {
            version,
            nodes: self.nodes.state(),
        }
    }

    /// Follows the change stream from now on.
    pub fn changes(&self) -> Changes {
        self.changes.follow_from_now()
    }
}
