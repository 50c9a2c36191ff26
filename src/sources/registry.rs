//! The registry: which readers the operator and the commands read through ([`Readers::of`], one line per
//! reader), each held as one object-safe entry, so that [`super::Sources`] starts, waits for, snapshots and
//! lists every one by iterating.

use std::any::Any;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, join_all};
use kube::Client;

use super::changes::ChangeSignal;
use super::config::SourcesConfig;
use super::dra::DraReader;
use super::kueue::reader::KueueReader;
use super::kueue::topology::TopologyReader;
use super::nodes::NodeReader;
use super::pods::PodReader;
use super::reader::{Listed, OneShot, Reader, Start, Store};
use super::snapshot::Snapshot;
use super::taint_rules::reader::TaintRuleReader;
use super::utilization::reader::UtilizationReader;
use crate::error::Result;
use crate::runtime::health::Health;

/// The readers to start or list, in order, and the settings the snapshot carries beside their objects.
#[derive(Clone)]
pub struct Readers {
    config: SourcesConfig,
    readers: Vec<Arc<dyn Registered>>,
}

impl Readers {
    /// The operator's readers for `config`. The order is the order they are waited for at start-up and
    /// listed in one-shot reads: the nodes first (a cluster that cannot be reached is one error), the kinds
    /// only enriching the inventory last (their notes are said once everything needed was read).
    pub fn of(config: &SourcesConfig) -> Readers {
        let mut readers = Readers::none(config);
        readers.register(NodeReader::new(config));
        readers.register(PodReader);
        readers.register(DraReader::new(config));
        readers.register(TaintRuleReader::new(config));
        readers.register(TopologyReader::new(config));
        if let Some((prometheus, settings)) = &config.utilization {
            readers.register(UtilizationReader::new(prometheus, settings));
        }
        readers.register(KueueReader);
        readers
    }

    /// No reader yet: a command that reads something else than the inventory (the hub's ClusterProfiles).
    pub fn none(config: &SourcesConfig) -> Readers {
        Readers {
            config: config.clone(),
            readers: Vec::new(),
        }
    }

    /// Adds `reader` after those registered before it.
    pub fn register(&mut self, reader: impl Reader) -> &mut Readers {
        self.readers.push(Arc::new(reader));
        self
    }

    /// The settings the snapshot carries.
    pub(super) fn config(&self) -> &SourcesConfig {
        &self.config
    }

    /// Starts every watch, in order: the running readers, and the task that feeds them all.
    pub(super) fn start(
        &self,
        client: Client,
        health: &Health,
        signal: &ChangeSignal,
    ) -> (Started, BoxFuture<'static, ()>) {
        let mut running: Vec<Box<dyn Running>> = Vec::new();
        let mut feeds = Vec::new();
        for reader in &self.readers {
            let earlier = running.iter().map(|r| r.store()).collect();
            let start = Start::new(client.clone(), health, signal, earlier);
            tracing::debug!(reader = reader.name(), "starting the reader's watch");
            let (store, feed) = reader.clone().watch(&start);
            running.push(store);
            feeds.push(feed);
        }
        (Started(running), join_all(feeds).map(drop).boxed())
    }

    /// Every reader's objects read once into a snapshot, in order, and their notes.
    pub(super) async fn list_once(
        &self,
        from: &OneShot<'_>,
        snapshot: &mut Snapshot,
    ) -> Result<Vec<String>> {
        let mut notes = Vec::new();
        for reader in &self.readers {
            notes.extend(reader.list_once(from, snapshot).await?);
        }
        Ok(notes)
    }
}

/// The running readers.
#[derive(Default)]
pub(super) struct Started(Vec<Box<dyn Running>>);

impl Started {
    /// Resolves once each reader is ready, one after another.
    pub(super) async fn ready(&self) {
        for running in &self.0 {
            running.ready().await;
        }
    }

    /// What every store holds now, into `snapshot`.
    pub(super) fn fill(&self, snapshot: &mut Snapshot) {
        for running in &self.0 {
            running.fill(snapshot);
        }
    }

    /// The store of type `S`, if a running reader has one.
    pub(super) fn store<S: Any>(&self) -> Option<&S> {
        self.0.iter().find_map(|r| r.store().downcast_ref())
    }

    /// `reader` running on `store`, which something else than its watch fills (the fast tier's fixed sources).
    #[cfg(test)]
    pub(super) fn with<R: Reader>(mut self, reader: R, store: R::Store) -> Started {
        self.0.push(Box::new(Watched {
            reader: Arc::new(reader),
            store,
        }));
        self
    }
}

/// A [`Reader`] with its types erased, so that the registry holds any.
trait Registered: Send + Sync {
    fn name(&self) -> &'static str;

    fn watch(self: Arc<Self>, start: &Start<'_>) -> (Box<dyn Running>, BoxFuture<'static, ()>);

    fn list_once<'a>(
        &'a self,
        from: &'a OneShot<'a>,
        snapshot: &'a mut Snapshot,
    ) -> BoxFuture<'a, Result<Vec<String>>>;
}

impl<R: Reader> Registered for R {
    fn name(&self) -> &'static str {
        Reader::name(self)
    }

    fn watch(self: Arc<Self>, start: &Start<'_>) -> (Box<dyn Running>, BoxFuture<'static, ()>) {
        let (store, feed) = Reader::watch(&*self, start);
        let running = Watched {
            reader: self,
            store,
        };
        (Box::new(running), feed.boxed())
    }

    fn list_once<'a>(
        &'a self,
        from: &'a OneShot<'a>,
        snapshot: &'a mut Snapshot,
    ) -> BoxFuture<'a, Result<Vec<String>>> {
        async move {
            let Listed { objects, notes } = Reader::list_once(self, from, snapshot).await?;
            self.fill(objects, snapshot);
            Ok(notes)
        }
        .boxed()
    }
}

/// A started reader with its types erased.
trait Running: Send + Sync {
    fn ready(&self) -> BoxFuture<'_, ()>;

    fn fill(&self, snapshot: &mut Snapshot);

    fn store(&self) -> &(dyn Any + Send + Sync);
}

/// A reader and its watch's store.
struct Watched<R: Reader> {
    reader: Arc<R>,
    store: R::Store,
}

impl<R: Reader> Running for Watched<R> {
    fn ready(&self) -> BoxFuture<'_, ()> {
        self.reader.ready(&self.store).boxed()
    }

    fn fill(&self, snapshot: &mut Snapshot) {
        self.reader.fill(self.store.objects(), snapshot);
    }

    fn store(&self) -> &(dyn Any + Send + Sync) {
        &self.store
    }
}
