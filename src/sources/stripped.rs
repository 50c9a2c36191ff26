//! A cache of stripped objects fed by one watch: only what the core reads is kept, and a change is
//! signalled only when that view changed (a pod's container restart or a claim's status heartbeat is not
//! one). Pods, ResourceSlices, ResourceClaims and DeviceClasses are each kept in one of these.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use futures::{Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::watcher;
use tokio::sync::watch;

use super::ChangeSignal;
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
                    relist.insert(key(&object), Arc::new(stripped));
                }
                false
            }
            watcher::Event::InitDone => {
                let listed = self.relist.take().unwrap_or_default();
                let changed = *objects != listed || !*self.ready.borrow();
                *objects = listed;
                self.ready.send_replace(true);
                changed
            }
            watcher::Event::Apply(object) => match (self.strip)(&object) {
                Some(stripped) => {
                    let stripped = Arc::new(stripped);
                    objects
                        .insert(key(&object), stripped.clone())
                        .is_none_or(|old| old != stripped)
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

fn key<K: ResourceExt>(object: &K) -> ObjectKey {
    (object.namespace().unwrap_or_default(), object.name_any())
}
