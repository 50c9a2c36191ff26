//! The one way a publisher runs. A publisher ([`Publisher`]) says which objects it keeps and reconciles one
//! (read the scan, plan against its own objects' cache, write); [`drive`] does the rest, the same for all:
//! it waits for the publisher's cache, runs a pass on each coalesced change of the sources, on each change of
//! the publisher's own objects (a deletion, a hand edit, our own write coming back), and at the latest after
//! the requeue period (sooner when a graced issue falls due or an object asked to be looked at again); it
//! retries failed objects with backoff, holds refused ones back, counts every reconcile in the metrics and
//! stops on shutdown.
//!
//! A publisher caches its own objects one way ([`own_objects::watch_own`]): a watch into a `StrippedStore` of
//! what it compares, whose visible changes signal a `ChangeSignal`, as the sources do.

pub(crate) mod own_objects;
mod retries;

pub(crate) use retries::Retries;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{info, warn};

use super::scan_service::ScanService;
use crate::error::{Error, Result};
use crate::runtime::credentials;
use crate::runtime::metrics::{ControllerLabels, ErrorLabels, Metrics};
use crate::runtime::shutdown::Shutdown;
use crate::sources::Changes;

/// One kind of output and how to reconcile it.
pub(crate) trait Publisher: Send {
    /// Its name in the metrics' `controller` label, in credential reports and in its log lines.
    fn name(&self) -> &'static str;

    /// Resolves once the cache of its own objects holds their first list.
    fn cache_ready(&self) -> impl Future<Output = ()> + Send;

    /// The objects a pass reconciles, one at a time, each with retries of its own (a publisher that writes
    /// many objects in one batch, as the GpuNodes, names the batch). Called once per pass.
    fn keys(&mut self) -> Vec<String>;

    /// Reconciles `key`: reads the scan it needs from `scans`, plans against its cache, writes.
    fn reconcile(
        &mut self,
        key: &str,
        scans: &ScanService,
    ) -> impl Future<Output = Result<Outcome>> + Send;
}

/// What a reconcile that went through asks of the next pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Look again within this long at the latest (an object held back by its write gap), besides the changes
    /// and the requeue period.
    pub(crate) again_in: Option<Duration>,
}

impl Outcome {
    /// Nothing more to do until something changes.
    pub(crate) fn done() -> Outcome {
        Outcome::default()
    }

    /// Look again in `wait`.
    pub(crate) fn again_in(wait: Duration) -> Outcome {
        Outcome {
            again_in: Some(wait),
        }
    }
}

/// Runs `publisher` until shutdown, or until the sources or its own watch end. `own` follows the changes of
/// its own objects.
pub(crate) async fn drive<P: Publisher>(
    mut publisher: P,
    mut own: Changes,
    scans: Arc<ScanService>,
    metrics: Arc<Metrics>,
    shutdown: Shutdown,
) {
    let mut changes = scans.changes();
    tokio::select! {
        _ = publisher.cache_ready() => {}
        _ = shutdown.clone().wait() => return,
    }
    let mut retries = Retries::default();
    loop {
        let delay = pass(&mut publisher, &scans, &metrics, &mut retries).await;
        tokio::select! {
            alive = changes.next() => if !alive { break },
            alive = own.next() => if !alive { break },
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.clone().wait() => break,
        }
    }
    info!("{} controller stopped", publisher.name());
}

/// One pass over the publisher's objects; returns how long until the next one at the latest.
pub(crate) async fn pass<P: Publisher>(
    publisher: &mut P,
    scans: &ScanService,
    metrics: &Metrics,
    retries: &mut Retries,
) -> Duration {
    let name = publisher.name();
    let mut next = scans.next_pass();
    let keys = publisher.keys();
    retries.retain(&keys);
    for key in &keys {
        if let Some(wait) = retries.refused_wait(key) {
            // The last write was refused (403): a change does not make the next one pass.
            next = next.min(wait);
            continue;
        }
        let started = Instant::now();
        let result = publisher.reconcile(key, scans).await;
        observe_reconcile(metrics, name, started, result.as_ref().err());
        match result {
            Ok(outcome) => {
                retries.succeeded(key);
                next = outcome.again_in.map_or(next, |again| next.min(again));
            }
            Err(e) => {
                next = next.min(retries.failed(key, &e));
                // A credential failure is reported once for every caller (runtime/credentials.rs).
                if !e.kube_error().is_some_and(|k| credentials::report(name, k)) {
                    if retries.warn_now(key) {
                        warn!(publisher = name, object = %key, error = %e, reason = e.metric_label(),
                              "reconcile failed; retrying with backoff");
                    } else {
                        tracing::debug!(publisher = name, object = %key, error = %e,
                                        "reconcile failed again; retrying with backoff");
                    }
                }
            }
        }
    }
    next
}

/// Records a finished reconcile of `controller` in the metrics.
fn observe_reconcile(metrics: &Metrics, controller: &str, started: Instant, error: Option<&Error>) {
    let labels = ControllerLabels {
        controller: controller.to_owned(),
    };
    metrics.reconciles.get_or_create(&labels).inc();
    metrics
        .reconcile_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    if let Some(error) = error {
        let labels = ErrorLabels {
            controller: controller.to_owned(),
            reason: error.metric_label().to_owned(),
        };
        metrics.reconcile_errors.get_or_create(&labels).inc();
    }
}

#[cfg(test)]
mod tests;
