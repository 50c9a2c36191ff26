//! The inventory controller: writes each GpuInventory's status from the shared node cache.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt;
use jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::core::Selector;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::Event;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use tracing::{debug, error, info, instrument, warn};

use super::{Context, node_changes};
use crate::FIELD_MANAGER;
use crate::conditions::inventory_conditions;
use crate::crd::{GpuInventory, GpuInventoryStatus};
use crate::error::{Error, Result, describe_kube_error};
use crate::events::{InventoryEvent, transitions};
use crate::guard::Decision;
use crate::scanner::{Inventory, scan};
use crate::shutdown::Shutdown;
use crate::status_size::{STATUS_NODES_BUDGET_BYTES, fit_nodes};
use crate::watch_backoff::WatchBackoff;

/// Runs the controller until shutdown.
pub async fn run(ctx: Arc<Context>, inventory_label_selector: Option<String>, shutdown: Shutdown) {
    let api: Api<GpuInventory> = Api::all(ctx.client.clone());
    let mut config = watcher::Config::default();
    if let Some(selector) = &inventory_label_selector {
        config = config.labels(selector);
    }
    let health = ctx.health.clone();
    let metrics = ctx.metrics.clone();
    let controller = Controller::new(api, config).trigger_backoff(WatchBackoff::default());
    let inventories = controller.store();
    controller
        .reconcile_all_on(node_changes(ctx.nodes.subscribe()))
        .graceful_shutdown_on(shutdown.wait())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| {
            let health = health.clone();
            metrics.retain_inventories(|name| inventories.get(&ObjectRef::new(name)).is_some());
            async move {
                match result {
                    Ok(_) => {}
                    Err(kube::runtime::controller::Error::QueueError(e)) => health.watch_failed("gpuinventories", &e),
                    Err(kube::runtime::controller::Error::ReconcilerFailed(e, obj)) => {
                        warn!(cr = %obj.name, error = %e, reason = e.metric_label(), "reconcile failed; retrying with backoff")
                    }
                    Err(other) => debug!(error = %other, "controller event"),
                }
            }
        })
        .await;
    info!("inventory controller stopped");
}

/// The status a GpuInventory should have, before the guard stamps times.
pub fn desired_status(inventory: Inventory, generation: Option<i64>) -> GpuInventoryStatus {
    let conditions = inventory_conditions(&inventory, generation);
    GpuInventoryStatus {
        observed_time: None,
        observed_generation: generation,
        total_gpu_nodes: inventory.total_gpu_nodes,
        ready_gpu_nodes: inventory.ready_gpu_nodes,
        total_gpus: inventory.total_gpus,
        nodes: inventory.nodes,
        omitted_nodes: None,
        conditions,
    }
}

/// The server-side apply body of a status: `apiVersion` and `kind` are required (the article's pitfall 1).
pub fn status_apply_body(status: &GpuInventoryStatus) -> StatusApply<'_> {
    StatusApply {
        api_version: GpuInventory::api_version(&()),
        kind: GpuInventory::kind(&()),
        status,
    }
}

/// The server-side apply body of a status, serialized straight from the borrowed status (no JSON tree copy).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusApply<'a> {
    api_version: Cow<'static, str>,
    kind: Cow<'static, str>,
    status: &'a GpuInventoryStatus,
}

fn node_selector(inventory: &GpuInventory) -> Result<Selector> {
    match &inventory.spec.node_selector {
        None => Ok(Selector::default()),
        Some(selector) => {
            Selector::try_from(selector.clone()).map_err(|e| Error::InvalidNodeSelector {
                name: inventory.name_any(),
                reason: e.to_string(),
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

async fn reconcile_inner(inventory: &Arc<GpuInventory>, ctx: &Arc<Context>) -> Result<Action> {
    let name = inventory.name_any();
    let selector = node_selector(inventory)?;
    let nodes = ctx.nodes.nodes();
    let scanned = scan(nodes.iter().map(AsRef::as_ref), &selector);
    let mut desired = desired_status(scanned, inventory.metadata.generation);
    ctx.metrics.export_inventory(&name, &desired);
    fit_nodes(&mut desired, STATUS_NODES_BUDGET_BYTES);
    let cache_version = inventory.metadata.resource_version.as_deref();
    let (decision, events) = ctx.recent_status.with_current(
        &name,
        cache_version,
        inventory.status.as_ref(),
        |current| {
            let decision = ctx.status_guard.decide(current, desired, Timestamp::now());
            let events = match &decision {
                Decision::Write(status) => transitions(current, status),
                Decision::Skip => Vec::new(),
            };
            (decision, events)
        },
    );
    match decision {
        Decision::Skip => debug!(cr = %name, "status unchanged; write skipped"),
        Decision::Write(status) => {
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
            ctx.status_guard.record_write();
            info!(
                cr = %name,
                gpu_nodes = status.total_gpu_nodes,
                ready = status.ready_gpu_nodes,
                gpus = status.total_gpus,
                "reconciled GpuInventory"
            );
            if let Some(omitted) = status.omitted_nodes {
                // Logged per write, not per reconcile: writes happen only when the content changed.
                error!(
                    cr = %name,
                    omitted,
                    "the status would exceed the API server's object size limit; {omitted} GPU node entries \
                     left out (status.omittedNodes); split the inventory with spec.nodeSelector"
                );
            }
            ctx.recent_status
                .record(&name, cache_version.map(str::to_owned), status);
            publish(ctx, inventory, events).await;
        }
    }
    ctx.reset_backoff(&name);
    Ok(Action::requeue(ctx.requeue))
}

/// Publishes events on the inventory. A failure is logged, not retried: the status already says it all.
async fn publish(ctx: &Context, inventory: &GpuInventory, events: Vec<InventoryEvent>) {
    let reference = inventory.object_ref(&());
    for event in events {
        let event = Event {
            type_: event.type_,
            reason: event.reason,
            note: Some(event.note.chars().take(1000).collect()),
            action: "Reconcile".to_owned(),
            secondary: None,
        };
        if let Err(e) = ctx.recorder.publish(&event, &reference).await {
            ctx.health.failure(
                "events",
                &format!(
                    "publishing event {} on GpuInventory {}: {}",
                    event.reason,
                    inventory.name_any(),
                    describe_kube_error(&e)
                ),
            );
        }
    }
}

fn error_policy(inventory: Arc<GpuInventory>, _error: &Error, ctx: Arc<Context>) -> Action {
    Action::requeue(ctx.backoff(&inventory.name_any()))
}
