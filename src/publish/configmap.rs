//! The ConfigMap publisher: keeps the `gpu-node-status` ConfigMap (one key per GPU node) current.
//!
//! It wakes on the sources' changes, on changes to the ConfigMap itself (deleted, edited by hand) and every
//! requeue period; wake-ups that arrive while it works are coalesced into one pass.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::inventory::selector::LabelSelector;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use serde_json::json;
use tokio::sync::Notify;
use tracing::{debug, error, info, warn};

use super::Context;
use super::writer::Cached;
use crate::FIELD_MANAGER;
use crate::error::{Error, Result};
use crate::publish::content::configmap::{DATA_BUDGET_BYTES, configmap_data};
use crate::publish::content::plan::plan_configmap;
use crate::runtime::backoff;
use crate::runtime::credentials;
use crate::runtime::shutdown::Shutdown;

/// Where the ConfigMap lives.
#[derive(Clone, Debug)]
pub(crate) struct ConfigMapTarget {
    /// Namespace.
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
}

/// Runs the controller until shutdown.
pub(crate) async fn run(ctx: Arc<Context>, target: ConfigMapTarget, shutdown: Shutdown) {
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &target.namespace);
    let (store, writer) = reflector::store::<ConfigMap>();
    let wake = Arc::new(Notify::new());
    let cache_events = Arc::new(AtomicU64::new(0));
    let watch_task = tokio::spawn(watch_configmap(
        api.clone(),
        target.name.clone(),
        writer,
        wake.clone(),
        cache_events.clone(),
        ctx.clone(),
    ));
    let mut changes = ctx.sources.changes();
    tokio::select! {
        _ = synced(&wake, &cache_events) => {}
        _ = shutdown.clone().wait() => { watch_task.abort(); return; }
    }
    let key = format!("configmap/{}/{}", target.namespace, target.name);
    loop {
        let cache = ConfigMapCache {
            store: &store,
            events: &cache_events,
        };
        if let Some(wait) = ctx.configmap_writer.wait_before_write(&target.name) {
            // Woken by our own write's watch event (or a burst): plan once the gap has passed.
            tokio::time::sleep(wait).await;
        }
        let delay = match ctx.retry_wait(&key) {
            // The last write was refused (403): a change does not make the next one pass.
            Some(wait) => wait,
            None => pass(&ctx, &api, cache, &target, &key).await,
        };
        tokio::select! {
            alive = changes.next() => if !alive { break },
            _ = wake.notified() => {}
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.clone().wait() => break,
        }
    }
    watch_task.abort();
    info!("node-status controller stopped");
}

/// One reconcile, observed; returns when to look again (the requeue period, or the backoff after a failure).
async fn pass(
    ctx: &Arc<Context>,
    api: &Api<ConfigMap>,
    cache: ConfigMapCache<'_>,
    target: &ConfigMapTarget,
    key: &str,
) -> std::time::Duration {
    let started = std::time::Instant::now();
    let result = reconcile(ctx, api, cache, target).await;
    ctx.observe_reconcile("node-status", started, result.as_ref().err());
    match result {
        Ok(()) => {
            ctx.reset_backoff(key);
            ctx.next_pass()
        }
        Err(e) => {
            // A credential failure is reported once for every caller (runtime/credentials.rs).
            if !e
                .kube_error()
                .is_some_and(|k| credentials::report("node-status", k))
            {
                warn!(configmap = %target.name, namespace = %target.namespace, error = %e, reason = e.metric_label(),
                      "updating the node-status ConfigMap failed; retrying with backoff");
            }
            ctx.backoff(key, &e)
        }
    }
}

async fn watch_configmap(
    api: Api<ConfigMap>,
    name: String,
    writer: reflector::store::Writer<ConfigMap>,
    wake: Arc<Notify>,
    cache_events: Arc<AtomicU64>,
    ctx: Arc<Context>,
) {
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = watcher(api, config)
        .backoff(backoff::WATCH.backoff())
        .modify(|cm| cm.metadata.managed_fields = None)
        .reflect(writer)
        .boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                if !matches!(event, watcher::Event::Init) {
                    ctx.health.watch_ok("configmap");
                }
                // Only events that change what the store shows count as a new cache version: during a relist
                // the store changes at InitDone. Counting Init too made the version move while the store still
                // lacked our own write, and a reconcile in that gap wrote the same content again.
                if matches!(
                    event,
                    watcher::Event::InitDone | watcher::Event::Apply(_) | watcher::Event::Delete(_)
                ) {
                    cache_events.fetch_add(1, Ordering::SeqCst);
                    wake.notify_one();
                }
            }
            Err(e) => ctx.health.watch_failed("configmap", &e),
        }
    }
}

/// Resolves once the first list is in the store *and* counted: waiting for the store alone would let the first
/// reconcile read a version that the first list's InitDone is about to bump.
async fn synced(wake: &Notify, cache_events: &AtomicU64) {
    while cache_events.load(Ordering::SeqCst) == 0 {
        wake.notified().await;
    }
}

/// The ConfigMap watch cache, and how many events it has applied (its version, for the guarded writer).
///
#[derive(Clone, Copy)]
struct ConfigMapCache<'a> {
    store: &'a Store<ConfigMap>,
    events: &'a AtomicU64,
}

/// Read (the shared scan, the cached ConfigMap), plan (pure), write (apply, then remove foreign keys).
async fn reconcile(
    ctx: &Context,
    api: &Api<ConfigMap>,
    cache: ConfigMapCache<'_>,
    target: &ConfigMapTarget,
) -> Result<()> {
    let inventory = ctx.inventory(&LabelSelector::default());
    let (desired, summary) = configmap_data(&inventory, DATA_BUDGET_BYTES);
    // Not kept through the write: see the GpuNode publisher.
    drop(inventory);
    // Read the event count before the object, so a version can only be older than the object, never newer.
    let cache_version = cache.events.load(Ordering::SeqCst).to_string();
    let current = cache
        .store
        .get(&ObjectRef::new(&target.name).within(&target.namespace));
    let empty = BTreeMap::new();
    let cached = Cached {
        version: Some(&cache_version),
        content: current
            .as_ref()
            .map(|cm| cm.data.as_ref().unwrap_or(&empty)),
    };
    let (write, ()) = ctx.configmap_writer.plan(&target.name, cached, |current| {
        (plan_configmap(desired, current), ())
    });
    let Some(data) = write else {
        debug!(configmap = %target.name, "ConfigMap unchanged; write skipped");
        return Ok(());
    };
    if summary.truncated {
        error!(
            configmap = %target.name,
            omitted = summary.omitted_nodes,
            "the node-status ConfigMap would exceed 1 MiB; {} node entries left out (see its _summary key)",
            summary.omitted_nodes
        );
    }
    let written = apply(api, target, &data).await?;
    remove_foreign_keys(api, target, &written, &data).await?;
    ctx.configmap_writer
        .record_write(&target.name, Some(cache_version), data);
    info!(
        configmap = %target.name,
        namespace = %target.namespace,
        gpu_nodes = summary.total_gpu_nodes,
        ready = summary.ready_gpu_nodes,
        "updated node-status ConfigMap"
    );
    Ok(())
}

/// The server-side apply body of the ConfigMap.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ConfigMapApply<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: ApplyMetadata<'a>,
    data: &'a BTreeMap<String, String>,
}

#[derive(Debug, Serialize)]
struct ApplyMetadata<'a> {
    name: &'a str,
    namespace: &'a str,
    labels: ManagedBy,
}

#[derive(Debug, Serialize)]
struct ManagedBy {
    #[serde(rename = "app.kubernetes.io/managed-by")]
    managed_by: &'static str,
}

async fn apply(
    api: &Api<ConfigMap>,
    target: &ConfigMapTarget,
    data: &BTreeMap<String, String>,
) -> Result<ConfigMap> {
    // Serialized straight from borrowed data: no intermediate JSON tree of a (up to 1 MiB) ConfigMap.
    let body = ConfigMapApply {
        api_version: "v1",
        kind: "ConfigMap",
        metadata: ApplyMetadata {
            name: &target.name,
            namespace: &target.namespace,
            labels: ManagedBy {
                managed_by: FIELD_MANAGER,
            },
        },
        data,
    };
    api.patch(
        &target.name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(Error::kube(format!(
        "writing ConfigMap {}/{} (server-side apply)",
        target.namespace, target.name
    )))
}

/// Server-side apply only removes keys this manager owns; keys added or taken over by someone else
/// (a hand edit, then the node was deleted) are removed explicitly so the ConfigMap holds exactly our content.
async fn remove_foreign_keys(
    api: &Api<ConfigMap>,
    target: &ConfigMapTarget,
    written: &ConfigMap,
    data: &BTreeMap<String, String>,
) -> Result<()> {
    let extra: serde_json::Map<String, serde_json::Value> = written
        .data
        .iter()
        .flatten()
        .filter(|(key, _)| !data.contains_key(*key))
        .map(|(key, _)| (key.clone(), serde_json::Value::Null))
        .collect();
    if extra.is_empty() {
        return Ok(());
    }
    debug!(keys = ?extra.keys().collect::<Vec<_>>(), "removing keys the operator does not own");
    api.patch(
        &target.name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": extra })),
    )
    .await
    .map_err(Error::kube(format!(
        "removing stale keys from ConfigMap {}/{}",
        target.namespace, target.name
    )))?;
    Ok(())
}

#[cfg(test)]
mod tests;
