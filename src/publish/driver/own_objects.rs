//! The cache of a publisher's own objects, one way for all: a watch whose objects are stripped to what the
//! publisher compares (with their `resourceVersion`, the version its guarded writer checks) into a
//! `StrippedStore`, signalling a `ChangeSignal` on each visible change, as the sources do.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

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
    /// How many times the watch saw each object go (a deletion, or a relist without it).
    deletions: Arc<Mutex<HashMap<ObjectKey, u64>>>,
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

    /// The cache's version of an object it does not hold (read after [`Self::get`] found none): `None` while
    /// the watch never saw it go, then one version per time it went. A guarded writer that wrote the object
    /// when the cache had never held it must not take a deletion since for the cache still lagging.
    pub(crate) fn absent_version(&self, namespace: &str, name: &str) -> Option<String> {
        let deletions = self.deletions.lock().unwrap_or_else(|e| e.into_inner());
        let key = (namespace.to_owned(), name.to_owned());
        deletions.get(&key).map(|n| format!("deleted:{n}"))
    }
}

/// Counts each object's goings in `deletions`: the writer's hook, told of each before the cache lets it go
/// (so a reader that finds an object absent reads a count that already includes its going).
fn count_deletions(
    deletions: Arc<Mutex<HashMap<ObjectKey, u64>>>,
) -> impl FnMut(&ObjectKey) + Send + Sync + 'static {
    move |key| {
        let mut deletions = deletions.lock().unwrap_or_else(|e| e.into_inner());
        match deletions.get_mut(key) {
            Some(count) => *count += 1,
            None => {
                deletions.insert(key.clone(), 1);
            }
        }
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
    let deletions = Arc::default();
    writer.on_gone(count_deletions(Arc::clone(&deletions)));
    let events = watcher(api, config).backoff(backoff::WATCH.backoff());
    let task = tokio::spawn(async move {
        feed(watch, events, &mut writer, &health, &signal).await;
    });
    let task = Some(task);
    (
        OwnObjects {
            store,
            deletions,
            task,
        },
        changes,
    )
}

/// A cache with no watch behind it, and the writer a test feeds it with.
#[cfg(test)]
pub(crate) fn fed_by_hand<K, T>(
    strip: impl Fn(&K) -> Option<T> + Send + Sync + 'static,
) -> (
    OwnObjects<T>,
    crate::sources::stripped::StrippedWriter<K, T>,
) {
    let (store, mut writer) = stripped_store(strip);
    let deletions = Arc::default();
    writer.on_gone(count_deletions(Arc::clone(&deletions)));
    let cache = OwnObjects {
        store,
        deletions,
        task: None,
    };
    (cache, writer)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use watcher::Event;

    use super::*;

    fn object(name: &str, version: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.into());
        object.metadata.resource_version = Some(version.into());
        object
    }

    #[test]
    fn an_object_that_went_has_a_version_of_its_own_each_time() {
        let (cache, mut writer) =
            fed_by_hand(|c: &ConfigMap| Some(c.metadata.resource_version.clone()));
        let mut apply = |event: Event<ConfigMap>| writer.apply(event);
        assert_eq!(cache.absent_version("", "a"), None, "never seen");
        apply(Event::Init);
        apply(Event::InitApply(object("a", "1")));
        apply(Event::InitApply(object("b", "1")));
        apply(Event::InitDone);
        apply(Event::Delete(object("a", "2")));
        let first = cache.absent_version("", "a").expect("deleted");
        assert_eq!(cache.absent_version("", "b"), None, "still there");
        apply(Event::Apply(object("a", "3")));
        // A relist that no longer finds it: gone again, another version.
        apply(Event::Init);
        apply(Event::InitApply(object("b", "4")));
        apply(Event::InitDone);
        assert!(cache.get("", "a").is_none());
        let second = cache.absent_version("", "a").expect("gone again");
        assert_ne!(first, second);
        assert_eq!(cache.absent_version("", "b"), None);
    }
}
