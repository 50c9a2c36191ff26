//! The retries of the objects whose last reconcile failed: one backoff per object (policy
//! [`backoff::RECONCILE`]), and after a refusal a time before which nothing, not even a change, retries it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::runtime::backoff::{self, Backoff};

/// Per object key, its retries.
#[derive(Debug, Default)]
pub(crate) struct Retries(HashMap<String, Retry>);

/// The retries of one object whose last reconcile failed.
#[derive(Debug)]
struct Retry {
    backoff: Backoff,
    /// After a refusal: no attempt before this instant, whatever wakes the publisher.
    not_before: Option<Instant>,
    /// Failed attempts in a row.
    failures: u32,
}

impl Retries {
    /// The next retry delay for `key` after `error`. After a refusal ([`Error::is_refusal`]) the retry also
    /// waits out the delay when a change wakes the publisher first ([`Self::refused_wait`]): a change cannot
    /// make a forbidden request pass, and retrying on each one would fill the log with the same warning; after
    /// any other error a change retries at once (the API server may be back).
    pub(crate) fn failed(&mut self, key: &str, error: &Error) -> Duration {
        let retry = self.0.entry(key.to_owned()).or_insert_with(|| Retry {
            backoff: backoff::RECONCILE.backoff(),
            not_before: None,
            failures: 0,
        });
        retry.failures = retry.failures.saturating_add(1);
        let delay = retry.backoff.next_delay();
        retry.not_before = error.is_refusal().then(|| Instant::now() + delay);
        delay
    }

    /// Whether `key`'s last failure is worth a warning: the 1st, 2nd, 4th, 8th, ... of a run. A change or a
    /// requeue retries a failed write at once (the API server may be back), so through an outage of 30 s a
    /// publisher with a 2 s requeue fails 15 times in a row; the rest are logged at debug level.
    pub(crate) fn warn_now(&self, key: &str) -> bool {
        self.0
            .get(key)
            .is_none_or(|retry| retry.failures.is_power_of_two())
    }

    /// How long `key` must still wait before its next attempt (a refused request's backoff); `None`: now.
    pub(crate) fn refused_wait(&self, key: &str) -> Option<Duration> {
        let not_before = self.0.get(key)?.not_before?;
        not_before
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// Forgets the failures of `key` after a success.
    pub(crate) fn succeeded(&mut self, key: &str) {
        self.0.remove(key);
    }

    /// Forgets the objects that are not in `keys` any more.
    pub(crate) fn retain(&mut self, keys: &[String]) {
        self.0.retain(|key, _| keys.contains(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal() -> Error {
        Error::kube("writing")(kube::Error::Api(Box::new(
            kube::core::Status::failure("forbidden", "Forbidden").with_code(403),
        )))
    }

    #[test]
    fn a_refusal_waits_its_backoff_and_a_success_forgets_it() {
        let mut retries = Retries::default();
        let delay = retries.failed("a", &refusal());
        let wait = retries.refused_wait("a").expect("refused: wait");
        assert!(wait <= delay, "{wait:?} <= {delay:?}");
        assert_eq!(retries.refused_wait("b"), None, "per object");
        let longer = retries.failed("a", &refusal());
        assert!(
            longer > delay,
            "the backoff grows: {longer:?} after {delay:?}"
        );
        retries.succeeded("a");
        assert_eq!(retries.refused_wait("a"), None);
        retries.failed("gone", &refusal());
        retries.retain(&["a".to_owned()]);
        assert_eq!(
            retries.refused_wait("gone"),
            None,
            "a gone object is forgotten"
        );
    }

    #[test]
    fn a_run_of_failures_is_warned_at_its_first_second_fourth_and_eighth() {
        let mut retries = Retries::default();
        let warned: Vec<u32> = (1..=15)
            .filter(|_| {
                retries.failed("a", &refusal());
                retries.warn_now("a")
            })
            .collect();
        assert_eq!(warned, [1, 2, 4, 8]);
        retries.succeeded("a");
        retries.failed("a", &refusal());
        assert!(retries.warn_now("a"), "a new run starts over");
    }
}
