//! Sources: what the operator reads, each kind once per process, stripped on arrival to what the core
//! reads, all feeding one [`ChangeSignal`]. Publishers read a [`Snapshot`] and follow [`Changes`].
//!
//! Every source is one [`Reader`] (`reader.rs`: a watch and a one-shot list, stripped alike, and how its
//! objects go into a [`Snapshot`]), registered once in [`Readers::of`] (`registry.rs`). [`Sources::start`]
//! starts the registry's watches for the operator and `kubectl gpu-inventory --watch`; [`Sources::list_once`]
//! reads the cluster or a dump once through the same readers for the one-shot commands.

pub mod changes;
pub mod cluster_profiles;
mod config;
pub mod convert;
mod discovery;
pub mod dra;
pub mod dump;
pub mod kueue;
pub mod nodes;
pub mod optional_api;
pub mod pod_traits;
pub mod pods;
pub mod reader;
pub mod registry;
pub mod slim;
pub mod slim_dynamic;
mod snapshot;
pub mod stripped;
pub mod taint_rules;
pub mod utilization;

use std::future::Future;
use std::sync::Arc;

use crate::inventory::selector::LabelSelector;
use kube::Client;

pub use changes::{COALESCE_WINDOW, ChangeSignal, Changes};
pub use config::SourcesConfig;
pub use pods::PodStore;
pub use reader::{Cluster, Listed, OneShot, Reader, Start, Store};
pub use registry::Readers;
pub use snapshot::{Slots, Snapshot};

pub use dra::DraStores;

use crate::error::Result;
use crate::inventory::NodeUniverse;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::runtime::health::Health;
use registry::Started;

/// Read handles on every reader's cache, and the change signal they feed.
#[derive(Clone)]
pub struct Sources {
    started: Arc<Started>,
    /// The node cache, where a node reader runs (publishers read one node by name).
    nodes: Option<stripped::StrippedStore<ClusterNode>>,
    drivers: Arc<[String]>,
    health: Arc<HealthTable>,
    universe: NodeUniverse,
    watched: Option<Arc<LabelSelector>>,
    // A receiver, not the signal itself: once the feed task (which owns the signal) ends, followers end too.
    changes: Changes,
}

impl Sources {
    /// Starts every reader's watch; returns the handles and the task that feeds them (run it until shutdown).
    pub fn start(
        client: Client,
        readers: Readers,
        health: Health,
    ) -> (Self, impl Future<Output = ()> + Send + 'static) {
        let signal = ChangeSignal::default();
        let changes = signal.subscribe();
        let (started, feeds) = readers.start(client, &health, &signal);
        // The feed owns the signal: followers end once it does.
        let feed = async move {
            feeds.await;
            drop(signal);
        };
        (Self::of(readers.config(), started, changes), feed)
    }

    fn of(config: &SourcesConfig, started: Started, changes: Changes) -> Sources {
        Sources {
            nodes: started
                .store::<stripped::StrippedStore<ClusterNode>>()
                .cloned(),
            started: Arc::new(started),
            drivers: config.dra_drivers.clone().into(),
            health: config.health.clone(),
            universe: config.universe(),
            watched: config.watched(),
            changes,
        }
    }

    /// Every reader's objects read once from `from` (the cluster or a dump), and what could not be read
    /// (for stderr). A one-shot scan is of the whole cluster: the snapshot names no watched selector.
    pub async fn list_once(readers: &Readers, from: &OneShot<'_>) -> Result<Listed<Snapshot>> {
        let config = readers.config();
        let mut snapshot = Snapshot {
            drivers: config.dra_drivers.clone().into(),
            health: config.health.clone(),
            ..Snapshot::default()
        };
        let notes = readers.list_once(from, &mut snapshot).await?;
        Ok(Listed {
            objects: snapshot,
            notes,
        })
    }

    /// Resolves once every reader the inventory needs has what it must have before the first publication
    /// (each reader says what that is: [`Reader::ready`]).
    pub async fn wait_until_ready(&self) {
        self.started.ready().await;
    }

    /// Whether the node watch sees the whole cluster or only `node_label_selector` nodes.
    pub fn node_universe(&self) -> NodeUniverse {
        self.universe
    }

    /// The current change version (cheap: decide whether a cached scan is still current).
    pub fn version(&self) -> u64 {
        self.changes.version()
    }

    /// Everything the sources hold now.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot {
            version: self.changes.version(),
            drivers: self.drivers.clone(),
            health: self.health.clone(),
            watched: self.watched.clone(),
            ..Snapshot::default()
        };
        self.started.fill(&mut snapshot);
        snapshot
    }

    /// The cached node `name`, if the node watch holds it.
    pub fn node(&self, name: &str) -> Option<Arc<ClusterNode>> {
        self.nodes.as_ref()?.get(&(String::new(), name.to_owned()))
    }

    /// Follows the change stream from now on.
    pub fn changes(&self) -> Changes {
        self.changes.follow_from_now()
    }
}

#[cfg(test)]
impl Sources {
    /// Sources holding these objects and nothing else, with no watch behind them: the fast tier's
    /// (`publish::fixtures`) view of a cluster. DRA is off.
    pub(crate) fn fixed(
        nodes: Vec<k8s_openapi::api::core::v1::Node>,
        pods: Vec<k8s_openapi::api::core::v1::Pod>,
    ) -> Sources {
        use kube::runtime::watcher::Event;
        fn listed<K: kube::ResourceExt, T: PartialEq>(
            objects: Vec<K>,
            strip: impl Fn(&K) -> Option<T> + Send + Sync + 'static,
        ) -> stripped::StrippedStore<T> {
            let (store, mut writer) = stripped::stripped_store(strip);
            writer.apply(Event::Init);
            for object in objects {
                writer.apply(Event::InitApply(object));
            }
            writer.apply(Event::InitDone);
            // The writer is dropped: the store keeps what it holds.
            store
        }
        let config = SourcesConfig::default();
        let started = Started::default()
            .with(
                nodes::NodeReader::new(&config),
                listed(nodes, |node| Some(ClusterNode::of(node))),
            )
            .with(
                pods::PodReader,
                listed(pods, crate::inventory::allocation::GpuPod::from_pod),
            );
        Sources::of(&config, started, ChangeSignal::default().subscribe())
    }
}

#[cfg(test)]
mod watch_tests;
