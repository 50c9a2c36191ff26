//! The guarded writer: one per output (GpuInventory status, ConfigMap). It decides what "the server holds"
//! means for a plan, and counts the writes done and skipped.
//!
//! A reconcile can start between our write and the watch event that brings it into the cache. Compared with
//! the stale cache, the content looks changed and the same write would go out again. So while the cache
//! still shows a version older than our last write, the plan is made against our own last write instead.
//! Older means: the version the write was planned against, those its earlier requests returned, and every
//! version of our earlier writes still on their way to the cache (a cache that lags behind two of our writes
//! shows the first one's versions after the second was sent).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;

use crate::runtime::metrics::{Metrics, TargetLabels};

/// Guards the writes of one kind of output; keyed by object name.
#[derive(Debug)]
pub(crate) struct GuardedWriter<T> {
    recent: Mutex<HashMap<String, RecentWrite<T>>>,
    /// When each object was last written: kept after the cache has caught up with the write, for the gap.
    written_at: Mutex<HashMap<String, Instant>>,
    min_gap: Duration,
    written: Counter,
    skipped: Counter,
}

/// The shortest gap between two writes of one object. Watch events of our own writes (and of foreign edits, which
/// are undone) wake the publishers outside the coalesced change stream; without a floor, a busy second could
/// hold more writes of one object than the stream's 10 per second.
pub(crate) const MIN_WRITE_GAP: Duration = crate::sources::COALESCE_WINDOW;

/// The gap between two writes of one aggregate object (a GpuInventory status, the ConfigMap): at most 2 writes a
/// second per object. Each of them covers every node, and an API server takes tens to hundreds of
/// milliseconds to apply one, so under a steady stream of changes (50 pod changes a second) writing each
/// coalesced change would keep it busy with one object; a change still reaches it within about a second.
pub(crate) const AGGREGATE_WRITE_GAP: Duration = Duration::from_millis(500);

#[derive(Debug)]
struct RecentWrite<T> {
    /// Cache versions that predate the write's result: the one the plan saw, those of earlier requests of
    /// the same write (a GpuNode's object is applied before its status), and those of our earlier writes the
    /// cache had not shown yet.
    stale_versions: Vec<Option<String>>,
    /// The version the write's last request returned: older than any later write of ours.
    written_version: Option<String>,
    content: T,
}

/// Where the cache stood when a plan was made: the object's version there, and what it held.
#[derive(Debug)]
pub(crate) struct Cached<'a, T> {
    /// The cache's version of the object (`resourceVersion`, or an event count for a cache without one).
    pub(crate) version: Option<&'a str>,
    /// The object's content in the cache; `None` when the cache has no such object.
    pub(crate) content: Option<&'a T>,
}

// Derived Clone/Copy would require `T: Copy`; the fields are references.
impl<T> Clone for Cached<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Cached<'_, T> {}

impl<T> GuardedWriter<T> {
    /// A writer counting into the `guard_writes`/`guard_skipped_writes` series of `target`.
    pub(crate) fn for_target(metrics: &Metrics, target: &str) -> Self {
        let labels = TargetLabels {
            target: target.to_owned(),
        };
        Self::new(
            metrics.guard_writes.get_or_create_owned(&labels),
            metrics.guard_skipped.get_or_create_owned(&labels),
        )
    }

    /// A writer counting into the given (registered) counters.
    pub(crate) fn new(written: Counter, skipped: Counter) -> Self {
        Self {
            recent: Mutex::default(),
            written_at: Mutex::default(),
            min_gap: MIN_WRITE_GAP,
            written,
            skipped,
        }
    }

    /// The same writer with another gap between two writes of one object (see [`AGGREGATE_WRITE_GAP`]).
    pub(crate) fn with_min_gap(mut self, gap: Duration) -> Self {
        self.min_gap = gap;
        self
    }

    /// The gap between two writes of one object.
    #[cfg(test)]
    pub(crate) fn min_gap(&self) -> Duration {
        self.min_gap
    }

    /// Runs `plan` against what the server holds as far as we know, and returns what it planned to write.
    /// A plan that writes nothing counts as a skipped write.
    pub(crate) fn plan<W, R>(
        &self,
        key: &str,
        cached: Cached<'_, T>,
        plan: impl FnOnce(Option<&T>) -> (Option<W>, R),
    ) -> (Option<W>, R) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        let current = match recent.get(key) {
            Some(ours)
                if ours
                    .stale_versions
                    .iter()
                    .any(|v| v.as_deref() == cached.version) =>
            {
                Some(&ours.content)
            }
            Some(_) => {
                // The cache has moved past our write: it wins from now on.
                recent.remove(key);
                cached.content
            }
            None => cached.content,
        };
        let (write, rest) = plan(current);
        if write.is_none() {
            self.skipped.inc();
        }
        (write, rest)
    }

    /// Counts a write skipped without a plan (the caller knows it would find nothing to write).
    pub(crate) fn count_skipped(&self) {
        self.skipped.inc();
    }

    /// Records that `content` reached the server at `written_version` while the cache showed
    /// `cache_version` of `key`.
    pub(crate) fn record_write(
        &self,
        key: &str,
        cache_version: Option<String>,
        written_version: Option<String>,
        content: T,
    ) {
        self.record_write_after(key, vec![cache_version], written_version, content);
    }

    /// Records that `content` reached the server, its last request returning `written_version`; until the
    /// cache shows a version other than `stale_versions` (the one planned against, and those that earlier
    /// requests of this write returned) or than our earlier writes' versions it has not shown yet, plans are
    /// made against `content`.
    pub(crate) fn record_write_after(
        &self,
        key: &str,
        mut stale_versions: Vec<Option<String>>,
        written_version: Option<String>,
        content: T,
    ) {
        // A write went through: whatever credential failure was reported is over.
        crate::runtime::credentials::succeeded();
        self.written.inc();
        let now = Instant::now();
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(earlier) = recent.remove(key) {
            // This write was planned against the earlier one (the cache had not shown it): the cache may still
            // show each version the earlier write went through, all older than this write.
            stale_versions.extend(earlier.stale_versions);
            stale_versions.push(earlier.written_version);
            stale_versions.sort_unstable();
            stale_versions.dedup();
        }
        recent.insert(
            key.to_owned(),
            RecentWrite {
                stale_versions,
                written_version,
                content,
            },
        );
        drop(recent);
        let mut written_at = self.written_at.lock().unwrap_or_else(|e| e.into_inner());
        written_at.insert(key.to_owned(), now);
    }

    /// Forgets `key` (its object was deleted).
    pub(crate) fn forget(&self, key: &str) {
        let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
        recent.remove(key);
        drop(recent);
        let mut written_at = self.written_at.lock().unwrap_or_else(|e| e.into_inner());
        written_at.remove(key);
    }

    /// How long to wait before `key` may be written again (the writer's gap after its last write, whether or
    /// not the cache has caught up with it); `None`: now. A publisher that has to wait plans after the wait,
    /// so the write carries everything seen by then.
    pub(crate) fn wait_before_write(&self, key: &str) -> Option<Duration> {
        let written_at = self.written_at.lock().unwrap_or_else(|e| e.into_inner());
        let since = written_at.get(key)?.elapsed();
        self.min_gap.checked_sub(since).filter(|d| !d.is_zero())
    }

    /// Writes done so far.
    #[cfg(test)]
    pub(crate) fn written(&self) -> u64 {
        self.written.get()
    }

    /// Writes skipped so far.
    #[cfg(test)]
    pub(crate) fn skipped(&self) -> u64 {
        self.skipped.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer() -> GuardedWriter<i32> {
        GuardedWriter::new(Counter::default(), Counter::default())
    }

    /// What the plan sees as the server's content, when the cache is at `version` holding `content`.
    fn seen(w: &GuardedWriter<i32>, version: &str, content: Option<&i32>) -> Option<i32> {
        let cached = Cached {
            version: Some(version),
            content,
        };
        w.plan("cm", cached, |current| (None::<i32>, current.copied()))
            .1
    }

    #[test]
    fn our_last_write_covers_a_stale_cache() {
        let w = writer();
        w.record_write("cm", Some("7".into()), Some("8".into()), 1);
        assert_eq!(
            seen(&w, "7", None),
            Some(1),
            "cache still at the pre-write version"
        );
        assert_eq!(seen(&w, "8", Some(&2)), Some(2), "cache caught up: it wins");
        assert_eq!(seen(&w, "7", Some(&3)), Some(3), "the record is gone");
        assert_eq!((w.written(), w.skipped()), (1, 3));
    }

    #[test]
    fn a_write_of_several_requests_covers_each_intermediate_version() {
        let w = writer();
        w.record_write_after("cm", vec![None, Some("8".into())], Some("9".into()), 1);
        assert_eq!(
            seen(&w, "8", Some(&0)),
            Some(1),
            "after the first request only"
        );
        assert_eq!(
            seen(&w, "9", Some(&1)),
            Some(1),
            "the last request's result: the cache"
        );
        w.record_write("cm", Some("9".into()), Some("10".into()), 2);
        w.forget("cm");
        assert_eq!(
            seen(&w, "9", Some(&1)),
            Some(1),
            "forgotten: the cache again"
        );
    }

    #[test]
    fn a_cache_that_shows_an_earlier_write_of_ours_is_older_than_the_last_one() {
        let w = writer();
        // A GpuNode written in two requests, planned against the cache at 7: the object's apply returned 8,
        // the status's 9.
        w.record_write_after(
            "cm",
            vec![Some("7".into()), Some("8".into())],
            Some("9".into()),
            1,
        );
        // The node changes before the watch brings any of it: planned against our write, written again (10).
        assert_eq!(seen(&w, "7", Some(&0)), Some(1), "the cache still at 7");
        w.record_write("cm", Some("7".into()), Some("10".into()), 2);
        // The watch brings our first write's versions, then the second's: until then, the first write's
        // content is not what the server holds, and writing the second again would change nothing.
        assert_eq!(seen(&w, "8", Some(&0)), Some(2), "the first write's object");
        assert_eq!(seen(&w, "9", Some(&1)), Some(2), "the first write");
        assert_eq!(seen(&w, "10", Some(&2)), Some(2), "caught up: the cache");
        assert_eq!(seen(&w, "9", Some(&1)), Some(1), "the record is gone");
    }

    #[test]
    fn a_plan_that_writes_counts_no_skip() {
        let w = writer();
        let cached = Cached {
            version: None,
            content: None,
        };
        let (write, ()) = w.plan("x", cached, |_| (Some(5), ()));
        assert_eq!(write, Some(5));
        assert_eq!(w.skipped(), 0);
    }

    #[test]
    fn a_write_waits_for_the_gap_after_the_last_one() {
        let w = writer();
        assert_eq!(w.wait_before_write("cm"), None, "never written: write now");
        w.record_write("cm", Some("7".into()), Some("8".into()), 1);
        let wait = w.wait_before_write("cm").expect("just written: wait");
        assert!(wait <= MIN_WRITE_GAP, "{wait:?}");
        assert_eq!(w.wait_before_write("other"), None, "per object");
        std::thread::sleep(MIN_WRITE_GAP);
        assert_eq!(w.wait_before_write("cm"), None);
    }

    #[test]
    fn the_gap_holds_after_the_cache_caught_up_with_the_write() {
        let w = writer().with_min_gap(AGGREGATE_WRITE_GAP);
        w.record_write("cm", Some("7".into()), Some("8".into()), 1);
        // The watch brings our write in (version 8): plans use the cache again, the gap still holds.
        let seen_now = seen(&w, "8", Some(&1));
        assert_eq!(seen_now, Some(1));
        let wait = w.wait_before_write("cm").expect("written just now");
        assert!(
            wait > MIN_WRITE_GAP && wait <= AGGREGATE_WRITE_GAP,
            "{wait:?}"
        );
        w.forget("cm");
        assert_eq!(w.wait_before_write("cm"), None, "a deleted object is new");
    }
}
