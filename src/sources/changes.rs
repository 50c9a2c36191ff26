//! The one change stream of the process: every source signals it, every publisher follows it.
//!
//! A source signals only changes the core can see (a heartbeat is not one). Followers wait for a change,
//! then for [`COALESCE_WINDOW`] more, and act once on everything that arrived meanwhile.

use std::time::Duration;

use tokio::sync::watch;

/// How long a change waits for more changes before the followers act on them all at once.
///
/// Under churn (say 20 label changes a second) this turns one write per change into one write per window,
/// for at most this much extra latency on a single change.
pub const COALESCE_WINDOW: Duration = Duration::from_millis(100);

/// The sending side, held by the sources. The value is a version: it grows by one per visible change.
#[derive(Clone, Debug)]
pub struct ChangeSignal {
    tx: watch::Sender<u64>,
}

impl Default for ChangeSignal {
    fn default() -> Self {
        Self {
            tx: watch::Sender::new(0),
        }
    }
}

impl ChangeSignal {
    /// Records one visible change.
    pub fn notify(&self) {
        self.tx
            .send_modify(|version| *version = version.wrapping_add(1));
    }

    /// A follower that sees changes made from now on.
    pub(crate) fn subscribe(&self) -> Changes {
        Changes {
            rx: self.tx.subscribe(),
        }
    }
}

/// The following side. Cloning it makes an independent follower that has seen what this one has seen.
#[derive(Clone, Debug)]
pub struct Changes {
    rx: watch::Receiver<u64>,
}

impl Changes {
    /// The version of the latest change. Read it before reading the caches: the caches are then at least
    /// this new, never older.
    pub(crate) fn version(&self) -> u64 {
        *self.rx.borrow()
    }

    /// A follower that sees changes made from now on.
    pub(crate) fn follow_from_now(&self) -> Changes {
        let mut rx = self.rx.clone();
        rx.mark_unchanged();
        Changes { rx }
    }

    /// Waits for the next change, then for [`COALESCE_WINDOW`], and marks everything seen.
    /// `false` when every source is gone (shutdown).
    pub(crate) async fn next(&mut self) -> bool {
        if self.rx.changed().await.is_err() {
            return false;
        }
        tokio::time::sleep(COALESCE_WINDOW).await;
        self.rx.mark_unchanged();
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_of_changes_is_one_wake_up() {
        let signal = ChangeSignal::default();
        let mut changes = signal.subscribe();
        for _ in 0..5 {
            signal.notify();
        }
        assert!(changes.next().await);
        assert_eq!(changes.version(), 5);
        let woke_again = tokio::time::timeout(Duration::from_secs(1), changes.next())
            .await
            .is_ok();
        assert!(!woke_again, "the five changes were consumed by one wake-up");
        drop(signal);
        assert!(!changes.next().await, "no source left: the stream ends");
    }
}
