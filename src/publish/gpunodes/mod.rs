//! The GpuNode publisher: one `GpuNode` per GPU node of the node watch, with the node's full detail.
//!
//! It follows the sources' change stream and its own watch of GpuNodes (a deleted or hand-edited GpuNode is
//! put back), plans every node against the watch's cache (pure: [`plan`]) and sends only the writes that
//! change something, a few at a time. A GpuNode whose node is no GPU node any more, or left the node watch's
//! selector, is deleted; one whose node is deleted goes with it by garbage collection (owner reference).
//!
//! Which GpuNodes are this operator's: those the node watch's selector picks. Each GpuNode carries its
//! node's labels for the keys that selector names, so the GpuNode watch uses the same selector, and two
//! operators watching different nodes never touch each other's GpuNodes.

pub(crate) mod plan;
mod unchanged;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::inventory::selector::LabelSelector;
use futures::StreamExt;
use jiff::Timestamp;
use kube::Resource;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tracing::{debug, info, warn};

use super::Context;
use super::status::StatusApply;
use super::writer::Cached;
use crate::FIELD_MANAGER;
use crate::crd::GpuNode;
use crate::error::{Error, Result, api_status};
use crate::inventory::model::NodeInventory;
use crate::runtime::backoff;
use crate::runtime::credentials;
use crate::runtime::shutdown::Shutdown;
use crate::sources::ChangeSignal;
use crate::sources::stripped::{ObjectKey, StrippedStore, StrippedWriter, feed, stripped_store};
use plan::{GpuNodeContent, GpuNodeDigest, GpuNodeWrite};
use unchanged::{Read, Unchanged};

/// How many GpuNode requests are in flight at once: enough to write thousands at start-up in seconds,
/// few enough not to crowd out other clients of the API server (its default is 400 mutating in flight).
pub(crate) const WRITE_CONCURRENCY: usize = 32;

/// Which GpuNodes this operator owns.
#[derive(Clone, Debug, Default)]
pub(crate) struct GpuNodeScope {
    /// The node watch's label selector (`--node-label-selector`), also the GpuNode watch's; `None`: all.
    pub(crate) selector: Option<String>,
    /// The label keys it names, copied from each node onto its GpuNode.
    pub(crate) keys: Vec<String>,
}

impl GpuNodeScope {
    /// The scope of a node watch with `selector`.
    pub(crate) fn of(selector: Option<&str>) -> Self {
        Self {
            selector: selector.map(str::to_owned),
            keys: selector
                .map(crate::inventory::selector::selector_keys)
                .unwrap_or_default(),
        }
    }
}

/// A GpuNode as the cache keeps it: its version and our part of it.
#[derive(Debug, PartialEq)]
struct CachedGpuNode {
    version: Option<String>,
    content: GpuNodeDigest,
}

/// The GpuNode watch's cache: each object's version and our part of it.
fn gpunode_store(
    scope: &GpuNodeScope,
) -> (
    StrippedStore<CachedGpuNode>,
    StrippedWriter<GpuNode, CachedGpuNode>,
) {
    let keys = scope.keys.clone();
    stripped_store(move |object: &GpuNode| {
        Some(CachedGpuNode {
            version: object.metadata.resource_version.clone(),
            content: plan::current(object, &keys),
        })
    })
}

/// The publisher's key in the context's retry backoff (one for all GpuNodes: a pass writes them all).
const RETRY_KEY: &str = "gpunodes";

/// Runs the publisher until shutdown.
pub(crate) async fn run(ctx: Arc<Context>, scope: GpuNodeScope, shutdown: Shutdown) {
    let api: Api<GpuNode> = Api::all(ctx.client.clone());
    let (store, mut writer) = gpunode_store(&scope);
    let own_changes = ChangeSignal::default();
    let mut wake = own_changes.subscribe();
    let mut config = watcher::Config::default();
    if let Some(selector) = &scope.selector {
        config = config.labels(selector);
    }
    let events = watcher(api.clone(), config)
        .backoff(backoff::WATCH.backoff())
        .modify(|object| object.metadata.managed_fields = None);
    let health = ctx.health.clone();
    let watch_task = tokio::spawn(async move {
        feed("gpunodes", events, &mut writer, &health, &own_changes).await;
    });
    let mut changes = ctx.sources.changes();
    tokio::select! {
        _ = store.wait_until_ready() => {}
        _ = shutdown.clone().wait() => { watch_task.abort(); return; }
    }
    let mut unchanged = Unchanged::default();
    loop {
        let delay = match ctx.retry_wait(RETRY_KEY) {
            // The last write was refused (403): a change does not make the next one pass.
            Some(wait) => wait,
            None => pass(&ctx, &api, &store, &scope, &mut unchanged).await,
        };
        tokio::select! {
            alive = changes.next() => if !alive { break },
            alive = wake.next() => if !alive { break },
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.clone().wait() => break,
        }
    }
    watch_task.abort();
    info!("GpuNode publisher stopped");
}

/// Runs one pass and turns its outcome into the delay before the next: the requeue period, the
/// earliest write gap still open, or the backoff after a failure.
async fn pass(
    ctx: &Arc<Context>,
    api: &Api<GpuNode>,
    store: &StrippedStore<CachedGpuNode>,
    scope: &GpuNodeScope,
    unchanged: &mut Unchanged,
) -> Duration {
    match reconcile_all(ctx, api, store, scope, unchanged).await {
        Ok(retry) => {
            ctx.reset_backoff(RETRY_KEY);
            let next = ctx.next_pass();
            retry.map_or(next, |r| r.min(next))
        }
        Err(e) => {
            // A credential failure is reported once for every caller (runtime/credentials.rs).
            if !e
                .kube_error()
                .is_some_and(|k| credentials::report("gpunodes", k))
            {
                warn!(error = %e, reason = e.metric_label(), "writing GpuNodes failed; retrying with backoff");
            }
            ctx.backoff(RETRY_KEY, &e)
        }
    }
}

/// One pass: every GPU node's GpuNode planned against the cache (but those `unchanged` holds as current on
/// the same objects), the writes sent, stale GpuNodes deleted. Returns when to look again for nodes still
/// within their write gap; `unchanged` becomes what this pass found current.
async fn reconcile_all(
    ctx: &Context,
    api: &Api<GpuNode>,
    store: &StrippedStore<CachedGpuNode>,
    scope: &GpuNodeScope,
    unchanged: &mut Unchanged,
) -> Result<Option<Duration>> {
    let started = std::time::Instant::now();
    let inventory = ctx.inventory(&LabelSelector::default());
    let now = Timestamp::now();
    let wanted: HashSet<&str> = inventory.nodes.iter().map(|n| n.name.as_str()).collect();
    let held: Vec<ObjectKey> = store.keys();
    let stale = plan::stale(held.iter().map(|(_, name)| name.as_str()), &wanted);
    drop(wanted);
    let deletes = stale.len();
    // Each node is planned when the stream reaches it, not all before the first write: at start-up a pass
    // writes thousands of GpuNodes, and planning them first would hold every one's content at once. Holding
    // the scan through the pass costs little, its entries being shared with the other publishers' scans
    // (crate::inventory::interner).
    let mut plans = Plans {
        nodes: inventory.nodes.iter(),
        ctx,
        store,
        scope,
        now,
        retry: None,
        planned: 0,
        last: unchanged,
        current: Unchanged::default(),
    };
    let ops = plans
        .by_ref()
        .chain(stale.into_iter().map(Op::Delete as fn(String) -> Op));
    let results: Vec<Result<()>> = futures::stream::iter(ops)
        .map(|op| async move {
            match op {
                Op::Write(name, version, write) => send(ctx, api, name, version, *write).await,
                Op::Delete(name) => delete(ctx, api, name).await,
            }
        })
        .buffer_unordered(WRITE_CONCURRENCY)
        .collect()
        .await;
    let (planned, retry) = (plans.planned, plans.retry);
    *unchanged = std::mem::take(&mut plans.current);
    if planned + deletes > 0 {
        debug!(
            written = planned,
            deleted = deletes,
            took_ms = started.elapsed().as_millis() as u64,
            "GpuNodes reconciled"
        );
    }
    ctx.observe_reconcile(
        "gpunodes",
        started,
        results.iter().find_map(|r| r.as_ref().err()),
    );
    // Every write was tried; the first failure is retried with backoff (the others are planned again).
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(retry)
}

/// One request (or pair of requests) of a pass.
enum Op {
    /// Write a GpuNode planned against the cache at this version.
    Write(String, Option<String>, Box<GpuNodeWrite>),
    /// Delete a stale GpuNode.
    Delete(String),
}

/// A pass's writes, planned one node at a time as they are taken (an iterator, not a closure: a closure
/// over borrowed entries in the pass's future trips the compiler's check that the future is `Send`).
struct Plans<'a> {
    nodes: std::slice::Iter<'a, Arc<NodeInventory>>,
    ctx: &'a Context,
    store: &'a StrippedStore<CachedGpuNode>,
    scope: &'a GpuNodeScope,
    now: Timestamp,
    /// The earliest end of a write gap that held a node back.
    retry: Option<Duration>,
    /// How many writes were planned.
    planned: usize,
    /// What the last pass found current.
    last: &'a Unchanged,
    /// What this pass finds current.
    current: Unchanged,
}

impl Iterator for Plans<'_> {
    type Item = Op;

    fn next(&mut self) -> Option<Op> {
        for entry in self.nodes.by_ref() {
            if let Some(wait) = self.ctx.gpunode_writer.wait_before_write(&entry.name) {
                self.retry = Some(self.retry.map_or(wait, |r| r.min(wait)));
                continue;
            }
            let read = Read {
                entry: entry.clone(),
                node: self.ctx.sources.node(&entry.name),
                cached: self.store.get(&key(&entry.name)),
            };
            if self.last.holds(&entry.name, &read) {
                self.ctx.gpunode_writer.count_skipped();
                self.current.remember(entry.name.clone(), read);
                continue;
            }
            match plan_node(self.ctx, self.scope, &read, self.now) {
                Some(op) => {
                    self.planned += 1;
                    return Some(op);
                }
                None => self.current.remember(entry.name.clone(), read),
            }
        }
        None
    }
}

/// Plans one GPU node's GpuNode against the watch's cache and the writer's own recent writes; `None`: it is
/// as planned already.
fn plan_node(ctx: &Context, scope: &GpuNodeScope, read: &Read, now: Timestamp) -> Option<Op> {
    let (entry, node, cached_object) = (&read.entry, &read.node, &read.cached);
    let desired = plan::desired(
        entry,
        node.as_ref().and_then(|n| n.uid.as_deref()),
        node.as_ref().map(|n| &n.labels),
        &scope.keys,
    );
    let cached = Cached {
        version: cached_object.as_ref().and_then(|c| c.version.as_deref()),
        content: cached_object.as_ref().map(|c| &c.content),
    };
    let (write, ()) = ctx.gpunode_writer.plan(&entry.name, cached, |current| {
        (plan::plan(desired, current, now), ())
    });
    let version = cached.version.map(str::to_owned);
    write.map(|write| Op::Write(entry.name.clone(), version, Box::new(write)))
}

fn key(name: &str) -> ObjectKey {
    (String::new(), name.to_owned())
}

/// Sends one GpuNode's writes: the object first (a new GpuNode must exist before its status), then the status.
async fn send(
    ctx: &Context,
    api: &Api<GpuNode>,
    name: String,
    cache_version: Option<String>,
    write: GpuNodeWrite,
) -> Result<()> {
    let mut stale = vec![cache_version];
    let params = PatchParams::apply(FIELD_MANAGER).force();
    if write.object {
        let body = object_apply_body(&name, &write.content);
        let applied = api
            .patch(&name, &params, &Patch::Apply(body))
            .await
            .map_err(Error::kube(format!(
                "writing GpuNode {name} (server-side apply)"
            )))?;
        stale.push(applied.metadata.resource_version);
    }
    if write.status {
        api.patch_status(
            &name,
            &params,
            &Patch::Apply(StatusApply::of::<GpuNode>(&write.content.status)),
        )
        .await
        .map_err(Error::kube(format!(
            "writing the status of GpuNode {name} (server-side apply)"
        )))?;
    }
    ctx.gpunode_writer
        .record_write_after(&name, stale, GpuNodeDigest::of(&write.content));
    Ok(())
}

/// Deletes the GpuNode of a node that is no GPU node of ours any more; one already gone is fine.
async fn delete(ctx: &Context, api: &Api<GpuNode>, name: String) -> Result<()> {
    match api.delete(&name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if api_status(&e) == Some(404) => {}
        Err(e) => return Err(Error::kube(format!("deleting GpuNode {name}"))(e)),
    }
    info!(gpunode = %name, "deleted the GpuNode of a node that is no GPU node in scope any more");
    ctx.gpunode_writer.forget(&name);
    Ok(())
}

/// The server-side apply body of a GpuNode's object part: `apiVersion` and `kind` (pitfall 1), labels,
/// the owner reference to its Node, and the spec.
fn object_apply_body(name: &str, content: &GpuNodeContent) -> serde_json::Value {
    let owners: Vec<serde_json::Value> = content
        .owner_uid
        .iter()
        .map(|uid| json!({ "apiVersion": "v1", "kind": "Node", "name": name, "uid": uid }))
        .collect();
    json!({
        "apiVersion": GpuNode::api_version(&()),
        "kind": GpuNode::kind(&()),
        "metadata": { "name": name, "labels": content.labels, "ownerReferences": owners },
        "spec": { "nodeName": name },
    })
}

#[cfg(test)]
mod tests;
