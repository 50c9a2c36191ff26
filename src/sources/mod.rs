//! Sources: what the operator watches, each kind once per process, stripped on arrival to what the core
//! reads, all feeding one [`ChangeSignal`]. Publishers read a [`Snapshot`] and follow [`Changes`].
//!
//! A new source (pods, ResourceSlices, ...) is one more module here: a watch task that strips its objects
//! into a store and calls [`ChangeSignal::notify`] when the core could see the difference, plus a field of
//! [`Snapshot`].

pub mod changes;
pub mod convert;
mod discovery;
pub mod dra;
pub mod dump;
pub mod kueue;
pub mod nodes;
pub mod optional_api;
pub mod pods;
pub mod slim;
pub mod slim_dynamic;
pub mod stripped;
pub mod taint_rules;
pub mod utilization;

use std::future::Future;
use std::sync::Arc;

use crate::inventory::selector::LabelSelector;
use kube::Client;

pub use changes::{COALESCE_WINDOW, ChangeSignal, Changes};
pub use pods::PodStore;

pub use dra::DraStores;

use crate::inventory::allocation::GpuPod;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::{DraClaim, DraClass, DraInput, DraSlice, DraTaintRule};
use crate::inventory::health::HealthTable;
use crate::inventory::memory::ScanMemory;
use crate::inventory::topology::TopologyLevels;
use crate::inventory::utilization::Activity;
use crate::inventory::utilization::shared_nodes::shared_nodes;
use crate::inventory::{Inventory, NodeUniverse, ScanInput, scan};
use crate::runtime::health::Health;

/// How long the first inventory waits for Kueue's quota objects' first lists.
const KUEUE_FIRST_LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// What the sources watch.
#[derive(Clone, Debug, Default)]
pub struct SourcesConfig {
    /// Only nodes matching this label selector (e.g. `nvidia.com/gpu.present=true`); `None`: all nodes.
    pub node_label_selector: Option<String>,
    /// The DRA drivers whose devices are GPUs (`gpu.nvidia.com`); empty: DRA is not read.
    pub dra_drivers: Vec<String>,
    /// Which node conditions are GPU health (kept through stripping, read by the scan).
    pub health: Arc<HealthTable>,
    /// `--topology-label`: node label keys that are topology levels, beside the built-in table and Kueue's.
    pub topology_labels: Vec<String>,
    /// `--prometheus-url` and the rest: the utilization source's client and settings; `None`: off.
    pub utilization: Option<(
        utilization::prometheus::Prometheus,
        utilization::UtilizationConfig,
    )>,
}

/// Read handles on every source's cache, and the change signal they feed.
#[derive(Clone)]
pub struct Sources {
    nodes: stripped::StrippedStore<ClusterNode>,
    pods: PodStore,
    dra: DraStores,
    taint_rules: taint_rules::TaintRuleStore,
    topologies: kueue::topology::TopologyStore,
    kueue: kueue::KueueStores,
    utilization: Option<utilization::UtilizationStore>,
    topology_labels: Arc<[String]>,
    drivers: Arc<[String]>,
    health: Arc<HealthTable>,
    universe: NodeUniverse,
    watched: Option<Arc<LabelSelector>>,
    // A receiver, not the signal itself: once the feed task (which owns the signal) ends, followers end too.
    changes: Changes,
}

/// What the sources held at one moment, tagged with the change version it is at least as new as.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The [`ChangeSignal`] version read before the caches.
    pub version: u64,
    /// Every cached node.
    pub nodes: Vec<Arc<ClusterNode>>,
    /// Every cached GPU pod (pods asking for no `nvidia.com/*` resource and naming no claim are not kept).
    pub pods: Vec<Arc<GpuPod>>,
    /// ResourceSlices of the DRA GPU drivers.
    pub slices: Vec<Arc<DraSlice>>,
    /// Every ResourceClaim.
    pub claims: Vec<Arc<DraClaim>>,
    /// Every DeviceClass.
    pub classes: Vec<Arc<DraClass>>,
    /// Every DeviceTaintRule.
    pub taint_rules: Vec<Arc<DraTaintRule>>,
    /// The DRA GPU drivers.
    pub drivers: Arc<[String]>,
    /// Which node conditions are GPU health.
    pub health: Arc<HealthTable>,
    /// The topology levels: the built-in table, Kueue's Topologies' levels and `--topology-label`.
    pub topology: Arc<TopologyLevels>,
    /// Kueue's quota objects (none where Kueue is not installed).
    pub kueue: kueue::KueueObjects,
    /// The selector the node watch lists by (`--node-label-selector`), when it watches a subset.
    pub watched: Option<Arc<LabelSelector>>,
    /// The held GPUs' activity, where the utilization source is on.
    pub activity: Option<Arc<Activity>>,
}

impl Snapshot {
    /// The inventory of what `selector` picks among these objects (nodes that are `universe`).
    /// What earlier scans kept is reused through `memory`, if given (a one-shot scan has no earlier scan).
    pub fn scan(
        &self,
        selector: &LabelSelector,
        universe: NodeUniverse,
        memory: Option<&mut ScanMemory>,
    ) -> Inventory {
        let dra = DraInput {
            drivers: &self.drivers,
            slices: self.slices.iter().map(AsRef::as_ref).collect(),
            claims: self.claims.iter().map(AsRef::as_ref).collect(),
            classes: self.classes.iter().map(AsRef::as_ref).collect(),
            taint_rules: self.taint_rules.iter().map(AsRef::as_ref).collect(),
        };
        let mut input = ScanInput::shared(&self.nodes, &self.pods)
            .dra(dra)
            .selector(selector)
            .universe(universe)
            .health(&self.health)
            .topology(&self.topology);
        if let Some(kueue) = self.kueue.input() {
            input = input.kueue(kueue);
        }
        if let Some(watched) = &self.watched {
            input = input.watched_by(watched);
        }
        if let Some(activity) = &self.activity {
            input = input.activity(activity);
        }
        scan(match memory {
            Some(memory) => input.memory(memory),
            None => input,
        })
    }
}

/// The GPUs' activity asked of Prometheus, one round per interval. The nodes that share their GPUs, from
/// the node cache at each round, have their busy series asked too; the first round waits for the node list,
/// so that it asks for those already.
fn watch_utilization(
    prometheus: utilization::prometheus::Prometheus,
    settings: utilization::UtilizationConfig,
    signal: ChangeSignal,
    nodes: &stripped::StrippedStore<ClusterNode>,
) -> (
    utilization::UtilizationStore,
    impl Future<Output = ()> + Send + 'static + use<>,
) {
    let cached = nodes.clone();
    let shared = move || shared_nodes(&cached.state());
    let (store, feed) = utilization::watch_utilization(prometheus, settings, signal, shared);
    let listed = nodes.clone();
    let feed = async move {
        listed.wait_until_ready().await;
        feed.await;
    };
    (store, feed)
}

/// Whether the node watch sees the whole cluster.
fn universe(config: &SourcesConfig) -> NodeUniverse {
    match config.node_label_selector {
        Some(_) => NodeUniverse::Subset,
        None => NodeUniverse::Cluster,
    }
}

/// The node watch's selector, as the scan's scope: already accepted by the API server's list; one it would
/// refuse leaves the scope unknown.
fn watched(config: &SourcesConfig) -> Option<Arc<LabelSelector>> {
    config
        .node_label_selector
        .as_deref()
        .and_then(|s| crate::inventory::selector::parse_selector(s).ok())
        .map(Arc::new)
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
            client.clone(),
            config.node_label_selector.as_deref(),
            config.health.clone(),
            health.clone(),
            signal.clone(),
        );
        let (pods, pod_feed) = pods::watch_pods(client.clone(), health.clone(), signal.clone());
        let drivers: Arc<[String]> = config.dra_drivers.clone().into();
        let (dra, dra_feed) = dra::watch_dra(
            client.clone(),
            config.dra_drivers.clone(),
            health.clone(),
            signal.clone(),
        );
        let (taint_rules, rules_feed) =
            taint_rules::watch_taint_rules(client.clone(), health.clone(), signal.clone());
        let (topologies, topology_feed) = kueue::topology::TOPOLOGIES.watch(
            client.clone(),
            health.clone(),
            signal.clone(),
            kueue::topology::strip_topology,
        );
        let (kueue, kueue_feed) = kueue::KueueStores::watch(client, health, signal.clone());
        let (utilization, utilization_feed) = match config.utilization.clone() {
            Some((prometheus, settings)) => {
                let (store, feed) = watch_utilization(prometheus, settings, signal, &nodes);
                (Some(store), Some(feed))
            }
            None => (None, None),
        };
        let read_dra = !drivers.is_empty();
        let feed = async move {
            let dra_feed = async move {
                if read_dra {
                    futures::join!(dra_feed, rules_feed);
                }
            };
            let utilization_feed = async move {
                if let Some(feed) = utilization_feed {
                    feed.await;
                }
            };
            futures::join!(
                node_feed,
                pod_feed,
                dra_feed,
                topology_feed,
                kueue_feed,
                utilization_feed
            );
        };
        (
            Self {
                nodes,
                pods,
                dra,
                taint_rules,
                topologies,
                kueue,
                utilization,
                topology_labels: config.topology_labels.clone().into(),
                drivers,
                health: config.health.clone(),
                universe: universe(config),
                watched: watched(config),
                changes,
            },
            feed,
        )
    }

    /// Resolves once every source the inventory needs has its first full list (Kueue's Topologies excepted).
    pub async fn wait_until_ready(&self) {
        self.nodes.wait_until_ready().await;
        self.pods.wait_until_ready().await;
        // Kueue's Topologies are not waited for: their levels enrich the scan, and a Topology watch that is
        // forbidden (an older RBAC without the rule) or slow must not hold back the inventory. Their levels
        // arrive as a change, and the next scan reads the nodes' places at them.
        if !self.drivers.is_empty() {
            self.dra.wait_until_ready().await;
            self.taint_rules.wait_until_ready().await;
        }
        // Kueue's quota objects are waited for a while: a first status without the quotas a restarted
        // operator published would be one more write, and "resolved" events for issues that still hold. Not
        // for ever: a forbidden or slow Kueue watch must not hold back the inventory.
        // The first round of the utilization source is waited for as long as one query may take, so that the
        // first status says Current or Unknown with a reason, not "not asked yet" (and no "read again" event
        // follows every start).
        if let Some(utilization) = &self.utilization {
            let first = utilization.first_round_limit();
            if tokio::time::timeout(first, utilization.wait_until_asked())
                .await
                .is_err()
            {
                tracing::warn!(
                    "Prometheus has not answered within {}s; the inventory is published with the idle \
                     figures Unknown until it does",
                    first.as_secs()
                );
            }
        }
        if tokio::time::timeout(KUEUE_FIRST_LIST_WAIT, self.kueue.wait_until_ready())
            .await
            .is_err()
        {
            tracing::warn!(
                "Kueue's quota objects are not listed after {}s (check the operator's RBAC for \
                 kueue.x-k8s.io); the inventory is published without quotas until they are",
                KUEUE_FIRST_LIST_WAIT.as_secs()
            );
        }
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
        let version = self.changes.version();
        Snapshot {
            version,
            nodes: self.nodes.state(),
            pods: self.pods.state(),
            slices: self.dra.slices.state(),
            claims: self.dra.claims.state(),
            classes: self.dra.classes.state(),
            taint_rules: self.taint_rules.state(),
            drivers: self.drivers.clone(),
            health: self.health.clone(),
            topology: kueue::topology::levels_of(&self.topologies.state(), &self.topology_labels),
            kueue: self.kueue.state(),
            watched: self.watched.clone(),
            activity: self.utilization.as_ref().and_then(|u| u.state()),
        }
    }

    /// The cached node `name`, if the node watch holds it.
    pub fn node(&self, name: &str) -> Option<Arc<ClusterNode>> {
        self.nodes.get(&(String::new(), name.to_owned()))
    }

    /// Follows the change stream from now on.
    pub fn changes(&self) -> Changes {
        self.changes.follow_from_now()
    }
}

#[cfg(test)]
use k8s_openapi::api::core::v1::Node;

#[cfg(test)]
impl Sources {
    /// Sources holding these objects and nothing else, with no watch behind them: the fast tier's
    /// (`publish::fixtures`) view of a cluster. DRA is off.
    pub(crate) fn fixed(nodes: Vec<Node>, pods: Vec<k8s_openapi::api::core::v1::Pod>) -> Sources {
        use kube::runtime::watcher::Event;
        let (node_store, mut node_writer) =
            stripped::stripped_store(|node: &Node| Some(ClusterNode::of(node)));
        node_writer.apply(Event::Init);
        for node in nodes {
            node_writer.apply(Event::InitApply(node));
        }
        node_writer.apply(Event::InitDone);
        let (pods_store, mut pod_writer) = stripped::stripped_store(GpuPod::from_pod);
        pod_writer.apply(Event::Init);
        for pod in pods {
            pod_writer.apply(Event::InitApply(pod));
        }
        pod_writer.apply(Event::InitDone);
        let absent = || {
            let (store, mut writer) = stripped::stripped_store(|_: &Node| None::<DraSlice>);
            writer.mark_absent();
            store
        };
        let (claims, mut claims_writer) = stripped::stripped_store(|_: &Node| None::<DraClaim>);
        claims_writer.mark_absent();
        let (classes, mut classes_writer) = stripped::stripped_store(|_: &Node| None::<DraClass>);
        classes_writer.mark_absent();
        let (taint_rules, mut rules_writer) =
            stripped::stripped_store(|_: &Node| None::<DraTaintRule>);
        rules_writer.mark_absent();
        let (topologies, mut topologies_writer) =
            stripped::stripped_store(|_: &Node| None::<kueue::topology::KueueTopology>);
        topologies_writer.mark_absent();
        // The writers are dropped: the stores keep what they hold.
        Sources {
            nodes: node_store,
            pods: pods_store,
            dra: DraStores {
                slices: absent(),
                claims,
                classes,
            },
            taint_rules,
            topologies,
            kueue: kueue::KueueStores::absent(),
            utilization: None,
            topology_labels: Arc::from(Vec::new()),
            drivers: Arc::from(Vec::new()),
            health: Arc::new(HealthTable::defaults().clone()),
            universe: NodeUniverse::Cluster,
            watched: None,
            changes: ChangeSignal::default().subscribe(),
        }
    }
}

#[cfg(test)]
mod watch_tests;
