//! The backoff of every watch the operator runs.
//!
//! kube's default backoff grows to 30 s and is reset by any successful stream item. Two things go wrong with
//! that here: a watcher emits an `Init` item before each relist, so a relist that keeps failing (say, RBAC
//! forbids `list nodes`) resets the backoff every time and retries about once a second; and after a longer
//! API server outage a 30 s backoff leaves the operator blind for up to 30 s after the server is back.
//! This backoff is capped at 5 s and ignores resets that come within 10 s of an error.

use std::time::{Duration, Instant};

use kube::runtime::utils::Backoff;

const FIRST: Duration = Duration::from_millis(500);
const CAP: Duration = Duration::from_secs(5);
const RESET_QUIET: Duration = Duration::from_secs(10);

/// Exponential 0.5 s, 1 s, 2 s, 4 s, 5 s, 5 s, ...
#[derive(Debug, Default)]
pub struct WatchBackoff {
    next: Option<Duration>,
    last_error: Option<Instant>,
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        self.last_error = Some(Instant::now());
        let delay = self.next.unwrap_or(FIRST);
        self.next = Some((delay * 2).min(CAP));
        Some(delay)
    }
}

impl Backoff for WatchBackoff {
    fn reset(&mut self) {
        if self.last_error.is_none_or(|at| at.elapsed() >= RESET_QUIET) {
            self.next = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_to_the_cap_and_ignores_early_resets() {
        let mut backoff = WatchBackoff::default();
        let delays: Vec<u128> = backoff.by_ref().take(6).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 5000, 5000]);
        backoff.reset();
        assert_eq!(
            backoff.next(),
            Some(CAP),
            "a reset right after an error is ignored"
        );
        backoff.last_error = Some(Instant::now() - RESET_QUIET);
        backoff.reset();
        assert_eq!(backoff.next(), Some(FIRST));
    }
}
