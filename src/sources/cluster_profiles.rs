//! A multi-cluster hub's `ClusterProfile`s (KEP-4322), which a cluster manager fills with each member's
//! ClusterProperties: the reader behind `fleet` (the hub's view). The operator does not register it; the
//! command reads through it alone, and finds the profiles in the snapshot's [`ClusterProfileList`] slot.

use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};

use super::reader::{Listed, OneShot, Reader, Start};
use super::snapshot::Snapshot;
use super::stripped::{StrippedStore, feed, stripped_store};
use crate::error::{Error, Result, describe_kube_error};
use crate::runtime::backoff;

/// The ClusterProfiles of one namespace, or of all.
pub struct ClusterProfiles {
    /// Their API group and version (`multicluster.x-k8s.io`, `v1alpha1`).
    api: (&'static str, &'static str),
    namespace: Option<String>,
}

/// The slot the profiles go in, sorted by nothing (the command sorts what it shows).
#[derive(Debug, Default)]
pub struct ClusterProfileList(pub Vec<Arc<DynamicObject>>);

impl ClusterProfiles {
    /// The profiles of `api` (group, version) in `namespace` (`None`: every namespace).
    pub fn new(api: (&'static str, &'static str), namespace: Option<String>) -> ClusterProfiles {
        ClusterProfiles { api, namespace }
    }

    fn api(&self, client: kube::Client) -> Api<DynamicObject> {
        let (group, version) = self.api;
        let resource = ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: format!("{group}/{version}"),
            kind: "ClusterProfile".into(),
            plural: "clusterprofiles".into(),
        };
        match &self.namespace {
            Some(namespace) => Api::namespaced_with(client, namespace, &resource),
            None => Api::all_with(client, &resource),
        }
    }
}

impl Reader for ClusterProfiles {
    type Objects = Vec<Arc<DynamicObject>>;
    type Store = StrippedStore<DynamicObject>;

    fn name(&self) -> &'static str {
        "clusterprofiles"
    }

    fn watch(&self, start: &Start<'_>) -> (Self::Store, impl Future<Output = ()> + Send + 'static) {
        let (store, mut writer) = stripped_store(|profile: &DynamicObject| Some(profile.clone()));
        let api = self.api(start.client.clone());
        let (health, signal) = (start.health.clone(), start.signal.clone());
        let task = async move {
            let events = watcher(api, watcher::Config::default()).backoff(backoff::WATCH.backoff());
            feed("clusterprofiles", events, &mut writer, &health, &signal).await;
        };
        (store, task)
    }

    /// None from a dump (dumps hold a member cluster's objects, not a hub's); from a hub, one list. A server
    /// that serves no ClusterProfiles is no hub: an error that says so.
    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let OneShot::Cluster(cluster) = from else {
            return Ok(Listed::all(Vec::new()));
        };
        let (group, version) = self.api;
        let api = self.api(cluster.client.clone());
        let list = api.list(&ListParams::default()).await.map_err(|e| match &e {
            kube::Error::Api(status) if status.code == 404 => Error::InvalidFlag(format!(
                "{} serves no ClusterProfiles ({group}/{version}): is it a multi-cluster hub? A cluster \
                 manager (Open Cluster Management, or any KEP-4322 one) installs them (docs/fleet.md)",
                cluster.url
            )),
            _ => Error::InvalidFlag(format!(
                "cannot list ClusterProfiles on {}: {} (grant list on clusterprofiles.{group})",
                cluster.url,
                describe_kube_error(&e)
            )),
        })?;
        Ok(Listed::all(list.items.into_iter().map(Arc::new).collect()))
    }

    fn fill(&self, profiles: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.slots.put(ClusterProfileList(profiles));
    }
}
