//! Liveness of the operator's view of the cluster: readiness and rate-limited reporting of API failures.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tracing::{debug, info, warn};

use super::metrics::WatchLabels;
use crate::error::describe_kube_error;

/// How often the same kind of failure is logged at warn; in between it goes to debug.
const WARN_EVERY: Duration = Duration::from_secs(30);

/// Shared, cheap to clone.
#[derive(Clone, Default)]
pub struct Health(Arc<Inner>);

#[derive(Default)]
struct Inner {
    crd_established: AtomicBool,
    nodes_synced: AtomicBool,
    watch_restarts: Family<WatchLabels, Counter>,
    outage: Mutex<Outage>,
}

#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    last_warned: Option<Instant>,
}

impl Health {
    /// Health whose watch failures are also counted in `watch_restarts`.
    pub fn new(watch_restarts: Family<WatchLabels, Counter>) -> Self {
        Health(Arc::new(Inner {
            watch_restarts,
            ..Default::default()
        }))
    }

    /// The CRD is installed and Established.
    pub fn set_crd_established(&self) {
        self.0.crd_established.store(true, Ordering::Relaxed);
    }

    /// The node cache holds a full list.
    pub fn set_nodes_synced(&self) {
        self.0.nodes_synced.store(true, Ordering::Relaxed);
    }

    /// Ready: CRD established, nodes synced, and the API server not failing for longer than `grace`.
    /// The error says what is missing.
    pub fn readiness(&self, grace: Duration) -> Result<(), String> {
        if !self.0.crd_established.load(Ordering::Relaxed) {
            return Err("the GpuInventory CRD is not established yet".to_owned());
        }
        if !self.0.nodes_synced.load(Ordering::Relaxed) {
            return Err("the node cache has not synced yet".to_owned());
        }
        let outage = self.0.outage.lock().unwrap_or_else(|e| e.into_inner());
        match outage.since {
            Some(since) if since.elapsed() >= grace => Err(format!(
                "the API server has been failing for {}s",
                since.elapsed().as_secs()
            )),
            _ => Ok(()),
        }
    }

    /// A watch delivered an event: the API server is reachable.
    pub fn watch_ok(&self, watch: &str) {
        let Ok(mut outage) = self.0.outage.lock() else {
            return;
        };
        if let Some(since) = outage.since.take() {
            outage.last_warned = None;
            info!(
                watch,
                after_secs = since.elapsed().as_secs(),
                "API server reachable again; watch resumed"
            );
        }
    }

    /// A watch failed; it is retried with backoff. Logged at warn at most every 30 s.
    pub fn watch_failed(&self, watch: &str, error: &kube::runtime::watcher::Error) {
        self.0
            .watch_restarts
            .get_or_create(&WatchLabels {
                watch: watch.to_owned(),
            })
            .inc();
        let message = match error {
            kube::runtime::watcher::Error::InitialListFailed(e)
            | kube::runtime::watcher::Error::WatchStartFailed(e)
            | kube::runtime::watcher::Error::WatchFailed(e) => describe_kube_error(e),
            kube::runtime::watcher::Error::WatchError(status) => {
                format!("{} ({} {})", status.message, status.code, status.reason)
            }
            other => other.to_string(),
        };
        self.failure(watch, &message);
    }

    /// Any other failed request: counts toward the outage and is logged rate-limited.
    pub fn failure(&self, what: &str, message: &str) {
        let Ok(mut outage) = self.0.outage.lock() else {
            return;
        };
        let now = Instant::now();
        let since = *outage.since.get_or_insert(now);
        if outage
            .last_warned
            .is_none_or(|t| now.duration_since(t) >= WARN_EVERY)
        {
            outage.last_warned = Some(now);
            warn!(
                what,
                failing_for_secs = now.duration_since(since).as_secs(),
                "{message}; retrying with backoff"
            );
        } else {
            debug!(what, "{message}; retrying with backoff");
        }
    }
}
