//! Liveness of the operator's view of the cluster: readiness, rate-limited reporting of API failures, and the
//! watches' relists.

use std::collections::{HashMap, HashSet};
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
    watch_relists: Family<WatchLabels, Counter>,
    /// The watches whose first list is complete: a later complete list is a relist.
    listed: Mutex<HashSet<String>>,
    outage: Mutex<Outage>,
    /// When each watch's missing permission was last logged at warn.
    denied: Mutex<HashMap<String, Instant>>,
}

#[derive(Default)]
struct Outage {
    since: Option<Instant>,
    last_warned: Option<Instant>,
}

impl Health {
    /// Health whose watch failures are also counted in `watch_restarts`.
    pub(crate) fn new(watch_restarts: Family<WatchLabels, Counter>) -> Self {
        Health(Arc::new(Inner {
            watch_restarts,
            ..Default::default()
        }))
    }

    /// Health that also counts, in `watch_relists`, every complete list of a watch after its first one.
    pub(crate) fn with_relists(
        watch_restarts: Family<WatchLabels, Counter>,
        watch_relists: Family<WatchLabels, Counter>,
    ) -> Self {
        Health(Arc::new(Inner {
            watch_restarts,
            watch_relists,
            ..Default::default()
        }))
    }

    /// The CRD is installed and Established.
    pub(crate) fn set_crd_established(&self) {
        self.0.crd_established.store(true, Ordering::Relaxed);
    }

    /// The node cache holds a full list.
    pub(crate) fn set_nodes_synced(&self) {
        self.0.nodes_synced.store(true, Ordering::Relaxed);
    }

    /// Ready: CRD established, nodes synced, and the API server not failing for longer than `grace`.
    /// The error says what is missing.
    pub(crate) fn readiness(&self, grace: Duration) -> Result<(), String> {
        if !self.0.crd_established.load(Ordering::Relaxed) {
            return Err("the operator's CRDs are not established yet".to_owned());
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
    pub(crate) fn watch_ok(&self, watch: &str) {
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

    /// A source watch delivered `event`. Every event but `Init` (which precedes every list, also one about to
    /// fail) proves the API server reachable; `InitDone` ends a complete list, and every one after the watch's
    /// first is a relist: the watch could not resume (its resourceVersion expired, 410 Gone) and read
    /// everything again. Relists are counted and logged at info: they are how a watch heals, not a failure.
    pub(crate) fn watch_event<K>(&self, watch: &str, event: &kube::runtime::watcher::Event<K>) {
        use kube::runtime::watcher::Event;
        if matches!(event, Event::Init) {
            return;
        }
        self.watch_ok(watch);
        if matches!(event, Event::InitDone) {
            // A list is a fresh request; events of a watch opened earlier prove nothing about the credentials.
            super::credentials::succeeded();
            let mut listed = self.0.listed.lock().unwrap_or_else(|e| e.into_inner());
            // Created at the first list, so the series reads 0 (not absent) until a relist.
            let relists = self.0.watch_relists.get_or_create(&WatchLabels {
                watch: watch.to_owned(),
            });
            if !listed.insert(watch.to_owned()) {
                relists.inc();
                info!(
                    watch,
                    relists = relists.get(),
                    "watch relisted: the cache holds a fresh full list"
                );
            }
        }
    }

    /// A watch failed; it is retried with backoff. Logged at warn at most every 30 s, except an expired
    /// resourceVersion (410 Gone), which a relist heals at once: logged at info, not an outage.
    pub(crate) fn watch_failed(&self, watch: &str, error: &kube::runtime::watcher::Error) {
        self.0
            .watch_restarts
            .get_or_create(&WatchLabels {
                watch: watch.to_owned(),
            })
            .inc();
        if is_gone(error) {
            info!(
                watch,
                "watch expired: resourceVersion too old (410 Gone, compacted or out of the watch cache); relisting"
            );
            return;
        }
        if is_forbidden(error) {
            // The API server answered: a missing permission is not an outage (readiness stays as it is, and
            // the other watches' events do not announce a recovery every backoff); it is logged per watch.
            self.denied(watch, error);
            return;
        }
        if let kube::runtime::watcher::Error::InitialListFailed(e)
        | kube::runtime::watcher::Error::WatchStartFailed(e)
        | kube::runtime::watcher::Error::WatchFailed(e) = error
            && super::credentials::report(watch, e)
        {
            // Logged once by `report`; still an outage for readiness.
            self.0
                .outage
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .since
                .get_or_insert_with(Instant::now);
            return;
        }
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

    /// A watch the operator may not make (403): warn at most every WARN_EVERY per watch, debug in between.
    fn denied(&self, watch: &str, error: &kube::runtime::watcher::Error) {
        let message = match error {
            kube::runtime::watcher::Error::InitialListFailed(e)
            | kube::runtime::watcher::Error::WatchStartFailed(e)
            | kube::runtime::watcher::Error::WatchFailed(e) => describe_kube_error(e),
            other => other.to_string(),
        };
        let mut denied = self.0.denied.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let last = denied.get(watch).copied();
        if last.is_none_or(|t| now.duration_since(t) >= WARN_EVERY) {
            denied.insert(watch.to_owned(), now);
            warn!(watch, "{message}; retrying with backoff");
        } else {
            debug!(watch, "{message}; retrying with backoff");
        }
    }

    /// Any other failed request: counts toward the outage and is logged rate-limited.
    pub(crate) fn failure(&self, what: &str, message: &str) {
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

/// Whether a watch failed because its resourceVersion is gone (410): the watcher relists next.
/// Whether a watch failed because the operator lacks the permission (403 Forbidden).
fn is_forbidden(error: &kube::runtime::watcher::Error) -> bool {
    use kube::runtime::watcher::Error as WatchError;
    match error {
        WatchError::WatchError(status) => status.code == 403,
        WatchError::InitialListFailed(kube::Error::Api(status))
        | WatchError::WatchStartFailed(kube::Error::Api(status))
        | WatchError::WatchFailed(kube::Error::Api(status)) => status.code == 403,
        _ => false,
    }
}

fn is_gone(error: &kube::runtime::watcher::Error) -> bool {
    use kube::runtime::watcher::Error as WatchError;
    match error {
        WatchError::WatchError(status) => status.code == 410,
        WatchError::WatchStartFailed(kube::Error::Api(status))
        | WatchError::WatchFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::runtime::watcher::Event;

    fn list_failed(code: u16) -> kube::runtime::watcher::Error {
        let status = kube::core::Status::failure("from the API server", "Reason").with_code(code);
        kube::runtime::watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn a_missing_permission_is_not_an_outage() {
        let health = Health::default();
        health.set_crd_established();
        health.set_nodes_synced();
        health.watch_failed("resourceclaims", &list_failed(403));
        assert_eq!(health.readiness(Duration::ZERO), Ok(()));
        health.watch_failed("nodes", &list_failed(500));
        assert!(health.readiness(Duration::ZERO).is_err());
    }

    #[test]
    fn only_lists_after_the_first_are_relists() {
        let relists = Family::<WatchLabels, Counter>::default();
        let health = Health::with_relists(Family::default(), relists.clone());
        let count = |watch: &str| {
            relists
                .get_or_create(&WatchLabels {
                    watch: watch.to_owned(),
                })
                .get()
        };
        for event in [Event::Init, Event::InitApply(()), Event::InitDone] {
            health.watch_event("nodes", &event);
        }
        assert_eq!(count("nodes"), 0, "the first list is no relist");
        health.watch_event("nodes", &Event::Apply(()));
        health.watch_event("nodes", &Event::<()>::Init);
        assert_eq!(
            count("nodes"),
            0,
            "an Init alone (a list that may fail) is none"
        );
        health.watch_event("nodes", &Event::<()>::InitDone);
        health.watch_event("pods", &Event::<()>::InitDone);
        assert_eq!((count("nodes"), count("pods")), (1, 0), "counted per watch");
    }

    #[test]
    fn an_expired_resource_version_is_no_outage() {
        let health = Health::default();
        let gone = kube::core::Status::failure("too old resource version: 5 (90)", "Expired")
            .with_code(410);
        health.watch_failed(
            "nodes",
            &kube::runtime::watcher::Error::WatchError(Box::new(gone)),
        );
        health.set_crd_established();
        health.set_nodes_synced();
        assert_eq!(health.readiness(Duration::ZERO), Ok(()));
    }
}
