//! The utilization source as a reader: one round of Prometheus per interval in the watch, one round in a
//! one-shot read.

use std::future::Future;
use std::sync::Arc;

use super::prometheus::Prometheus;
use super::{UtilizationConfig, UtilizationStore, read_once, watch_utilization};
use crate::error::Result;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::utilization::Round;
use crate::inventory::utilization::shared_nodes::shared_nodes;
use crate::sources::reader::{Listed, OneShot, Reader, Start, Store};
use crate::sources::snapshot::Snapshot;
use crate::sources::stripped::StrippedStore;

/// The held GPUs' activity, asked of Prometheus (`--prometheus-url`).
pub(crate) struct UtilizationReader {
    prometheus: Prometheus,
    settings: UtilizationConfig,
}

impl UtilizationReader {
    pub(crate) fn new(prometheus: &Prometheus, settings: &UtilizationConfig) -> UtilizationReader {
        UtilizationReader {
            prometheus: prometheus.clone(),
            settings: settings.clone(),
        }
    }
}

impl Store for UtilizationStore {
    type Objects = Option<Arc<Round>>;

    fn objects(&self) -> Option<Arc<Round>> {
        self.state()
    }

    fn until_listed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.wait_until_asked()
    }
}

impl Reader for UtilizationReader {
    type Objects = Option<Arc<Round>>;
    type Store = UtilizationStore;

    fn name(&self) -> &'static str {
        "utilization"
    }

    /// The nodes that share their GPUs, from the node cache at each round, have their busy series asked too;
    /// the first round waits for the node list, so that it asks for those already.
    fn watch(
        &self,
        start: &Start<'_>,
    ) -> (UtilizationStore, impl Future<Output = ()> + Send + 'static) {
        let nodes = start.earlier::<StrippedStore<ClusterNode>>().cloned();
        let cached = nodes.clone();
        let shared = move || {
            cached
                .as_ref()
                .map(|nodes| shared_nodes(&nodes.state()))
                .unwrap_or_default()
        };
        let (store, feed) = watch_utilization(
            self.prometheus.clone(),
            self.settings.clone(),
            start.signal.clone(),
            shared,
        );
        let feed = async move {
            if let Some(nodes) = nodes {
                nodes.wait_until_ready().await;
            }
            feed.await;
        };
        (store, feed)
    }

    /// The first round is waited for as long as one query may take, so that the first status says Current
    /// or Unknown with a reason, not "not asked yet" (and no "read again" event follows every start).
    async fn ready(&self, store: &UtilizationStore) {
        let first = store.first_round_limit();
        if tokio::time::timeout(first, store.wait_until_asked())
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

    /// One round, asking also for the busy series of the nodes that share their GPUs among those read.
    async fn list_once(&self, _: &OneShot<'_>, so_far: &Snapshot) -> Result<Listed<Self::Objects>> {
        let shared = shared_nodes(&so_far.nodes);
        let activity = read_once(&self.prometheus, &self.settings, &shared).await;
        Ok(Listed::all(Some(Arc::new(activity))))
    }

    fn fill(&self, activity: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.utilization = activity;
    }
}
