//! The write guard: the article's pitfall 2 (a reconcile storm fed by no-op writes), made structural.
//!
//! Both controllers hand the guard what the server holds and what they would write. The guard compares the
//! meaningful content only (bookkeeping like `observedTime` and `lastTransitionTime` is ignored), carries the
//! bookkeeping over when nothing changed, and says whether the write may go out. Writes done and skipped are
//! counted per guard.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::metrics::counter::Counter;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::GpuInventoryStatus;

/// Content that can be compared with what the server holds and stamped with bookkeeping times.
pub trait GuardedContent {
    /// Whether `self` and `current` differ only in bookkeeping fields.
    fn same_content(&self, current: &Self) -> bool;
    /// Fills bookkeeping fields of content that is about to be written: carried over from `current` where
    /// they still hold, else `now`.
    fn stamp(&mut self, current: Option<&Self>, now: Timestamp);
}

/// What the guard decided.
#[derive(Debug, PartialEq)]
pub enum Decision<T> {
    /// The server already holds this content: send nothing.
    Skip,
    /// Send this (stamped) content.
    Write(T),
}

/// Counts and decides writes for one kind of target (`status` or `configmap`).
#[derive(Debug, Default)]
pub struct WriteGuard {
    written: Counter,
    skipped: Counter,
}

impl WriteGuard {
    /// A guard counting into the given (registered) counters.
    pub fn new(written: Counter, skipped: Counter) -> Self {
        Self { written, skipped }
    }

    /// Decides whether `desired` must be written over `current` (`None`: the server holds nothing yet).
    pub fn decide<T: GuardedContent>(
        &self,
        current: Option<&T>,
        mut desired: T,
        now: Timestamp,
    ) -> Decision<T> {
        let unchanged = current.is_some_and(|current| desired.same_content(current));
        if unchanged {
            self.skipped.inc();
            return Decision::Skip;
        }
        desired.stamp(current, now);
        Decision::Write(desired)
    }

    /// Records that a write the guard let through reached the server.
    pub fn record_write(&self) {
        self.written.inc();
    }

    /// Writes done so far.
    pub fn written(&self) -> u64 {
        self.written.get()
    }

    /// Writes skipped so far.
    pub fn skipped(&self) -> u64 {
        self.skipped.get()
    }
}

/// Our last write per object, until the watch cache has caught up with it.
///
/// A reconcile can start between our write and the watch event that brings it into the cache. Compared with
/// the stale cache, the content looks changed and the same write would go out again. The guard compares with
/// our own last write instead while the cache still shows the version it showed when we wrote.
#[derive(Debug)]
pub struct RecentWrites<T> {
    writes: Mutex<HashMap<String, (Option<String>, T)>>,
}

impl<T> Default for RecentWrites<T> {
    fn default() -> Self {
        Self {
            writes: Mutex::default(),
        }
    }
}

impl<T> RecentWrites<T> {
    /// Records that `written` was written while the cache showed version `cache_version` of `key`.
    pub fn record(&self, key: &str, cache_version: Option<String>, written: T) {
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        writes.insert(key.to_owned(), (cache_version, written));
    }

    /// Calls `f` with what the server holds as far as we know: our last write while the cache still shows
    /// `cache_version`, else `cached`.
    pub fn with_current<R>(
        &self,
        key: &str,
        cache_version: Option<&str>,
        cached: Option<&T>,
        f: impl FnOnce(Option<&T>) -> R,
    ) -> R {
        let mut writes = self.writes.lock().unwrap_or_else(|e| e.into_inner());
        match writes.get(key) {
            Some((version, written)) if version.as_deref() == cache_version => f(Some(written)),
            Some(_) => {
                writes.remove(key);
                f(cached)
            }
            None => f(cached),
        }
    }
}

impl GuardedContent for GpuInventoryStatus {
    fn same_content(&self, current: &Self) -> bool {
        self.observed_generation == current.observed_generation
            && self.total_gpu_nodes == current.total_gpu_nodes
            && self.ready_gpu_nodes == current.ready_gpu_nodes
            && self.total_gpus == current.total_gpus
            && self.nodes == current.nodes
            && self.omitted_nodes == current.omitted_nodes
            && self.conditions.len() == current.conditions.len()
            && self
                .conditions
                .iter()
                .zip(&current.conditions)
                .all(|(a, b)| {
                    a.type_ == b.type_
                        && a.status == b.status
                        && a.reason == b.reason
                        && a.message == b.message
                        && a.observed_generation == b.observed_generation
                })
    }

    fn stamp(&mut self, current: Option<&Self>, now: Timestamp) {
        // Only changed content is ever stamped, so this is when the new content was first observed.
        self.observed_time = Some(Time(now));
        for condition in &mut self.conditions {
            // lastTransitionTime moves only when the condition's status flips (metav1.Condition contract).
            let previous = current
                .into_iter()
                .flat_map(|c| &c.conditions)
                .find(|c| c.type_ == condition.type_ && c.status == condition.status);
            condition.last_transition_time = match previous {
                Some(previous) => previous.last_transition_time.clone(),
                None => Time(now),
            };
        }
    }
}

/// A ConfigMap's `data`: compared as a whole, no bookkeeping.
impl GuardedContent for std::collections::BTreeMap<String, String> {
    fn same_content(&self, current: &Self) -> bool {
        self == current
    }

    fn stamp(&mut self, _current: Option<&Self>, _now: Timestamp) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::inventory_conditions;
    use crate::scanner::Inventory;

    fn status(ready: u32) -> GpuInventoryStatus {
        let inventory = Inventory {
            total_gpu_nodes: 4,
            ready_gpu_nodes: ready,
            ..Default::default()
        };
        GpuInventoryStatus {
            observed_generation: Some(1),
            total_gpu_nodes: 4,
            ready_gpu_nodes: ready,
            conditions: inventory_conditions(&inventory, Some(1)),
            ..Default::default()
        }
    }

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn written(decision: Decision<GpuInventoryStatus>) -> GpuInventoryStatus {
        match decision {
            Decision::Write(s) => s,
            Decision::Skip => panic!("expected a write"),
        }
    }

    #[test]
    fn first_write_is_stamped_now() {
        let guard = WriteGuard::default();
        let s = written(guard.decide(None, status(0), t(100)));
        assert_eq!(s.observed_time, Some(Time(t(100))));
        assert!(
            s.conditions
                .iter()
                .all(|c| c.last_transition_time == Time(t(100)))
        );
    }

    #[test]
    fn unchanged_content_is_skipped_whatever_the_times() {
        let guard = WriteGuard::default();
        let on_server = written(guard.decide(None, status(0), t(100)));
        assert_eq!(
            guard.decide(Some(&on_server), status(0), t(200)),
            Decision::Skip
        );
        assert_eq!((guard.skipped(), guard.written()), (1, 0));
    }

    #[test]
    fn change_moves_observed_time_but_only_flipped_conditions() {
        let guard = WriteGuard::default();
        let on_server = written(guard.decide(None, status(0), t(100)));
        // 1 of 4 ready: Ready stays False (message changes), so its transition time is carried over.
        let s = written(guard.decide(Some(&on_server), status(1), t(200)));
        assert_eq!(s.observed_time, Some(Time(t(200))));
        assert_eq!(s.conditions[0].last_transition_time, Time(t(100)));
        // 4 of 4 ready: Ready flips to True.
        let s2 = written(guard.decide(Some(&s), status(4), t(300)));
        assert_eq!(s2.conditions[0].status, "True");
        assert_eq!(s2.conditions[0].last_transition_time, Time(t(300)));
        assert_eq!(
            s2.conditions[1].last_transition_time,
            Time(t(100)),
            "Degraded did not flip"
        );
    }

    #[test]
    fn recent_writes_cover_a_stale_cache() {
        let recent = RecentWrites::default();
        recent.record("cm", Some("7".into()), 1);
        let seen = |version: Option<&str>, cached: Option<&i32>| {
            recent.with_current("cm", version, cached, |c| c.copied())
        };
        assert_eq!(
            seen(Some("7"), None),
            Some(1),
            "cache still at the pre-write version"
        );
        assert_eq!(
            seen(Some("8"), Some(&2)),
            Some(2),
            "cache caught up: it wins from now on"
        );
        assert_eq!(seen(Some("7"), Some(&3)), Some(3), "the record is gone");
    }

    #[test]
    fn a_new_generation_is_a_change() {
        let guard = WriteGuard::default();
        let on_server = written(guard.decide(None, status(0), t(100)));
        let mut next = status(0);
        next.observed_generation = Some(2);
        assert!(matches!(
            guard.decide(Some(&on_server), next, t(200)),
            Decision::Write(_)
        ));
    }
}
