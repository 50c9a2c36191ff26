//! The cache of a publisher's own objects, one way for all: a watch whose objects are stripped to what the
//! publisher compares (with their `resourceVersion`, the version its guarded writer checks) into a
//! `StrippedStore`, signalling a `ChangeSignal` on each visible change, as the sources do.

use std::fmt::Debug;

use kube::Resource;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use crate::runtime::backoff;
use crate::runtime::health::Health;
use crate::sources::stripped::{ObjectKey, StrippedStore, feed, stripped_store};
use crate::sources::{ChangeSignal, Changes};

/// A publisher's own objects: the cache, the follower of its changes, and the watch that feeds them (stopped
/// when this is dropped).
pub(crate) struct OwnObjects<T> {
    /// What the watch holds of each object.
    pub(crate) store: StrippedStore<T>,
    /// The watch task (none: fed by hand, in tests).
    task: Option<JoinHandle<()>>,
}

impl<T> Drop for OwnObjects<T> {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl<T> OwnObjects<T> {
    /// The cached object `name` (cluster-scoped, or in the watch's namespace).
    pub(crate) fn get(&self, namespace: &str, name: &str) -> Option<std::sync::Arc<T>> {
        self.store.get(&(namespace.to_owned(), name.to_owned()))
    }

    /// The keys of every cached object.
    pub(crate) fn keys(&self) -> Vec<ObjectKey> {
        self.store.keys()
    }
}

/// Starts watching `api` with `config` (named `watch` in health and metrics), keeping `strip` of each object;
/// returns the cache and the follower of its visible changes.
pub(crate) fn watch_own<K, T>(
    api: Api<K>,
    config: watcher::Config,
    watch: &'static str,
    health: Health,
    strip: impl Fn(&K) -> Option<T> + Send + Sync + 'static,
) -> (OwnObjects<T>, Changes)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    T: PartialEq + Send + Sync + 'static,
{
    let (store, mut writer) = stripped_store(strip);
    let signal = ChangeSignal::default();
    let changes = signal.subscribe();
    let events = watcher(api, config).backoff(backoff::WATCH.backoff());
    let task = tokio::spawn(async move {
        feed(watch, events, &mut writer, &health, &signal).await;
    });
    let task = Some(task);
    (OwnObjects { store, task }, changes)
}

/// A cache with no watch behind it, and the writer a test feeds it with.
#[cfg(test)]
pub(crate) fn fed_by_hand<K, T>(
    strip: impl Fn(&K) -> Option<T> + Send + Sync + 'static,
) -> (
    OwnObjects<T>,
    crate::sources::stripped::StrippedWriter<K, T>,
) {
    let (store, writer) = stripped_store(strip);
    (OwnObjects { store, task: None }, writer)
}
