//! The ConfigMap publisher: keeps the `gpu-node-status` ConfigMap (one key per GPU node) current.
//!
//! Run by `driver::drive`: it wakes on the sources' changes, on changes to the ConfigMap itself (deleted,
//! edited by hand) and every requeue period; wake-ups that arrive while it works are coalesced into one pass.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::inventory::selector::LabelSelector;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde::Serialize;
use serde_json::json;
use tracing::{debug, info, warn};

use super::driver::own_objects::{OwnObjects, watch_own};
use super::driver::{Outcome, Publisher};
use super::scan_service::ScanService;
use super::writer::{AGGREGATE_WRITE_GAP, Cached, GuardedWriter};
use crate::FIELD_MANAGER;
use crate::error::{Error, Result};
use crate::publish::content::configmap::{DATA_BUDGET_BYTES, EntryTexts, configmap_data_kept};
use crate::publish::content::plan::plan_configmap;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::Changes;

/// Where the ConfigMap lives.
#[derive(Clone, Debug)]
pub(crate) struct ConfigMapTarget {
    /// Namespace.
    pub(crate) namespace: String,
    /// Name.
    pub(crate) name: String,
}

/// The ConfigMap as the watch's cache keeps it: its version and data.
#[derive(Debug, PartialEq)]
pub(crate) struct CachedConfigMap {
    /// Its `resourceVersion`.
    version: Option<String>,
    /// Its data (none: empty).
    data: BTreeMap<String, String>,
}

/// The strip of the ConfigMap watch.
pub(crate) fn cached(configmap: &ConfigMap) -> Option<CachedConfigMap> {
    Some(CachedConfigMap {
        version: configmap.metadata.resource_version.clone(),
        data: configmap.data.clone().unwrap_or_default(),
    })
}

/// The ConfigMap publisher.
pub(crate) struct ConfigMaps {
    api: Api<ConfigMap>,
    cache: OwnObjects<CachedConfigMap>,
    target: ConfigMapTarget,
    /// Guards ConfigMap writes.
    pub(crate) writer: GuardedWriter<BTreeMap<String, String>>,
    /// Whether the last write left node entries out: said when that starts and when it ends, not at every
    /// write (at 65,000 nodes every write leaves some out, two a second under churn).
    truncated: AtomicBool,
    /// Each node entry's text, kept for the next pass (only changed entries are serialized again).
    texts: EntryTexts,
}

impl ConfigMaps {
    /// The publisher of the ConfigMap `target`, and the follower of its changes (its watch, of that one
    /// object, is started here).
    pub(crate) fn start(
        client: Client,
        target: ConfigMapTarget,
        health: Health,
        metrics: &Metrics,
    ) -> (Self, Changes) {
        let api: Api<ConfigMap> = Api::namespaced(client, &target.namespace);
        let config = watcher::Config::default().fields(&format!("metadata.name={}", target.name));
        let (cache, changes) = watch_own(api.clone(), config, "configmap", health, cached);
        (ConfigMaps::new(api, cache, target, metrics), changes)
    }

    /// The publisher over `cache`.
    pub(crate) fn new(
        api: Api<ConfigMap>,
        cache: OwnObjects<CachedConfigMap>,
        target: ConfigMapTarget,
        metrics: &Metrics,
    ) -> Self {
        ConfigMaps {
            api,
            cache,
            target,
            writer: GuardedWriter::for_target(metrics, "configmap")
                .with_min_gap(AGGREGATE_WRITE_GAP),
            truncated: AtomicBool::new(false),
            texts: EntryTexts::default(),
        }
    }
}

impl Publisher for ConfigMaps {
    fn name(&self) -> &'static str {
        "node-status"
    }

    async fn cache_ready(&self) {
        self.cache.store.wait_until_ready().await;
    }

    fn keys(&mut self) -> Vec<String> {
        vec![self.target.name.clone()]
    }

    async fn reconcile(&mut self, _name: &str, scans: &ScanService) -> Result<Outcome> {
        self.reconcile_configmap(scans).await
    }
}

impl ConfigMaps {
    /// Read (the shared scan, the cached ConfigMap), plan (pure), write (apply, then remove foreign keys).
    pub(crate) async fn reconcile_configmap(&self, scans: &ScanService) -> Result<Outcome> {
        let target = &self.target;
        if let Some(wait) = self.writer.wait_before_write(&target.name) {
            // Woken by our own write's watch event (or a burst): plan once the gap has passed.
            return Ok(Outcome::again_in(wait));
        }
        let inventory = scans.inventory(&LabelSelector::default());
        let (desired, summary) = configmap_data_kept(&inventory, DATA_BUDGET_BYTES, &self.texts);
        // Not kept through the write: see the GpuNode publisher.
        drop(inventory);
        let current = self.cache.get(&target.namespace, &target.name);
        let absent = current
            .is_none()
            .then(|| self.cache.absent_version(&target.namespace, &target.name))
            .flatten();
        let cached = Cached {
            version: current
                .as_ref()
                .map_or(absent.as_deref(), |c| c.version.as_deref()),
            content: current.as_ref().map(|c| &c.data),
        };
        let (write, ()) = self.writer.plan(&target.name, cached, |current| {
            (plan_configmap(desired, current), ())
        });
        let Some(data) = write else {
            debug!(configmap = %target.name, "ConfigMap unchanged; write skipped");
            return Ok(Outcome::done());
        };
        let was_truncated = self.truncated.swap(summary.truncated, Ordering::Relaxed);
        match (was_truncated, summary.truncated) {
            (false, true) => warn!(
                configmap = %target.name,
                omitted = summary.omitted_nodes,
                "the node-status ConfigMap would exceed 1 MiB; {} node entries left out (see its _summary key; \
                 the GpuNodes and the GpuInventory have every node). Said again when all fit",
                summary.omitted_nodes
            ),
            (true, false) => {
                info!(configmap = %target.name, "every node entry fits the node-status ConfigMap again")
            }
            _ => {}
        }
        let mut stale = vec![cached.version.map(str::to_owned)];
        let applied = apply(&self.api, target, &data).await?;
        let written = match remove_foreign_keys(&self.api, target, &applied, &data).await? {
            Some(removed) => {
                // The apply's version is older than the removal's: the cache may show it meanwhile.
                stale.push(applied.metadata.resource_version);
                removed.metadata.resource_version
            }
            None => applied.metadata.resource_version,
        };
        self.writer
            .record_write_after(&target.name, stale, written, data);
        info!(
            configmap = %target.name,
            namespace = %target.namespace,
            gpu_nodes = summary.total_gpu_nodes,
            ready = summary.ready_gpu_nodes,
            "updated node-status ConfigMap"
        );
        Ok(Outcome::done())
    }
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
/// Returns the ConfigMap after the removal, if there was anything to remove.
async fn remove_foreign_keys(
    api: &Api<ConfigMap>,
    target: &ConfigMapTarget,
    written: &ConfigMap,
    data: &BTreeMap<String, String>,
) -> Result<Option<ConfigMap>> {
    let extra: serde_json::Map<String, serde_json::Value> = written
        .data
        .iter()
        .flatten()
        .filter(|(key, _)| !data.contains_key(*key))
        .map(|(key, _)| (key.clone(), serde_json::Value::Null))
        .collect();
    if extra.is_empty() {
        return Ok(None);
    }
    debug!(keys = ?extra.keys().collect::<Vec<_>>(), "removing keys the operator does not own");
    let removed = api
        .patch(
            &target.name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": extra })),
        )
        .await
        .map_err(Error::kube(format!(
            "removing stale keys from ConfigMap {}/{}",
            target.namespace, target.name
        )))?;
    Ok(Some(removed))
}

#[cfg(test)]
mod tests;
