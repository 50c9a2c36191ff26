//! Every retry delay of the process: one exponential backoff, and one named [`Policy`] per kind of retry.
//!
//! Watches use [`WATCH`]. kube's default watch backoff grows to 30 s and is reset by any successful stream
//! item. Two things go wrong with that here: a watcher emits an `Init` item before each relist, so a relist
//! that keeps failing (say, RBAC forbids `list nodes`) resets the backoff every time and retries about once a
//! second; and after a longer API server outage a 30 s backoff leaves the operator blind for up to 30 s after
//! the server is back. [`WATCH`] is capped at 5 s and ignores resets that come within 10 s of an error.

use std::time::{Duration, Instant};

/// How one kind of retry backs off: `first`, doubling, at most `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The first delay.
    pub first: Duration,
    /// The longest delay.
    pub cap: Duration,
    /// A reset within this long of the last failure is ignored (see the module docs).
    pub ignore_resets_within: Duration,
}

/// Watches (nodes, GpuInventories, the ConfigMap, the CRD): 0.5 s, 1 s, 2 s, 4 s, 5 s, ...
pub const WATCH: Policy = Policy {
    first: Duration::from_millis(500),
    cap: Duration::from_secs(5),
    ignore_resets_within: Duration::from_secs(10),
};

/// A failed reconcile of one object (a write the API server refused): 1 s doubling to 60 s.
pub const RECONCILE: Policy = Policy {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(60),
    ignore_resets_within: Duration::ZERO,
};

/// Waiting for an unreachable API server at start-up: 1 s doubling to 10 s.
pub const API_SERVER_STARTUP: Policy = Policy {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(10),
    ignore_resets_within: Duration::ZERO,
};

/// Reinstalling a deleted CRD: 1 s doubling to 60 s.
pub const CRD_REINSTALL: Policy = Policy {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(60),
    ignore_resets_within: Duration::ZERO,
};

/// Restarting leader election after the Lease could not be read or written: 1 s doubling to 30 s.
pub const LEADER_ELECTION: Policy = Policy {
    first: Duration::from_secs(1),
    cap: Duration::from_secs(30),
    ignore_resets_within: Duration::ZERO,
};

impl Policy {
    /// A fresh backoff following this policy.
    pub(crate) const fn backoff(self) -> Backoff {
        Backoff {
            policy: self,
            next: None,
            last_failure: None,
        }
    }
}

/// The delays of one retry loop. Also a kube watcher backoff (`WatchStreamExt::backoff`).
#[derive(Clone, Debug)]
pub(crate) struct Backoff {
    policy: Policy,
    next: Option<Duration>,
    last_failure: Option<Instant>,
}

impl Backoff {
    /// The delay before the next attempt, after a failure.
    pub(crate) fn next_delay(&mut self) -> Duration {
        self.last_failure = Some(Instant::now());
        let delay = self.next.unwrap_or(self.policy.first);
        self.next = Some(delay.saturating_mul(2).min(self.policy.cap));
        delay
    }

    /// After a success: the next failure starts from the first delay again (see
    /// [`Policy::ignore_resets_within`]).
    pub(crate) fn reset(&mut self) {
        let quiet = self.policy.ignore_resets_within;
        if self.last_failure.is_none_or(|at| at.elapsed() >= quiet) {
            self.next = None;
        }
    }
}

impl Iterator for Backoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(self.next_delay())
    }
}

impl kube::runtime::utils::Backoff for Backoff {
    fn reset(&mut self) {
        Backoff::reset(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(backoff: &mut Backoff, n: usize) -> Vec<u128> {
        (0..n).map(|_| backoff.next_delay().as_millis()).collect()
    }

    #[test]
    fn watch_grows_to_the_cap_and_ignores_early_resets() {
        let mut backoff = WATCH.backoff();
        assert_eq!(millis(&mut backoff, 6), [500, 1000, 2000, 4000, 5000, 5000]);
        backoff.reset();
        assert_eq!(
            backoff.next_delay(),
            WATCH.cap,
            "a reset right after an error is ignored"
        );
        backoff.last_failure = Some(Instant::now() - WATCH.ignore_resets_within);
        backoff.reset();
        assert_eq!(backoff.next_delay(), WATCH.first);
    }

    #[test]
    fn named_policies() {
        assert_eq!(
            millis(&mut RECONCILE.backoff(), 8),
            [1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000]
        );
        assert_eq!(
            millis(&mut API_SERVER_STARTUP.backoff(), 5),
            [1000, 2000, 4000, 8000, 10000]
        );
        assert_eq!(
            millis(&mut LEADER_ELECTION.backoff(), 6),
            [1000, 2000, 4000, 8000, 16000, 30000]
        );
        let mut crd = CRD_REINSTALL.backoff();
        crd.next_delay();
        crd.reset();
        assert_eq!(crd.next_delay(), CRD_REINSTALL.first, "resets at once");
    }
}
