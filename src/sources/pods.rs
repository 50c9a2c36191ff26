//! The one pod watch of the process, kept as [`GpuPod`]s: only pods that ask for an `nvidia.com/*` resource,
//! stripped on arrival to what the accounting reads.
//!
//! A cluster has far more pods than GPU pods (DESIGN §6: 50,000 pods, 10,000 asking for GPUs), and most pod
//! updates (container restarts, probes, IPs) change nothing the accounting sees. So the cache holds only
//! the accounting's view, and a change is signalled only when that view changed: CPU-only pods coming and
//! going wake nobody. Finished pods are filtered by the server (field selector), so a pod that succeeds or
//! fails arrives as a deletion.

use std::future::Future;
use std::sync::Arc;

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use super::changes::ChangeSignal;
use super::reader::{Listed, OneShot, Reader, Start};
use super::slim::{SlimPod, map_event};
use super::snapshot::Snapshot;
use super::stripped::{StrippedStore, feed, stripped_store};
use crate::error::{Error, Result};
use crate::inventory::allocation::GpuPod;
use crate::runtime::backoff;
use crate::runtime::health::Health;

/// Only pods that can hold or wait for something: finished ones hold nothing.
pub const UNFINISHED_PODS: &str = "status.phase!=Succeeded,status.phase!=Failed";

/// The GPU pods seen by the watch. Cheap to clone (a handle).
pub type PodStore = StrippedStore<GpuPod>;

/// Starts the pod watch: returns the store and the task that feeds it (run it until shutdown). The task
/// signals `changes` whenever the GPU pods changed in a way the accounting can see.
pub fn watch_pods(
    client: Client,
    health: Health,
    changes: ChangeSignal,
) -> (PodStore, impl Future<Output = ()> + Send + 'static) {
    let (store, mut writer) = stripped_store(GpuPod::from_pod);
    // Pods are decoded slim (src/sources/slim.rs) a page at a time before they are reduced to GpuPods: 250
    // keeps the page's JSON (a pod with its managed fields is ~5-10 KiB) to a few MiB.
    let config = watcher::Config::default()
        .fields(UNFINISHED_PODS)
        .page_size(250);
    let api: Api<SlimPod> = Api::all(client);
    let feed = async move {
        let events = watcher(api, config)
            .backoff(backoff::WATCH.backoff())
            .map_ok(|event| map_event(event, Pod::from));
        feed("pods", events, &mut writer, &health, &changes).await;
    };
    (store, feed)
}

/// The GPU pods of every namespace.
pub(crate) struct PodReader;

impl Reader for PodReader {
    type Objects = Vec<Arc<GpuPod>>;
    type Store = PodStore;

    fn name(&self) -> &'static str {
        "pods"
    }

    fn watch(&self, start: &Start<'_>) -> (PodStore, impl Future<Output = ()> + Send + 'static) {
        watch_pods(
            start.client.clone(),
            start.health.clone(),
            start.signal.clone(),
        )
    }

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let cluster = match from {
            OneShot::Dump(dump) => {
                let pods = dump.pods.iter().filter_map(GpuPod::from_pod).map(Arc::new);
                return Ok(Listed::all(pods.collect()));
            }
            OneShot::Cluster(cluster) => cluster,
        };
        let api: Api<SlimPod> = Api::all(cluster.client.clone());
        let params = cluster.params().fields(UNFINISHED_PODS);
        let pods = cluster
            .list(&api, params, |slim| {
                GpuPod::from_pod(&Pod::from(slim)).map(Arc::new)
            })
            .await
            .map_err(Error::kube(format!(
                "listing pods on {} (scan needs list on pods in every namespace)",
                cluster.url
            )))?;
        Ok(Listed::all(pods))
    }

    fn fill(&self, pods: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.pods = pods;
    }
}

#[cfg(test)]
mod tests {
    use super::super::stripped::StrippedWriter;
    use super::*;

    fn pod(name: &str, gpus: Option<u32>, node: Option<&str>, restarts: i32) -> Pod {
        let resources =
            gpus.map(|n| serde_json::json!({"requests": {"nvidia.com/gpu": n.to_string()}}));
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": restarts.to_string()},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": resources}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "i", "imageID": "",
                "ready": true, "restartCount": restarts}]},
        }))
        .unwrap()
    }

    fn writer() -> (StrippedWriter<Pod, GpuPod>, PodStore) {
        let (store, writer) = stripped_store(GpuPod::from_pod);
        (writer, store)
    }

    #[test]
    fn only_changes_the_accounting_sees_are_signalled() {
        let (mut w, store) = writer();
        assert!(!w.apply(watcher::Event::Init));
        assert!(!w.apply(watcher::Event::InitApply(pod("cpu", None, Some("n"), 0))));
        assert!(!w.apply(watcher::Event::InitApply(pod("gpu", Some(1), Some("n"), 0))));
        assert!(
            w.apply(watcher::Event::InitDone),
            "the first list is a change"
        );
        assert_eq!(store.state().len(), 1, "CPU-only pods are not kept");

        assert!(
            !w.apply(watcher::Event::Apply(pod("cpu", None, Some("n"), 1))),
            "CPU pod churn"
        );
        assert!(!w.apply(watcher::Event::Delete(pod("cpu", None, Some("n"), 1))));
        assert!(
            !w.apply(watcher::Event::Apply(pod("gpu", Some(1), Some("n"), 3))),
            "a restart"
        );
        assert!(w.apply(watcher::Event::Apply(pod("new", Some(2), None, 0))));
        assert!(w.apply(watcher::Event::Delete(pod("gpu", Some(1), Some("n"), 3))));
        assert_eq!(store.state().len(), 1);

        // A relist that finds the same set is no change; one that misses a deletion is.
        assert!(!w.apply(watcher::Event::Init));
        assert!(!w.apply(watcher::Event::InitApply(pod("new", Some(2), None, 0))));
        assert!(!w.apply(watcher::Event::InitDone));
        assert!(!w.apply(watcher::Event::Init));
        assert!(w.apply(watcher::Event::InitDone));
        assert!(store.state().is_empty());
    }
}
