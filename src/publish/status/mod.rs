//! The status publisher (the inventory controller): each GpuInventory's status, from the shared scan of
//! the nodes its `spec.nodeSelector` picks, plus an event per transition. Run by `driver::drive`, one key per
//! GpuInventory of its watch.

use std::collections::HashMap;
use std::sync::Arc;

use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tracing::{debug, info};

use super::driver::own_objects::{OwnObjects, watch_own};
use super::driver::{Outcome, Publisher};
use super::events::EventSender;
use super::metrics::{InventoryGauges, export_inventory, retain_inventories};
use super::scan_service::ScanService;
pub use super::status_apply::StatusApply;
use super::writer::{AGGREGATE_WRITE_GAP, Cached, GuardedWriter};
use crate::FIELD_MANAGER;
use crate::crd::{GpuInventory, GpuInventoryStatus};
use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::inventory::events::{EventBase, transitions_since};
use crate::inventory::selector::LabelSelector;
use crate::publish::content::plan::plan_status;
use crate::publish::content::status::{NodeList, desired_status};
use crate::publish::content::wire::published_inventory;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::Changes;
use crate::sources::convert::k8s_selector::api_label_selector;

/// The server-side apply body of a GpuInventory status: `apiVersion` and `kind` are required (the article's
/// pitfall 1).
pub fn status_apply_body(status: &GpuInventoryStatus) -> StatusApply<'_, GpuInventoryStatus> {
    StatusApply::of::<GpuInventory>(status)
}

/// A GpuInventory as the watch's cache keeps it: the whole object (its spec says what to scan, its status is
/// what the plan compares, its reference is what events name). Two objects of the same UID and
/// `resourceVersion` are the same object.
#[derive(Debug)]
pub(crate) struct CachedInventory(pub(crate) GpuInventory);

impl PartialEq for CachedInventory {
    fn eq(&self, other: &Self) -> bool {
        let (a, b) = (&self.0.metadata, &other.0.metadata);
        a.uid == b.uid && a.resource_version == b.resource_version
    }
}

/// The status publisher.
pub(crate) struct Statuses {
    api: Api<GpuInventory>,
    cache: OwnObjects<CachedInventory>,
    /// Guards GpuInventory status writes (keyed by name).
    pub(crate) writer: GuardedWriter<GpuInventoryStatus>,
    /// Publishes Kubernetes Events on the inventories.
    events: EventSender,
    health: Health,
    metrics: Arc<Metrics>,
    gauges: Arc<InventoryGauges>,
    /// Room for a status's `nodes[]`, in bytes of JSON (`--status-nodes-budget`).
    nodes_budget: usize,
    /// Per GpuInventory, the model (every node) its last reconcile published: what the next one's events
    /// are diffed against.
    models: HashMap<String, Arc<Inventory>>,
}

impl Statuses {
    /// The publisher of the statuses of the GpuInventories `label_selector` picks (all: `None`), and the
    /// follower of their changes (its GpuInventory watch is started here).
    pub(crate) fn start(
        client: Client,
        label_selector: Option<&str>,
        nodes_budget: usize,
        health: Health,
        metrics: Arc<Metrics>,
        gauges: Arc<InventoryGauges>,
    ) -> (Self, Changes) {
        let api: Api<GpuInventory> = Api::all(client.clone());
        let mut config = watcher::Config::default();
        if let Some(selector) = label_selector {
            config = config.labels(selector);
        }
        let (cache, changes) = watch_own(
            api.clone(),
            config,
            "gpuinventories",
            health.clone(),
            cached,
        );
        let publisher = Statuses::new(api, cache, client, nodes_budget, health, metrics, gauges);
        (publisher, changes)
    }

    /// The publisher over `cache`.
    fn new(
        api: Api<GpuInventory>,
        cache: OwnObjects<CachedInventory>,
        client: Client,
        nodes_budget: usize,
        health: Health,
        metrics: Arc<Metrics>,
        gauges: Arc<InventoryGauges>,
    ) -> Self {
        // In cluster, POD_NAME (downward API) tells replicas apart; out of cluster, the host name.
        let instance = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .ok();
        Statuses {
            api,
            cache,
            writer: GuardedWriter::for_target(&metrics, "status").with_min_gap(AGGREGATE_WRITE_GAP),
            events: EventSender::new(client, FIELD_MANAGER, instance),
            health,
            metrics,
            gauges,
            nodes_budget,
            models: HashMap::new(),
        }
    }
}

/// The strip of the GpuInventory watch: the object without its managed fields.
fn cached(inventory: &GpuInventory) -> Option<CachedInventory> {
    let mut kept = inventory.clone();
    kept.metadata.managed_fields = None;
    Some(CachedInventory(kept))
}

impl Publisher for Statuses {
    fn name(&self) -> &'static str {
        "inventory"
    }

    async fn cache_ready(&self) {
        self.cache.store.wait_until_ready().await;
    }

    /// The cached GpuInventories; the gauges and models of those gone are dropped here.
    fn keys(&mut self) -> Vec<String> {
        let mut names: Vec<String> = self
            .cache
            .keys()
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        names.sort_unstable();
        let exists = |name: &str| names.iter().any(|n| n == name);
        retain_inventories(&self.metrics, &self.gauges, exists);
        self.models.retain(|name, _| exists(name));
        names
    }

    async fn reconcile(&mut self, name: &str, scans: &ScanService) -> Result<Outcome> {
        match self.cache.get("", name) {
            Some(cached) => self.reconcile_inventory(&cached.0, scans).await,
            // Deleted since the pass began.
            None => Ok(Outcome::done()),
        }
    }
}

fn node_selector(inventory: &GpuInventory) -> Result<LabelSelector> {
    match &inventory.spec.node_selector {
        None => Ok(LabelSelector::default()),
        Some(selector) => {
            api_label_selector(selector).map_err(|reason| Error::InvalidNodeSelector {
                name: inventory.name_any(),
                reason,
            })
        }
    }
}

impl Statuses {
    /// Read (the shared scan, the cached status), plan (pure), write (apply, then events).
    pub(crate) async fn reconcile_inventory(
        &mut self,
        inventory: &GpuInventory,
        scans: &ScanService,
    ) -> Result<Outcome> {
        let name = inventory.name_any();
        if let Some(wait) = self.writer.wait_before_write(&name) {
            // Woken by our own write's watch event (or a burst): plan once the gap has passed.
            return Ok(Outcome::again_in(wait));
        }
        let scanned = scans.inventory(&node_selector(inventory)?);
        // The model (every node) is what metrics and events are computed on; only the status written is cut.
        export_inventory(&self.metrics, &self.gauges, &name, &scanned);
        let desired = desired_status(
            &scanned,
            inventory.metadata.generation,
            NodeList::Within(self.nodes_budget),
        );
        let cached = Cached {
            version: inventory.metadata.resource_version.as_deref(),
            content: inventory.status.as_ref(),
        };
        let previous = self.models.get(&name).cloned();
        let (write, events) = self.writer.plan(&name, cached, |current| {
            // Read back only when this process has no model of its own (a start, a new leader).
            let published = previous
                .is_none()
                .then(|| current.map(published_inventory))
                .flatten();
            let base = match previous.as_deref() {
                Some(model) => EventBase::Model(model),
                None => EventBase::Published {
                    inventory: published.as_ref(),
                    complete: current.is_none_or(|c| c.omitted_nodes.is_none()),
                },
            };
            let events = transitions_since(base, &scanned);
            (plan_status(desired, current, Timestamp::now()), events)
        });
        let Some(status) = write else {
            debug!(cr = %name, "status unchanged; write skipped");
            self.models.insert(name, scanned);
            self.events.publish(&self.health, inventory, events).await;
            return Ok(Outcome::done());
        };
        let applied = self
            .api
            .patch_status(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(status_apply_body(&status)),
            )
            .await
            .map_err(Error::kube(format!(
                "writing the status of GpuInventory {name} (server-side apply)"
            )))?;
        info!(
            cr = %name,
            gpu_nodes = status.total_gpu_nodes,
            ready = status.ready_gpu_nodes,
            gpus = status.total_gpus,
            listed = status.nodes.len(),
            "reconciled GpuInventory"
        );
        let (planned_at, written_at) = (
            cached.version.map(str::to_owned),
            applied.metadata.resource_version,
        );
        self.writer
            .record_write(&name, planned_at, written_at, status);
        // Remembered only once the write went through: a failed write is retried, and its events with it.
        self.models.insert(name, scanned);
        self.events.publish(&self.health, inventory, events).await;
        Ok(Outcome::done())
    }
}

#[cfg(test)]
mod tests;
