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

mod cache;
pub(crate) mod plan;
mod unchanged;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Client, Resource};
use serde_json::json;
use tracing::{debug, info};

use super::driver::own_objects::{OwnObjects, watch_own};
use super::driver::{Outcome, Publisher};
use super::scan_service::ScanService;
use super::writer::{Cached, GuardedWriter};
use crate::FIELD_MANAGER;
use crate::crd::GpuNode;
use crate::error::{Error, Result, api_status};
use crate::inventory::model::{IdleByNode, NodeInventory};
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::Changes;
use cache::{CachedGpuNode, cached};
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

/// The GpuNode publisher.
pub(crate) struct GpuNodes {
    api: Api<GpuNode>,
    /// The GpuNode watch's cache: each object's version and our part of it.
    cache: OwnObjects<CachedGpuNode>,
    scope: GpuNodeScope,
    /// Guards GpuNode writes (keyed by node name).
    pub(crate) writer: GuardedWriter<GpuNodeDigest>,
    /// What the last pass found current.
    unchanged: Unchanged,
}

/// The publisher's one key: a pass writes every GpuNode, and a failed pass is retried whole.
const PASS_KEY: &str = "gpunodes";

impl GpuNodes {
    /// The publisher of the GpuNodes in `scope`, and the follower of their changes (its GpuNode watch is
    /// started here).
    pub(crate) fn start(
        client: Client,
        scope: GpuNodeScope,
        health: Health,
        metrics: &Metrics,
    ) -> (Self, Changes) {
        let api: Api<GpuNode> = Api::all(client);
        let mut config = watcher::Config::default();
        if let Some(selector) = &scope.selector {
            config = config.labels(selector);
        }
        let (cache, changes) = watch_own(
            api.clone(),
            config,
            "gpunodes",
            health,
            cached(scope.keys.clone()),
        );
        (GpuNodes::new(api, cache, scope, metrics), changes)
    }

    /// The publisher over `cache`.
    fn new(
        api: Api<GpuNode>,
        cache: OwnObjects<CachedGpuNode>,
        scope: GpuNodeScope,
        metrics: &Metrics,
    ) -> Self {
        GpuNodes {
            api,
            cache,
            scope,
            writer: GuardedWriter::for_target(metrics, "gpunode"),
            unchanged: Unchanged::default(),
        }
    }
}

impl Publisher for GpuNodes {
    fn name(&self) -> &'static str {
        "gpunodes"
    }

    async fn cache_ready(&self) {
        self.cache.store.wait_until_ready().await;
    }

    fn keys(&mut self) -> Vec<String> {
        vec![PASS_KEY.to_owned()]
    }

    async fn reconcile(&mut self, _pass: &str, scans: &ScanService) -> Result<Outcome> {
        let retry = self.reconcile_all(scans).await?;
        Ok(Outcome { again_in: retry })
    }
}

impl GpuNodes {
    /// One pass: every GPU node's GpuNode planned against the cache (but those the last pass found current
    /// on the same objects), the writes sent, stale GpuNodes deleted. Returns when to look again for nodes
    /// still within their write gap.
    pub(crate) async fn reconcile_all(&mut self, scans: &ScanService) -> Result<Option<Duration>> {
        let started = std::time::Instant::now();
        let inventory = scans.inventory(&crate::inventory::selector::LabelSelector::default());
        let now = Timestamp::now();
        let wanted: HashSet<&str> = inventory.nodes.iter().map(|n| n.name.as_str()).collect();
        let held = self.cache.keys();
        let stale = plan::stale(held.iter().map(|(_, name)| name.as_str()), &wanted);
        drop(wanted);
        let deletes = stale.len();
        let last = std::mem::take(&mut self.unchanged);
        // Each node is planned when the stream reaches it, not all before the first write: at start-up a
        // pass writes thousands of GpuNodes, and planning them first would hold every one's content at once.
        // Holding the scan through the pass costs little, its entries being shared with the other
        // publishers' scans (crate::inventory::memory).
        let mut plans = Plans {
            nodes: inventory.nodes.iter(),
            idle: &inventory.idle,
            publisher: self,
            scans,
            now,
            retry: None,
            planned: 0,
            last: &last,
            current: Unchanged::default(),
        };
        let this: &GpuNodes = self;
        let ops = plans
            .by_ref()
            .chain(stale.into_iter().map(Op::Delete as fn(String) -> Op));
        let results: Vec<Result<()>> = futures::stream::iter(ops)
            .map(|op| async move {
                match op {
                    Op::Write(name, version, write) => this.send(name, version, *write).await,
                    Op::Delete(name) => this.delete(name).await,
                }
            })
            .buffer_unordered(WRITE_CONCURRENCY)
            .collect()
            .await;
        let (planned, retry) = (plans.planned, plans.retry);
        let current = std::mem::take(&mut plans.current);
        drop(plans);
        self.unchanged = current;
        if planned + deletes > 0 {
            debug!(
                written = planned,
                deleted = deletes,
                took_ms = started.elapsed().as_millis() as u64,
                "GpuNodes reconciled"
            );
        }
        // Every write was tried; the first failure is retried with backoff (the others are planned again).
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(retry)
    }
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
    /// The pass's idle holdings, by node.
    idle: &'a IdleByNode,
    publisher: &'a GpuNodes,
    scans: &'a ScanService,
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
        let writer = &self.publisher.writer;
        for entry in self.nodes.by_ref() {
            if let Some(wait) = writer.wait_before_write(&entry.name) {
                self.retry = Some(self.retry.map_or(wait, |r| r.min(wait)));
                continue;
            }
            let read = Read {
                entry: entry.clone(),
                idle: self.idle.get(&entry.name).cloned(),
                node: self.scans.node(&entry.name),
                cached: self.publisher.cache.get("", &entry.name),
            };
            if self.last.holds(&entry.name, &read) {
                writer.count_skipped();
                self.current.remember(entry.name.clone(), read);
                continue;
            }
            match self.publisher.plan_node(&read, self.now) {
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

impl GpuNodes {
    /// Plans one GPU node's GpuNode against the watch's cache and the writer's own recent writes; `None`: it
    /// is as planned already.
    fn plan_node(&self, read: &Read, now: Timestamp) -> Option<Op> {
        let (entry, node, cached_object) = (&read.entry, &read.node, &read.cached);
        let desired = plan::desired(
            entry,
            read.idle.as_deref().unwrap_or(&[]),
            node.as_ref().and_then(|n| n.uid.as_deref()),
            node.as_ref().map(|n| &n.labels),
            &self.scope.keys,
        );
        let absent = cached_object
            .is_none()
            .then(|| self.cache.absent_version("", &entry.name))
            .flatten();
        let cached = Cached {
            version: cached_object
                .as_ref()
                .map_or(absent.as_deref(), |c| c.version.as_deref()),
            content: cached_object.as_ref().map(|c| &c.content),
        };
        let (write, ()) = self.writer.plan(&entry.name, cached, |current| {
            (plan::plan(desired, current, now), ())
        });
        let version = cached.version.map(str::to_owned);
        write.map(|write| Op::Write(entry.name.clone(), version, Box::new(write)))
    }

    /// Sends one GpuNode's write: one server-side apply of the whole object, labels, spec and status (the
    /// GpuNode CRD has no status subresource: one request creates a GpuNode with everything, where a create
    /// and then a status write took two; see `publish::crd`).
    async fn send(
        &self,
        name: String,
        cache_version: Option<String>,
        write: GpuNodeWrite,
    ) -> Result<()> {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let body = apply_body(&name, &write.content);
        let applied = self
            .api
            .patch(&name, &params, &Patch::Apply(body))
            .await
            .map_err(Error::kube(format!(
                "writing GpuNode {name} (server-side apply)"
            )))?;
        self.writer.record_write_after(
            &name,
            vec![cache_version],
            applied.metadata.resource_version,
            GpuNodeDigest::of(&write.content),
        );
        Ok(())
    }

    /// Deletes the GpuNode of a node that is no GPU node of ours any more; one already gone is fine.
    async fn delete(&self, name: String) -> Result<()> {
        match self.api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(e) if api_status(&e) == Some(404) => {}
            Err(e) => return Err(Error::kube(format!("deleting GpuNode {name}"))(e)),
        }
        info!(gpunode = %name, "deleted the GpuNode of a node that is no GPU node in scope any more");
        self.writer.forget(&name);
        Ok(())
    }
}

/// The server-side apply body of a GpuNode's object part: `apiVersion` and `kind` (pitfall 1), labels,
/// the owner reference to its Node, and the spec.
fn apply_body(name: &str, content: &GpuNodeContent) -> serde_json::Value {
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
        "status": content.status,
    })
}

#[cfg(test)]
mod tests;
