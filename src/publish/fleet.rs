//! The `ClusterProperty` publisher: where the API server serves `clusterproperties.about.k8s.io` (KEP-2149,
//! kubernetes-sigs/about-api), keeps one ClusterProperty whose `spec.value` is the cluster's GPU summary as
//! compact JSON, for a cluster manager to copy into the hub's `ClusterProfile` (KEP-4322). Absent API: one
//! info line, and discovery asked again every 30 s, so installing the CRD later starts it without a restart.
//!
//! Run by `driver::drive` like the other publishers: it wakes on the sources' changes and on changes to the
//! property itself, and writes only when the summary's text differs from what the server holds.

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde_json::json;
use tracing::{debug, info};

use super::driver::own_objects::{OwnObjects, watch_own};
use super::driver::{Outcome, Publisher, drive};
use super::scan_service::ScanService;
use super::writer::{AGGREGATE_WRITE_GAP, Cached, GuardedWriter};
use crate::FIELD_MANAGER;
use crate::crd::{CLUSTER_PROPERTY_GROUP, CLUSTER_PROPERTY_KIND, CLUSTER_PROPERTY_VERSIONS};
use crate::error::{Error, Result};
use crate::inventory::fleet::summarize;
use crate::inventory::selector::LabelSelector;
use crate::publish::content::wire::summary_value;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::runtime::shutdown::Shutdown;
use crate::sources::optional_api::OptionalApi;

/// The ClusterProperty kind, for discovery.
const CLUSTER_PROPERTIES: OptionalApi = OptionalApi {
    group: CLUSTER_PROPERTY_GROUP,
    versions: CLUSTER_PROPERTY_VERSIONS,
    kind: CLUSTER_PROPERTY_KIND.0,
    plural: CLUSTER_PROPERTY_KIND.1,
    what: "ClusterProperties (about.k8s.io)",
    without: "the GPU summary is not published for a multi-cluster hub",
    purpose: "the GPU summary is kept in one of them",
    quiet_absence: false,
};

/// The property as the watch's cache keeps it: its version and value.
#[derive(Debug, PartialEq)]
pub(crate) struct CachedProperty {
    version: Option<String>,
    value: Option<String>,
}

fn cached(object: &DynamicObject) -> Option<CachedProperty> {
    Some(CachedProperty {
        version: object.metadata.resource_version.clone(),
        value: object.data["spec"]["value"].as_str().map(str::to_owned),
    })
}

/// The ClusterProperty publisher.
pub(crate) struct ClusterProperties {
    api: Api<DynamicObject>,
    resource: ApiResource,
    cache: OwnObjects<CachedProperty>,
    name: String,
    writer: GuardedWriter<String>,
}

/// Waits until ClusterProperties are served, then keeps the one named `name` until shutdown.
pub(crate) async fn keep_cluster_property(
    client: Client,
    name: String,
    scans: std::sync::Arc<ScanService>,
    health: Health,
    metrics: std::sync::Arc<Metrics>,
    shutdown: Shutdown,
) {
    let version = tokio::select! {
        version = CLUSTER_PROPERTIES.wait_served(&client, || {}) => version,
        _ = shutdown.clone().wait() => return,
    };
    let resource = CLUSTER_PROPERTIES.resource(version);
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let (cache, changes) = watch_own(api.clone(), config, "clusterproperty", health, cached);
    let publisher = ClusterProperties {
        api,
        resource,
        cache,
        name,
        writer: GuardedWriter::for_target(&metrics, "clusterproperty")
            .with_min_gap(AGGREGATE_WRITE_GAP),
    };
    drive(publisher, changes, scans, metrics, shutdown).await;
}

impl Publisher for ClusterProperties {
    fn name(&self) -> &'static str {
        "clusterproperty"
    }

    async fn cache_ready(&self) {
        self.cache.store.wait_until_ready().await;
    }

    fn keys(&mut self) -> Vec<String> {
        vec![self.name.clone()]
    }

    async fn reconcile(&mut self, _name: &str, scans: &ScanService) -> Result<Outcome> {
        if let Some(wait) = self.writer.wait_before_write(&self.name) {
            return Ok(Outcome::again_in(wait));
        }
        let desired = summary_value(&summarize(&scans.inventory(&LabelSelector::default())));
        let current = self.cache.get("", &self.name);
        let absent = current
            .is_none()
            .then(|| self.cache.absent_version("", &self.name))
            .flatten();
        let cached = Cached {
            version: current
                .as_ref()
                .map_or(absent.as_deref(), |c| c.version.as_deref()),
            content: current.as_ref().and_then(|c| c.value.as_ref()),
        };
        let (write, ()) = self.writer.plan(&self.name, cached, |held| {
            ((held != Some(&desired)).then(|| desired.clone()), ())
        });
        let Some(value) = write else {
            debug!(property = %self.name, "ClusterProperty unchanged; write skipped");
            return Ok(Outcome::done());
        };
        let stale = cached.version.map(str::to_owned);
        let written = self.apply(&value).await?;
        self.writer
            .record_write(&self.name, stale, written.resource_version(), value);
        info!(property = %self.name, "updated ClusterProperty (the GPU summary)");
        Ok(Outcome::done())
    }
}

impl ClusterProperties {
    async fn apply(&self, value: &str) -> Result<DynamicObject> {
        let body = json!({
            "apiVersion": self.resource.api_version,
            "kind": self.resource.kind,
            "metadata": {
                "name": self.name,
                "labels": { "app.kubernetes.io/managed-by": FIELD_MANAGER },
            },
            "spec": { "value": value },
        });
        self.api
            .patch(
                &self.name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(body),
            )
            .await
            .map_err(Error::kube(format!(
                "writing ClusterProperty {} (server-side apply; the operator's ClusterRole grants it on that \
                 name only: --cluster-property and the chart's clusterProperty.name must agree)",
                self.name
            )))
    }
}
