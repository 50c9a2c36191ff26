//! Kueue's objects, when Kueue is installed: Topologies (their levels are topology levels) and the
//! ResourceFlavors, ClusterQueues, Cohorts, LocalQueues and pending Workloads whose quotas are checked against
//! the GPUs (`inventory::quotas`, docs/quotas.md). Each kind is an [`OptionalApi`] in the newest version the
//! server serves (`v1beta2`, then `v1beta1`): absent with one info line while Kueue's CRDs are not served,
//! watched once they are, without a restart. RBAC: list and watch only.

pub(crate) mod reader;
mod strip;
pub mod topology;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use kube::Client;
use kube::api::DynamicObject;

pub use strip::{
    strip_cluster_queue, strip_cohort, strip_flavor, strip_local_queue, strip_workload,
};

use super::changes::ChangeSignal;
use super::optional_api::{OptionalApi, StripDynamic};
use super::stripped::StrippedStore;
use crate::inventory::quotas::KueueInput;
use crate::inventory::quotas::kueue::{Flavor, LocalQueue, PendingWorkload, QuotaHolder};
use crate::runtime::health::Health;

/// Kueue's API group.
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";

/// The versions of Kueue's API whose quota objects are read, newest first (v1beta2 from Kueue 0.15).
pub const QUOTA_VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];

const WITHOUT: &str = "Kueue's quotas are not checked against the GPUs";
const PURPOSE: &str = "their quotas are checked against the GPUs";

const fn kind(kind: &'static str, plural: &'static str, what: &'static str) -> OptionalApi {
    OptionalApi {
        group: KUEUE_GROUP,
        versions: &QUOTA_VERSIONS,
        kind,
        plural,
        what,
        without: WITHOUT,
        purpose: PURPOSE,
        quiet_absence: true,
    }
}

/// Kueue's ResourceFlavors.
pub const FLAVORS: OptionalApi = kind("ResourceFlavor", "resourceflavors", "Kueue ResourceFlavors");
/// Kueue's ClusterQueues.
pub const CLUSTER_QUEUES: OptionalApi =
    kind("ClusterQueue", "clusterqueues", "Kueue ClusterQueues");
/// Kueue's Cohorts.
pub const COHORTS: OptionalApi = kind("Cohort", "cohorts", "Kueue Cohorts");
/// Kueue's LocalQueues.
pub const LOCAL_QUEUES: OptionalApi = kind("LocalQueue", "localqueues", "Kueue LocalQueues");
/// Kueue's Workloads (only pending ones are kept).
pub const WORKLOADS: OptionalApi = kind("Workload", "workloads", "Kueue Workloads");

/// What the quota rules read of Kueue, as one moment's copies.
#[derive(Clone, Debug, Default)]
pub struct KueueObjects {
    /// ResourceFlavors.
    pub flavors: Vec<Arc<Flavor>>,
    /// ClusterQueues.
    pub cluster_queues: Vec<Arc<QuotaHolder>>,
    /// Cohorts.
    pub cohorts: Vec<Arc<QuotaHolder>>,
    /// LocalQueues.
    pub local_queues: Vec<Arc<LocalQueue>>,
    /// Pending Workloads.
    pub workloads: Vec<Arc<PendingWorkload>>,
}

impl KueueObjects {
    /// The rules' input; `None` where there is nothing to check (no flavor and no ClusterQueue: Kueue is not
    /// installed, or not set up), so the status shows no quotas.
    pub fn input(&self) -> Option<KueueInput<'_>> {
        (!self.flavors.is_empty() || !self.cluster_queues.is_empty()).then_some(KueueInput {
            flavors: &self.flavors,
            cluster_queues: &self.cluster_queues,
            cohorts: &self.cohorts,
            local_queues: &self.local_queues,
            workloads: &self.workloads,
        })
    }

    /// The quota objects among a dump's Kueue objects (each stripped as the watches strip them).
    pub fn of_dump(objects: &[DynamicObject]) -> KueueObjects {
        fn of<T>(objects: &[DynamicObject], kind: &str, strip: StripDynamic<T>) -> Vec<Arc<T>> {
            objects
                .iter()
                .filter(|o| o.types.as_ref().is_some_and(|t| t.kind == kind))
                .filter_map(strip)
                .map(Arc::new)
                .collect()
        }
        KueueObjects {
            flavors: of(objects, FLAVORS.kind, strip_flavor),
            cluster_queues: of(objects, CLUSTER_QUEUES.kind, strip_cluster_queue),
            cohorts: of(objects, COHORTS.kind, strip_cohort),
            local_queues: of(objects, LOCAL_QUEUES.kind, strip_local_queue),
            workloads: of(objects, WORKLOADS.kind, strip_workload),
        }
    }

    /// Every quota object of a cluster, for a one-shot scan, and what could not be read (for stderr).
    pub async fn list(client: &Client) -> (KueueObjects, Vec<String>) {
        let (flavors, a) = list(client, FLAVORS, strip_flavor).await;
        let (cluster_queues, b) = list(client, CLUSTER_QUEUES, strip_cluster_queue).await;
        let (cohorts, c) = list(client, COHORTS, strip_cohort).await;
        let (local_queues, d) = list(client, LOCAL_QUEUES, strip_local_queue).await;
        let (workloads, e) = list(client, WORKLOADS, strip_workload).await;
        let notes = [a, b, c, d, e].into_iter().flatten().collect();
        let objects = KueueObjects {
            flavors,
            cluster_queues,
            cohorts,
            local_queues,
            workloads,
        };
        (objects, notes)
    }
}

async fn list<T>(
    client: &Client,
    api: OptionalApi,
    strip: StripDynamic<T>,
) -> (Vec<Arc<T>>, Option<String>) {
    let (objects, note) = api.list(client, strip).await;
    (objects.into_iter().map(Arc::new).collect(), note)
}

/// The watches of Kueue's quota objects.
#[derive(Clone)]
pub struct KueueStores {
    flavors: StrippedStore<Flavor>,
    cluster_queues: StrippedStore<QuotaHolder>,
    cohorts: StrippedStore<QuotaHolder>,
    local_queues: StrippedStore<LocalQueue>,
    workloads: StrippedStore<PendingWorkload>,
}

impl KueueStores {
    /// Starts the watches: their stores, and the task that feeds them (run it until shutdown).
    pub(crate) fn watch(
        client: Client,
        health: Health,
        changes: ChangeSignal,
    ) -> (KueueStores, impl Future<Output = ()> + Send + 'static) {
        let (flavors, flavors_feed) = FLAVORS.watch(
            client.clone(),
            health.clone(),
            changes.clone(),
            strip_flavor,
        );
        let (cluster_queues, queues_feed) = CLUSTER_QUEUES.watch(
            client.clone(),
            health.clone(),
            changes.clone(),
            strip_cluster_queue,
        );
        let (cohorts, cohorts_feed) = COHORTS.watch(
            client.clone(),
            health.clone(),
            changes.clone(),
            strip_cohort,
        );
        let (local_queues, local_feed) = LOCAL_QUEUES.watch(
            client.clone(),
            health.clone(),
            changes.clone(),
            strip_local_queue,
        );
        let (workloads, workloads_feed) = WORKLOADS.watch(client, health, changes, strip_workload);
        let feed = async move {
            futures::join!(
                flavors_feed,
                queues_feed,
                cohorts_feed,
                local_feed,
                workloads_feed
            );
        };
        let stores = KueueStores {
            flavors,
            cluster_queues,
            cohorts,
            local_queues,
            workloads,
        };
        (stores, feed)
    }

    /// Resolves once every watch has its first list (or knows its API absent).
    pub(crate) async fn wait_until_ready(&self) {
        self.flavors.wait_until_ready().await;
        self.cluster_queues.wait_until_ready().await;
        self.cohorts.wait_until_ready().await;
        self.local_queues.wait_until_ready().await;
        self.workloads.wait_until_ready().await;
    }

    /// What the stores hold now.
    pub fn state(&self) -> KueueObjects {
        KueueObjects {
            flavors: self.flavors.state(),
            cluster_queues: self.cluster_queues.state(),
            cohorts: self.cohorts.state(),
            local_queues: self.local_queues.state(),
            workloads: self.workloads.state(),
        }
    }
}
