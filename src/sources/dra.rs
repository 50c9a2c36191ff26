//! The DRA sources: ResourceSlices of the GPU drivers (`--dra-driver`), ResourceClaims and DeviceClasses,
//! each watched once and kept stripped ([`DraSlice`], [`DraClaim`], [`DraClass`]).
//!
//! `resource.k8s.io/v1` is served from Kubernetes 1.34 on. On an older server the three sources are
//! absent: one info line, empty (and synced) stores, and a quiet discovery check every
//! [`DISCOVERY_REFRESH`] so they start when the API appears (an upgrade), like a CRD being installed.

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tracing::info;

use super::changes::ChangeSignal;
use super::config::SourcesConfig;
pub use super::discovery::DISCOVERY_REFRESH;
use super::discovery::{Discovered, wait_until_served};
use super::dump::Dump;
use super::reader::{Cluster, Listed, OneShot, Reader, Start, Store};
use super::snapshot::Snapshot;
use super::stripped::{StrippedStore, StrippedWriter, feed, stripped_store};
use crate::error::{Error, Result, describe_kube_error};
use crate::inventory::dra::{DraClaim, DraClass, DraSlice};
use crate::runtime::backoff;
use crate::runtime::health::Health;

/// The API group version the DRA sources read.
pub const DRA_API: &str = "resource.k8s.io/v1";

/// Read handles on the three DRA caches.
#[derive(Clone, Debug)]
pub struct DraStores {
    /// ResourceSlices of the configured drivers.
    pub slices: StrippedStore<DraSlice>,
    /// Every ResourceClaim.
    pub claims: StrippedStore<DraClaim>,
    /// Every DeviceClass.
    pub classes: StrippedStore<DraClass>,
}

impl DraStores {
    /// Resolves once each has its first list, or the API is known to be absent.
    pub async fn wait_until_ready(&self) {
        self.slices.wait_until_ready().await;
        self.claims.wait_until_ready().await;
        self.classes.wait_until_ready().await;
    }
}

/// What the three DRA caches hold at one moment.
#[derive(Debug, Default)]
pub struct DraObjects {
    /// ResourceSlices of the configured drivers.
    pub slices: Vec<Arc<DraSlice>>,
    /// Every ResourceClaim.
    pub claims: Vec<Arc<DraClaim>>,
    /// Every DeviceClass.
    pub classes: Vec<Arc<DraClass>>,
}

impl Store for DraStores {
    type Objects = DraObjects;

    fn objects(&self) -> DraObjects {
        DraObjects {
            slices: self.slices.state(),
            claims: self.claims.state(),
            classes: self.classes.state(),
        }
    }

    fn until_listed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.wait_until_ready()
    }
}

/// ResourceSlices of the GPU drivers, ResourceClaims and DeviceClasses; none without a driver
/// (`--dra-driver=`).
pub(crate) struct DraReader {
    drivers: Arc<[String]>,
}

impl DraReader {
    pub(crate) fn new(config: &SourcesConfig) -> DraReader {
        DraReader {
            drivers: config.dra_drivers.clone().into(),
        }
    }
}

impl Reader for DraReader {
    type Objects = DraObjects;
    type Store = DraStores;

    fn name(&self) -> &'static str {
        "dra"
    }

    fn watch(&self, start: &Start<'_>) -> (DraStores, impl Future<Output = ()> + Send + 'static) {
        let (stores, feed) = watch_dra(
            start.client.clone(),
            self.drivers.to_vec(),
            start.health.clone(),
            start.signal.clone(),
        );
        let read = !self.drivers.is_empty();
        let feed = async move {
            if read {
                feed.await;
            }
        };
        (stores, feed)
    }

    async fn ready(&self, stores: &DraStores) {
        if !self.drivers.is_empty() {
            stores.wait_until_ready().await;
        }
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<DraObjects>> {
        match from {
            OneShot::Dump(dump) => Ok(Listed::all(dump_objects(dump, &self.drivers))),
            OneShot::Cluster(cluster) => {
                if self.drivers.is_empty() || dra_api_served(&cluster.client).await == Some(false) {
                    return Ok(Listed::all(DraObjects::default()));
                }
                list_objects(cluster, &self.drivers).await.map(Listed::all)
            }
        }
    }

    fn fill(&self, objects: DraObjects, snapshot: &mut Snapshot) {
        snapshot.slices = objects.slices;
        snapshot.claims = objects.claims;
        snapshot.classes = objects.classes;
    }
}

/// The DRA objects of a dump, stripped as the watches strip them.
fn dump_objects(dump: &Dump, drivers: &[String]) -> DraObjects {
    DraObjects {
        slices: dump
            .slices
            .iter()
            .filter_map(|s| DraSlice::from_slice(s, drivers))
            .map(Arc::new)
            .collect(),
        claims: dump
            .claims
            .iter()
            .map(|c| Arc::new(DraClaim::from_claim(c)))
            .collect(),
        classes: dump
            .classes
            .iter()
            .map(|c| Arc::new(DraClass::from_class(c)))
            .collect(),
    }
}

/// The DRA objects of the drivers, listed page by page (the server serves `resource.k8s.io/v1`).
async fn list_objects(cluster: &Cluster, drivers: &[String]) -> Result<DraObjects> {
    let client = &cluster.client;
    let slices = cluster
        .list(
            &Api::<ResourceSlice>::all(client.clone()),
            cluster.params(),
            |s| DraSlice::from_slice(&s, drivers).map(Arc::new),
        )
        .await
        .map_err(list_error(&cluster.url, "resourceslices"))?;
    let claims = cluster
        .list(
            &Api::<ResourceClaim>::all(client.clone()),
            cluster.params(),
            |c| Some(Arc::new(DraClaim::from_claim(&c))),
        )
        .await
        .map_err(list_error(&cluster.url, "resourceclaims"))?;
    let classes = cluster
        .list(
            &Api::<DeviceClass>::all(client.clone()),
            cluster.params(),
            |c| Some(Arc::new(DraClass::from_class(&c))),
        )
        .await
        .map_err(list_error(&cluster.url, "deviceclasses"))?;
    Ok(DraObjects {
        slices,
        claims,
        classes,
    })
}

/// The error of a one-shot list of the DRA kind `what` (its plural) that failed.
pub(crate) fn list_error(url: &str, what: &str) -> impl FnOnce(kube::Error) -> Error {
    Error::kube(format!(
        "listing {what} on {url} (scan needs list on resource.k8s.io {what}; `--dra-driver=` skips DRA)"
    ))
}

/// Whether the server serves the DRA resources.
enum Served {
    Yes,
    No,
    /// Discovery itself failed (the server is unreachable, or we may not ask): try again later.
    Unknown(String),
}

async fn served(client: &Client) -> Served {
    match client.list_api_group_resources(DRA_API).await {
        Ok(list) => {
            let has = |name: &str| list.resources.iter().any(|r| r.name == name);
            if has("resourceslices") && has("resourceclaims") && has("deviceclasses") {
                Served::Yes
            } else {
                Served::No
            }
        }
        Err(kube::Error::Api(status)) if status.code == 404 => Served::No,
        Err(error) => Served::Unknown(describe_kube_error(&error)),
    }
}

/// Whether the server serves the DRA API: `None` when discovery itself failed.
pub async fn dra_api_served(client: &Client) -> Option<bool> {
    match served(client).await {
        Served::Yes => Some(true),
        Served::No => Some(false),
        Served::Unknown(_) => None,
    }
}

/// Starts the DRA sources: returns their stores and the task that feeds them (run it until shutdown).
pub fn watch_dra(
    client: Client,
    drivers: Vec<String>,
    health: Health,
    changes: ChangeSignal,
) -> (DraStores, impl Future<Output = ()> + Send + 'static) {
    let slice_drivers = drivers.clone();
    let (slices, mut slice_writer) =
        stripped_store(move |s: &ResourceSlice| DraSlice::from_slice(s, &slice_drivers));
    let (claims, mut claim_writer) =
        stripped_store(|c: &ResourceClaim| Some(DraClaim::from_claim(c)));
    let (classes, mut class_writer) =
        stripped_store(|c: &DeviceClass| Some(DraClass::from_class(c)));
    let stores = DraStores {
        slices,
        claims,
        classes,
    };
    let task = async move {
        wait_for_api(
            &client,
            &mut slice_writer,
            &mut claim_writer,
            &mut class_writer,
        )
        .await;
        info!(
            api = DRA_API,
            drivers = %drivers.join(","),
            "DRA API served: watching ResourceSlices of the GPU drivers, ResourceClaims and DeviceClasses"
        );
        let mut slice_config = watcher::Config::default().page_size(500);
        // One driver (the usual case): the server filters; several: the strip filters.
        if let [driver] = drivers.as_slice() {
            slice_config = slice_config.fields(&format!("spec.driver={driver}"));
        }
        let slice_events = watcher(Api::<ResourceSlice>::all(client.clone()), slice_config)
            .backoff(backoff::WATCH.backoff());
        let claim_events = watcher(
            Api::<ResourceClaim>::all(client.clone()),
            watcher::Config::default().page_size(500),
        )
        .backoff(backoff::WATCH.backoff());
        let class_events = watcher(Api::<DeviceClass>::all(client), watcher::Config::default())
            .backoff(backoff::WATCH.backoff());
        futures::join!(
            feed(
                "resourceslices",
                slice_events,
                &mut slice_writer,
                &health,
                &changes
            ),
            feed(
                "resourceclaims",
                claim_events,
                &mut claim_writer,
                &health,
                &changes
            ),
            feed(
                "deviceclasses",
                class_events,
                &mut class_writer,
                &health,
                &changes
            ),
        );
    };
    (stores, task)
}

/// Returns once the server serves the DRA API. Until then the stores are empty and synced, and the
/// absence is said once.
async fn wait_for_api(
    client: &Client,
    slices: &mut StrippedWriter<ResourceSlice, DraSlice>,
    claims: &mut StrippedWriter<ResourceClaim, DraClaim>,
    classes: &mut StrippedWriter<DeviceClass, DraClass>,
) {
    let mut said = false;
    let discover = || async {
        match served(client).await {
            Served::Yes => Discovered::Served(()),
            Served::No => Discovered::Absent(
                "the API server does not serve resource.k8s.io/v1 (it is served from Kubernetes 1.34)"
                    .to_owned(),
            ),
            Served::Unknown(error) => Discovered::Failed(error),
        }
    };
    wait_until_served(DRA_API, discover, |why| {
        slices.mark_absent();
        claims.mark_absent();
        classes.mark_absent();
        if !said {
            info!(
                api = DRA_API,
                "DRA unavailable: {why}; ResourceSlices and ResourceClaims are not read (GPUs published only \
                 through DRA are not seen), and the API is looked for again every {}s",
                DISCOVERY_REFRESH.as_secs()
            );
            said = true;
        }
    })
    .await
}
