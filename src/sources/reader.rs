//! The one shape of a reader: every source (a Kubernetes kind, an optional API, Prometheus) is one [`Reader`]
//! registered once ([`super::registry::Readers`]), in the manner of kubert's indexes and Node Feature
//! Discovery's `source.Register`. A reader has two ways to read its objects, stripped alike:
//!
//! - [`Reader::watch`]: a store that a feed task keeps current, notifying the [`ChangeSignal`] on each change
//!   the core could see (the operator, `kubectl gpu-inventory --watch`);
//! - [`Reader::list_once`]: one read, from the cluster or from a dump ([`OneShot`]) (`scan`, `fit`, `quotas`,
//!   `idle`, the plugin, the fleet commands);
//!
//! and one way in: [`Reader::fill`] puts either's objects into a [`Snapshot`], so that both paths give the
//! core the same input.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;

use kube::api::{Api, ListParams};
use kube::{Client, Resource};

use super::changes::ChangeSignal;
use super::dump::Dump;
use super::snapshot::Snapshot;
use super::stripped::StrippedStore;
use crate::error::Result;
use crate::runtime::health::Health;

/// A source of objects for the inventory. Its module holds the strip (the conversion into the core's types
/// goes in `convert/`); its registration is one line of [`super::registry::Readers::of`].
pub trait Reader: Send + Sync + 'static {
    /// Its objects at one moment, stripped: what the store holds and what one list returns.
    type Objects: Send + 'static;
    /// The watch's cache of them.
    type Store: Store<Objects = Self::Objects>;

    /// Its name, for messages.
    fn name(&self) -> &'static str;

    /// Starts the watch: its store, and the task that feeds it (run it until shutdown). Every change of the
    /// stripped objects notifies `start.signal`.
    fn watch(&self, start: &Start<'_>) -> (Self::Store, impl Future<Output = ()> + Send + 'static);

    /// Resolves once the inventory may be published with what `store` holds: by default its first full list.
    /// A reader that only enriches the inventory waits less, or not at all.
    fn ready(&self, store: &Self::Store) -> impl Future<Output = ()> + Send {
        store.until_listed()
    }

    /// Reads its objects once, stripped as the watch strips them, from `from`; `so_far` holds what the
    /// readers registered before it read. `Err` fails the read; a kind that could not be read but is not
    /// needed is a note ([`Listed::notes`]).
    fn list_once(
        &self,
        from: &OneShot<'_>,
        so_far: &Snapshot,
    ) -> impl Future<Output = Result<Listed<Self::Objects>>> + Send;

    /// Puts its objects into `snapshot`: the one place where the watch's and the list's objects go in.
    fn fill(&self, objects: Self::Objects, snapshot: &mut Snapshot);
}

/// A watch's cache.
pub trait Store: Send + Sync + 'static {
    /// What it holds.
    type Objects;

    /// What it holds now.
    fn objects(&self) -> Self::Objects;

    /// Resolves once the first full list is in (or the source is known to be absent).
    fn until_listed(&self) -> impl Future<Output = ()> + Send + '_;
}

impl<T: Send + Sync + 'static> Store for StrippedStore<T> {
    type Objects = Vec<Arc<T>>;

    fn objects(&self) -> Vec<Arc<T>> {
        self.state()
    }

    fn until_listed(&self) -> impl Future<Output = ()> + Send + '_ {
        self.wait_until_ready()
    }
}

/// What a watch is started with.
pub struct Start<'a> {
    /// The API server's client.
    pub client: Client,
    /// Where the watch reports its events and failures (readiness, restarts, relists).
    pub health: &'a Health,
    /// What the watch notifies on each visible change.
    pub signal: &'a ChangeSignal,
    /// The stores of the readers registered before this one.
    earlier: Vec<&'a (dyn Any + Send + Sync)>,
}

impl<'a> Start<'a> {
    pub(crate) fn new(
        client: Client,
        health: &'a Health,
        signal: &'a ChangeSignal,
        earlier: Vec<&'a (dyn Any + Send + Sync)>,
    ) -> Start<'a> {
        Start {
            client,
            health,
            signal,
            earlier,
        }
    }

    /// The store of type `S` of a reader registered before this one (the utilization source reads the node
    /// cache for the nodes that share their GPUs).
    pub fn earlier<S: Any>(&self) -> Option<&'a S> {
        self.earlier.iter().find_map(|store| store.downcast_ref())
    }
}

/// Where a one-shot read reads.
pub enum OneShot<'a> {
    /// The API server.
    Cluster(Cluster),
    /// A dump of objects (`scan -f`): a Kubernetes reader takes its kind from it; one that is no Kubernetes
    /// kind (Prometheus) reads as it would beside a cluster.
    Dump(&'a Dump),
}

/// A cluster to read once.
pub struct Cluster {
    /// Its client.
    pub client: Client,
    /// Its URL, for messages.
    pub url: String,
    /// Objects per list page (`scan --chunk-size`); 0: one page.
    pub page: u32,
}

impl Cluster {
    /// List parameters paged by [`Cluster::page`].
    pub fn params(&self) -> ListParams {
        match self.page {
            0 => ListParams::default(),
            n => ListParams::default().limit(n),
        }
    }

    /// Every object `api` lists with `params`, page by page, each kept as `keep` makes it (`None`: left out),
    /// so that a large cluster is never held whole as full objects.
    pub async fn list<K, T>(
        &self,
        api: &Api<K>,
        mut params: ListParams,
        mut keep: impl FnMut(K) -> Option<T>,
    ) -> kube::Result<Vec<T>>
    where
        K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    {
        let mut kept = Vec::new();
        loop {
            let page = api.list(&params).await?;
            kept.extend(page.items.into_iter().filter_map(&mut keep));
            match page.metadata.continue_.filter(|token| !token.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok(kept),
            }
        }
    }
}

/// What a one-shot read found, and what it could not read (for stderr).
#[derive(Debug, Default)]
pub struct Listed<T> {
    /// The objects.
    pub objects: T,
    /// One line per kind that could not be read and is not needed (Kueue's, where RBAC refuses them).
    pub notes: Vec<String>,
}

impl<T> Listed<T> {
    /// Objects read with nothing to note.
    pub fn all(objects: T) -> Listed<T> {
        Listed {
            objects,
            notes: Vec::new(),
        }
    }
}
