//! The status publisher (the inventory controller): each GpuInventory's status, from the shared scan of
//! the nodes its `spec.nodeSelector` picks, plus an event per transition.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use tracing::{debug, info, instrument, warn};

use super::Context;
use super::events::publish_events;
use super::metrics::{export_inventory, retain_inventories};
use super::writer::Cached;
use crate::FIELD_MANAGER;
use crate::crd::{GpuInventory, GpuInventoryStatus};
use crate::error::{Error, Result};
use crate::inventory::events::{EventBase, transitions_since};
use crate::inventory::selector::LabelSelector;
use crate::publish::content::plan::plan_status;
use crate::publish::content::status::{NodeList, desired_status};
use crate::publish::content::wire::published_inventory;
use crate::runtime::backoff;
use crate::runtime::credentials;
use crate::runtime::shutdown::Shutdown;
use crate::sources::convert::k8s_selector::api_label_selector;

/// Runs the controller until shutdown.
pub(crate) async fn run(
    ctx: Arc<Context>,
    inventory_label_selector: Option<String>,
    shutdown: Shutdown,
) {
    let api: Api<GpuInventory> = Api::all(ctx.client.clone());
    let mut config = watcher::Config::default();
    if let Some(selector) = &inventory_label_selector {
        config = config.labels(selector);
    }
    let health = ctx.health.clone();
    let metrics = ctx.metrics.clone();
    let gauges = ctx.gauges.clone();
    let models = ctx.clone();
    let controller = Controller::new(api, config).trigger_backoff(backoff::WATCH.backoff());
    let inventories = controller.store();
    controller
        .reconcile_all_on(ctx.sources.changes().into_stream())
        .graceful_shutdown_on(shutdown.wait())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            let health = health.clone();
            let exists = |name: &str| inventories.get(&ObjectRef::new(name)).is_some();
            retain_inventories(&metrics, &gauges, exists);
            models.retain_models(exists);
            async move {
                match result {
                    Ok(_) => {}
                    Err(kube::runtime::controller::Error::QueueError(e)) => health.watch_failed("gpuinventories", &e),
                    Err(kube::runtime::controller::Error::ReconcilerFailed(e, obj)) => {
                        // A credential failure is reported once for every caller (runtime/credentials.rs).
                        if !e.kube_error().is_some_and(|k| credentials::report("inventory", k)) {
                            warn!(cr = %obj.name, error = %e, reason = e.metric_label(), "reconcile failed; retrying with backoff")
                        }
                    }
                    Err(other) => debug!(error = %other, "controller event"),
                }
            }
        })
        .await;
    info!("inventory controller stopped");
}

/// The server-side apply body of a GpuInventory status: `apiVersion` and `kind` are required (the article's
/// pitfall 1).
pub fn status_apply_body(status: &GpuInventoryStatus) -> StatusApply<'_, GpuInventoryStatus> {
    StatusApply::of::<GpuInventory>(status)
}

/// The server-side apply body of a status subresource (GpuInventory's, GpuNode's), serialized straight from
/// the borrowed status (no JSON tree copy).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusApply<'a, S> {
    api_version: Cow<'static, str>,
    kind: Cow<'static, str>,
    status: &'a S,
}

impl<'a, S> StatusApply<'a, S> {
    /// The body for `status` of an object of kind `K`, with `K`'s `apiVersion` and `kind`.
    pub(crate) fn of<K: Resource<DynamicType = ()>>(status: &'a S) -> Self {
        StatusApply {
            api_version: K::api_version(&()),
            kind: K::kind(&()),
            status,
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

#[instrument(skip_all, fields(cr = %inventory.name_any()))]
async fn reconcile(inventory: Arc<GpuInventory>, ctx: Arc<Context>) -> Result<Action> {
    let started = Instant::now();
    let result = reconcile_inner(&inventory, &ctx).await;
    ctx.observe_reconcile("inventory", started, result.as_ref().err());
    result
}

/// Read (the shared scan, the cached status), plan (pure), write (apply, then events).
async fn reconcile_inner(inventory: &Arc<GpuInventory>, ctx: &Arc<Context>) -> Result<Action> {
    let name = inventory.name_any();
    if let Some(wait) = ctx.retry_wait(&name) {
        // The last write was refused (403): a change does not make the next one pass.
        return Ok(Action::requeue(wait));
    }
    if let Some(wait) = ctx.status_writer.wait_before_write(&name) {
        // Woken by our own write's watch event (or a burst): plan once the gap has passed.
        return Ok(Action::requeue(wait));
    }
    let scanned = ctx.inventory(&node_selector(inventory)?);
    // The model (every node) is what metrics and events are computed on; only the status written is cut.
    export_inventory(&ctx.metrics, &ctx.gauges, &name, &scanned);
    let desired = desired_status(
        &scanned,
        inventory.metadata.generation,
        NodeList::Within(ctx.status_nodes_budget),
    );
    let cached = Cached {
        version: inventory.metadata.resource_version.as_deref(),
        content: inventory.status.as_ref(),
    };
    let previous = ctx.last_model(&name);
    let (write, events) = ctx.status_writer.plan(&name, cached, |current| {
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
        ctx.remember_model(&name, scanned.clone());
        publish_events(ctx, inventory, events).await;
        ctx.reset_backoff(&name);
        return Ok(Action::requeue(ctx.next_pass()));
    };
    let api: Api<GpuInventory> = Api::all(ctx.client.clone());
    api.patch_status(
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
    ctx.status_writer
        .record_write(&name, cached.version.map(str::to_owned), status);
    // Remembered only once the write went through: a failed write is retried, and its events with it.
    ctx.remember_model(&name, scanned.clone());
    publish_events(ctx, inventory, events).await;
    ctx.reset_backoff(&name);
    Ok(Action::requeue(ctx.next_pass()))
}

fn error_policy(inventory: Arc<GpuInventory>, error: &Error, ctx: Arc<Context>) -> Action {
    Action::requeue(ctx.backoff(&inventory.name_any(), error))
}

#[cfg(test)]
mod tests;
