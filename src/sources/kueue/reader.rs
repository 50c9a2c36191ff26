//! Kueue's quota objects as one reader: the five kinds whose quotas are checked against the GPUs.

use std::future::Future;
use std::time::Duration;

use super::{KueueObjects, KueueStores};
use crate::error::Result;
use crate::sources::reader::{Listed, OneShot, Reader, Start, Store};
use crate::sources::snapshot::Snapshot;

/// How long the first inventory waits for Kueue's quota objects' first lists.
const KUEUE_FIRST_LIST_WAIT: Duration = Duration::from_secs(10);

/// ResourceFlavors, ClusterQueues, Cohorts, LocalQueues and pending Workloads, where Kueue is installed.
pub(crate) struct KueueReader;

impl Store for KueueStores {
    type Objects = KueueObjects;

    fn objects(&self) -> KueueObjects {
        self.state()
    }

    fn until_listed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.wait_until_ready()
    }
}

impl Reader for KueueReader {
    type Objects = KueueObjects;
    type Store = KueueStores;

    fn name(&self) -> &'static str {
        "kueue"
    }

    fn watch(&self, start: &Start<'_>) -> (KueueStores, impl Future<Output = ()> + Send + 'static) {
        KueueStores::watch(
            start.client.clone(),
            start.health.clone(),
            start.signal.clone(),
        )
    }

    /// Waited for a while: a first status without the quotas a restarted operator published would be one
    /// more write, and "resolved" events for issues that still hold. Not for ever: a forbidden or slow Kueue
    /// watch must not hold back the inventory.
    async fn ready(&self, stores: &KueueStores) {
        if tokio::time::timeout(KUEUE_FIRST_LIST_WAIT, stores.wait_until_ready())
            .await
            .is_err()
        {
            tracing::warn!(
                "Kueue's quota objects are not listed after {}s (check the operator's RBAC for \
                 kueue.x-k8s.io); the inventory is published without quotas until they are",
                KUEUE_FIRST_LIST_WAIT.as_secs()
            );
        }
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<KueueObjects>> {
        Ok(match from {
            OneShot::Dump(dump) => Listed::all(KueueObjects::of_dump(&dump.kueue)),
            OneShot::Cluster(cluster) => {
                let (objects, notes) = KueueObjects::list(&cluster.client).await;
                Listed { objects, notes }
            }
        })
    }

    fn fill(&self, objects: KueueObjects, snapshot: &mut Snapshot) {
        snapshot.kueue = objects;
    }
}
