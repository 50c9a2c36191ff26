//! A cache of stripped objects fed by one watch: only what the core reads is kept, and a change is
//! signalled only when that view changed (a pod's container restart or a claim's status heartbeat is not
//! one). Pods, ResourceSlices, ResourceClaims and DeviceClasses are each kept in one of these.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::watcher;
use tokio::sync::watch;

use super::changes::ChangeSignal;
use crate::runtime::health::Health;
use crate::runtime::memory;

/// (namespace, name); the namespace is empty for cluster-scoped objects.
pub(crate) type ObjectKey = (String, String);

/// Read side: the stripped objects. Cheap to clone (a handle).
#[derive(Debug)]
pub struct StrippedStore<T> {
    objects: Arc<RwLock<HashMap<ObjectKey, Arc<T>>>>,
    ready: watch::Receiver<bool>,
}

impl<T> Clone for StrippedStore<T> {
    fn clone(&self) -> Self {
        Self {
            objects: self.objects.clone(),
            ready: self.ready.clone(),
        }
    }
}

impl<T> StrippedStore<T> {
    /// Every cached object, in no particular order.
    pub fn state(&self) -> Vec<Arc<T>> {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        objects.values().cloned().collect()
    }

    /// The cached object `key`, if any.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Arc<T>> {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        objects.get(key).cloned()
    }

    /// The keys of every cached object.
    pub(crate) fn keys(&self) -> Vec<ObjectKey> {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        objects.keys().cloned().collect()
    }

    /// Resolves once the first full list is in (or the writer declared the source absent).
    pub(crate) async fn wait_until_ready(&self) {
        let mut ready = self.ready.clone();
        // An error means the feed task is gone: the process is shutting down.
        let _ = ready.wait_for(|r| *r).await;
    }
}

/// Write side: applies watch events through `strip` (which returns `None` for objects the core ignores).
pub struct StrippedWriter<K, T> {
    objects: Arc<RwLock<HashMap<ObjectKey, Arc<T>>>>,
    /// The new set being listed during a (re)list; swapped in at `InitDone`.
    relist: Option<HashMap<ObjectKey, Arc<T>>>,
    ready: watch::Sender<bool>,
    strip: Box<Strip<K, T>>,
}

/// Reduces an object to the core's view, or `None` for objects the core ignores.
type Strip<K, T> = dyn Fn(&K) -> Option<T> + Send + Sync;

/// An empty store and the writer that fills it.
pub fn stripped_store<K, T>(
    strip: impl Fn(&K) -> Option<T> + Send + Sync + 'static,
) -> (StrippedStore<T>, StrippedWriter<K, T>) {
    let objects = Arc::new(RwLock::new(HashMap::new()));
    let (ready_tx, ready_rx) = watch::channel(false);
    (
        StrippedStore {
            objects: objects.clone(),
            ready: ready_rx,
        },
        StrippedWriter {
            objects,
            relist: None,
            ready: ready_tx,
            strip: Box::new(strip),
        },
    )
}

impl<K: ResourceExt, T: PartialEq> StrippedWriter<K, T> {
    /// Applies one event; says whether the stripped view changed.
    pub fn apply(&mut self, event: watcher::Event<K>) -> bool {
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => {
                self.relist = Some(HashMap::new());
                false
            }
            watcher::Event::InitApply(object) => {
                if let (Some(relist), Some(stripped)) =
                    (self.relist.as_mut(), (self.strip)(&object))
                {
                    let key = key(&object);
                    // An object that did not change keeps its `Arc`: the relist holds no second copy, and
                    // what the scan derived from it stays (inventory::cluster_node::Derived).
                    let kept = kept_or_new(objects.get(&key), stripped);
                    relist.insert(key, kept);
                }
                false
            }
            watcher::Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                // Unchanged objects kept their `Arc`s, so comparing pointers finds every change.
                let changed = !same_arcs(&objects, &listed) || !*self.ready.borrow();
                *objects = listed;
                self.ready.send_replace(true);
                changed
            }
            watcher::Event::Apply(object) => match (self.strip)(&object) {
                Some(stripped) => {
                    let key = key(&object);
                    let kept = kept_or_new(objects.get(&key), stripped);
                    // A heartbeat leaves the stripped view as it was: the cached `Arc` stays.
                    match objects.insert(key, kept.clone()) {
                        Some(old) => !Arc::ptr_eq(&old, &kept),
                        None => true,
                    }
                }
                None => objects.remove(&key(&object)).is_some(),
            },
            watcher::Event::Delete(object) => objects.remove(&key(&object)).is_some(),
        }
    }

    /// The source is not served (an API the server lacks): the store stays empty and counts as synced.
    pub(crate) fn mark_absent(&mut self) {
        self.ready.send_replace(true);
    }
}

/// Feeds a watch's events into `writer` until the stream ends, signalling `changes` for every visible change
/// and telling `health` how the watch named `watch` fares.
pub(crate) async fn feed<K: ResourceExt, T: PartialEq>(
    watch: &str,
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    writer: &mut StrippedWriter<K, T>,
    health: &Health,
    changes: &ChangeSignal,
) {
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => {
                health.watch_event(watch, &event);
                let listed = matches!(event, watcher::Event::InitDone);
                let changed = writer.apply(event);
                if listed {
                    // The previous cache and the list's pages are free now (src/runtime/memory.rs).
                    memory::release_free_pages();
                }
                if changed {
                    changes.notify();
                }
            }
            Err(error) => health.watch_failed(watch, &error),
        }
    }
}

/// Whether both maps hold the same `Arc`s under the same keys.
fn same_arcs<T>(a: &HashMap<ObjectKey, Arc<T>>, b: &HashMap<ObjectKey, Arc<T>>) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(key, x)| b.get(key).is_some_and(|y| Arc::ptr_eq(x, y)))
}

/// The cached `Arc` when it holds what `stripped` holds, else a new one.
fn kept_or_new<T: PartialEq>(cached: Option<&Arc<T>>, stripped: T) -> Arc<T> {
    match cached {
        Some(cached) if **cached == stripped => cached.clone(),
        _ => Arc::new(stripped),
    }
}

fn key<K: ResourceExt>(object: &K) -> ObjectKey {
    (object.namespace().unwrap_or_default(), object.name_any())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use watcher::Event;

    use super::*;

    fn object(name: &str, value: &str, version: &str) -> ConfigMap {
        let mut object = ConfigMap::default();
        object.metadata.name = Some(name.into());
        object.metadata.resource_version = Some(version.into());
        object.data = Some(BTreeMap::from([("k".to_owned(), value.to_owned())]));
        object
    }

    #[test]
    fn an_unchanged_object_keeps_its_arc_through_updates_and_relists() {
        let (store, mut writer) = stripped_store(|c: &ConfigMap| c.data.clone());
        let key = (String::new(), "a".to_owned());
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "1", "1")));
        assert!(writer.apply(Event::InitDone), "the first list is a change");
        let first = store.get(&key).unwrap();
        assert!(
            !writer.apply(Event::Apply(object("a", "1", "2"))),
            "a new version with the same view is no change"
        );
        assert!(Arc::ptr_eq(&first, &store.get(&key).unwrap()));
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "1", "3")));
        assert!(
            !writer.apply(Event::InitDone),
            "a relist of the same view is no change"
        );
        assert!(Arc::ptr_eq(&first, &store.get(&key).unwrap()));
        assert!(writer.apply(Event::Apply(object("a", "2", "4"))));
        assert!(!Arc::ptr_eq(&first, &store.get(&key).unwrap()));
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "2", "5")));
        writer.apply(Event::InitApply(object("b", "1", "5")));
        assert!(
            writer.apply(Event::InitDone),
            "a relist that finds a new object is a change"
        );
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "3", "6")));
        writer.apply(Event::InitApply(object("b", "1", "6")));
        assert!(
            writer.apply(Event::InitDone),
            "a relist that finds a changed object is a change"
        );
        assert!(writer.apply(Event::Delete(object("b", "1", "7"))));
        assert_eq!(store.keys().len(), 1);
    }
}
