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
    objects: Arc<RwLock<HashMap<ObjectKey, Slot<T>>>>,
    ready: watch::Receiver<bool>,
}

/// One cached object and the list that last saw it.
#[derive(Debug)]
struct Slot<T> {
    object: Arc<T>,
    /// The number of the (re)list that last saw the object: a relist marks what it finds in place and sweeps
    /// the rest at `InitDone`, so that it never holds a second map of every key beside the cache (at 65,000
    /// nodes and 20,000 GPU pods that map was 12 MiB, `make memory-model`, when the relist was the peak).
    list: u32,
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
        objects.values().map(|slot| slot.object.clone()).collect()
    }

    /// The cached object `key`, if any.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Arc<T>> {
        let objects = self.objects.read().unwrap_or_else(|e| e.into_inner());
        objects.get(key).map(|slot| slot.object.clone())
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
///
/// A relist updates the cache in place as its objects arrive, as watch events do, and removes what it did not
/// find at `InitDone`: a reader in between sees each object as it was either before or after, never a cache
/// missing what the list has not reached yet.
pub struct StrippedWriter<K, T> {
    objects: Arc<RwLock<HashMap<ObjectKey, Slot<T>>>>,
    /// The number of the current (re)list.
    list: u32,
    /// Whether the (re)list in progress changed the view so far.
    relist_changed: bool,
    ready: watch::Sender<bool>,
    strip: Box<Strip<K, T>>,
    /// Told the key of each object that goes (a deletion, or a relist that did not find it) before it leaves
    /// the cache.
    on_gone: Option<Box<OnGone>>,
}

/// See [`StrippedWriter::on_gone`].
type OnGone = dyn FnMut(&ObjectKey) + Send + Sync;

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
            list: 0,
            relist_changed: false,
            ready: ready_tx,
            strip: Box::new(strip),
            on_gone: None,
        },
    )
}

impl<K, T> StrippedWriter<K, T> {
    /// Tells `hook` the key of each object that goes, a deletion or one a relist did not find, while the cache
    /// still holds it: a reader that then finds it absent finds whatever `hook` recorded. `hook` runs under the
    /// cache's write lock, so it must not read the cache.
    pub(crate) fn on_gone(&mut self, hook: impl FnMut(&ObjectKey) + Send + Sync + 'static) {
        self.on_gone = Some(Box::new(hook));
    }
}

impl<K: ResourceExt, T: PartialEq> StrippedWriter<K, T> {
    /// Applies one event; says whether the stripped view changed (a relist's changes are told at `InitDone`).
    pub fn apply(&mut self, event: watcher::Event<K>) -> bool {
        let mut objects = self.objects.write().unwrap_or_else(|e| e.into_inner());
        match event {
            watcher::Event::Init => {
                // A list that failed half-way starts again with a new number: what it marked counts for nothing.
                self.list = self.list.wrapping_add(1);
                self.relist_changed = false;
                false
            }
            watcher::Event::InitApply(object) => {
                self.relist_changed |= self.put_or_drop(&mut objects, &object);
                false
            }
            watcher::Event::InitDone => {
                let before = objects.len();
                let list = self.list;
                let on_gone = &mut self.on_gone;
                objects.retain(|key, slot| {
                    let found = slot.list == list;
                    if let (false, Some(on_gone)) = (found, on_gone.as_mut()) {
                        on_gone(key);
                    }
                    found
                });
                let changed = std::mem::take(&mut self.relist_changed)
                    || objects.len() != before
                    || !*self.ready.borrow();
                // The table shrinks with the cache (a relist after many deletions), as a new map did.
                objects.shrink_to_fit();
                self.ready.send_replace(true);
                changed
            }
            watcher::Event::Apply(object) => self.put_or_drop(&mut objects, &object),
            watcher::Event::Delete(object) => {
                let key = key(&object);
                if let Some(on_gone) = self.on_gone.as_mut() {
                    on_gone(&key);
                }
                objects.remove(&key).is_some()
            }
        }
    }

    /// Caches `object` stripped, as seen by the current list, or drops it when the core ignores it; says
    /// whether the view changed.
    fn put_or_drop(&self, objects: &mut HashMap<ObjectKey, Slot<T>>, object: &K) -> bool {
        match (self.strip)(object) {
            Some(stripped) => put(objects, key(object), stripped, self.list),
            None => objects.remove(&key(object)).is_some(),
        }
    }

    /// The source is not served (an API the server lacks): the store stays empty and counts as synced.
    pub(crate) fn mark_absent(&mut self) {
        self.ready.send_replace(true);
    }
}

/// Caches `stripped` under `key` as seen by list `list`; says whether the view changed. An object whose view
/// did not change keeps its `Arc` (a heartbeat, a relist), and with it what the scan derived from it
/// (`inventory::memory`).
fn put<T: PartialEq>(
    objects: &mut HashMap<ObjectKey, Slot<T>>,
    key: ObjectKey,
    stripped: T,
    list: u32,
) -> bool {
    match objects.get_mut(&key) {
        Some(slot) => {
            slot.list = list;
            if *slot.object == stripped {
                false
            } else {
                slot.object = Arc::new(stripped);
                true
            }
        }
        None => {
            let object = Arc::new(stripped);
            objects.insert(key, Slot { object, list });
            true
        }
    }
}

/// Feeds a watch's events into `writer` until the stream ends, signalling `changes` for every visible change
/// and telling `health` how the watch named `watch` fares.
pub async fn feed<K: ResourceExt, T: PartialEq>(
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
                    // The list's pages and what the relist swept are free now (src/runtime/memory.rs).
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

    #[test]
    fn a_relist_updates_in_place_and_sweeps_what_it_did_not_find_only_at_its_end() {
        let (store, mut writer) = stripped_store(|c: &ConfigMap| c.data.clone());
        let key = |name: &str| (String::new(), name.to_owned());
        writer.apply(Event::Init);
        for name in ["a", "b", "c"] {
            writer.apply(Event::InitApply(object(name, "1", "1")));
        }
        writer.apply(Event::InitDone);
        let b = store.get(&key("b")).unwrap();

        // A relist that finds `a` changed, `b` as it was, and no `c`: mid-way a reader sees the new `a` and still
        // the old `c` (the list has not said it is gone yet), nothing missing.
        writer.apply(Event::Init);
        assert!(!writer.apply(Event::InitApply(object("a", "2", "2"))));
        assert_eq!(store.keys().len(), 3, "nothing is missing mid-relist");
        assert_eq!(
            store.get(&key("a")).unwrap().as_ref(),
            &BTreeMap::from([("k".to_owned(), "2".to_owned())])
        );
        writer.apply(Event::InitApply(object("b", "1", "2")));
        assert!(writer.apply(Event::InitDone), "a relist that changed `a`");
        assert!(store.get(&key("c")).is_none(), "swept at the end");
        assert!(Arc::ptr_eq(&b, &store.get(&key("b")).unwrap()));

        // A list that fails half-way and starts again: what the first attempt marked counts for nothing.
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "2", "3")));
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("b", "1", "3")));
        assert!(
            writer.apply(Event::InitDone),
            "the second attempt did not find `a`: gone, a change"
        );
        let mut keys = store.keys();
        keys.sort();
        assert_eq!(keys, vec![key("b")]);

        // An object the core now ignores (strip says `None`) leaves at once.
        let (store, mut writer) = stripped_store(|c: &ConfigMap| c.data.clone());
        writer.apply(Event::Init);
        writer.apply(Event::InitApply(object("a", "1", "1")));
        writer.apply(Event::InitDone);
        writer.apply(Event::Init);
        let mut ignored = object("a", "1", "2");
        ignored.data = None;
        writer.apply(Event::InitApply(ignored));
        assert!(store.get(&key("a")).is_none());
        assert!(writer.apply(Event::InitDone), "its going is a change");
    }
}
