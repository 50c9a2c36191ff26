//! Liveness of the operator's view of the cluster: readiness and rate-limited reporting of API failures.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

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
    watch_failures: AtomicU64,
    outage: Mutex<Outage>,
}

#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    last_warned: Option<Instant>,
}

impl Health {
    /// The CRD is installed and Established.
    pub fn set_crd_established(&self) {
        self.0.crd_established.store(true, Ordering::Relaxed);
    }

    /// The node cache holds a full list.
    pub fn set_nodes_synced(&self) {
        self.0.nodes_synced.store(true, Ordering::Relaxed);
    }

    /// Ready: CRD established, nodes synced, and the API server not failing for longer than `grace`.
    pub fn is_ready(&self, grace: Duration) -> bool {
        let outage_ok = self
            .0
            .outage
            .lock()
            .map(|o| o.since.is_none_or(|since| since.elapsed() < grace))
            .unwrap_or(false);
        self.0.crd_established.load(Ordering::Relaxed)
            && self.0.nodes_synced.load(Ordering::Relaxed)
            && outage_ok
    }

    /// Number of watch failures (each one restarts a watch after a backoff).
    pub fn watch_failures(&self) -> u64 {
        self.0.watch_failures.load(Ordering::Relaxed)
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
        self.0.watch_failures.fetch_add(1, Ordering::Relaxed);
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
