//! The utilization source: which held GPUs sat idle, read from dcgm-exporter's series in Prometheus at most
//! once per `--utilization-interval`, never per change (docs/utilization.md).
//!
//! Each round asks how many GPU series stayed below `--idle-below` through `--idle-window` ([`promql`]),
//! with the busy series of the nodes that share their GPUs (`shared_nodes`, read from the node cache at each
//! round), refuses an answer past `--utilization-max-series` without fetching it, then fetches the series and
//! reads their labels ([`IdleSeries`]). Each keeps the `since` it was first found idle with ([`IdleSince`]),
//! so that a round that finds the same [`Round`] changes nothing and notifies no one. A failed round
//! keeps the last answer for `--utilization-hold` (saying so: [`Round::held`]), since one slow answer
//! from a loaded Prometheus would otherwise withhold every idle figure and rewrite each GpuNode showing one
//! twice (at 65,000 nodes that doubled the GpuNode writes under churn); past the hold, or with no answer
//! yet, the reading is `Unknown` with the reason. The next try comes after a backoff (5 s doubling to the
//! interval); the idle figures are withheld while `Unknown`, and every other output goes on.

pub mod prometheus;
pub mod promql;
pub(crate) mod reader;

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::inventory::utilization::{IdleSeries, Reading, Round};
use crate::runtime::backoff::Policy;
use crate::sources::changes::ChangeSignal;
use prometheus::{Answer, Prometheus, QueryError, Sample};
use promql::IdleQuery;

/// How the source reads Prometheus.
#[derive(Clone, Debug)]
pub struct UtilizationConfig {
    /// Where Prometheus is, and how to talk to it.
    pub endpoint: prometheus::Endpoint,
    /// At most one round this often.
    pub interval: Duration,
    /// What the queries ask.
    pub query: IdleQuery,
    /// The most idle series a round fetches.
    pub max_series: u64,
    /// How long the last answer stands in for failed rounds before the figures say `Unknown`.
    pub hold: Duration,
}

/// After a failed round: 5 s, doubling, at most the interval.
const RETRY: Policy = Policy {
    first: Duration::from_secs(5),
    cap: Duration::from_secs(600),
    ignore_resets_within: Duration::ZERO,
};

/// The latest [`Round`], shared by the round task and the scans, and whether a round has ended yet.
#[derive(Clone, Debug, Default)]
pub struct UtilizationStore {
    activity: Arc<Mutex<Option<Arc<Round>>>>,
    asked: Arc<tokio::sync::watch::Sender<bool>>,
    /// How long a round may take: two queries, each within the timeout.
    round_limit: Duration,
}

impl UtilizationStore {
    /// How long the first round may take.
    pub fn first_round_limit(&self) -> Duration {
        self.round_limit
    }

    /// Resolves once the first round has ended, answered or not.
    pub async fn wait_until_asked(&self) {
        let mut asked = self.asked.subscribe();
        // An error means the sender is gone: no round will end.
        let _ = asked.wait_for(|asked| *asked).await;
    }

    /// The latest activity; `None` where the source is off.
    pub fn state(&self) -> Option<Arc<Round>> {
        self.activity
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the activity; whether it changed.
    fn set(&self, activity: Round) -> bool {
        let mut held = self.activity.lock().unwrap_or_else(|e| e.into_inner());
        if held.as_deref() == Some(&activity) {
            return false;
        }
        *held = Some(Arc::new(activity));
        true
    }
}

/// Starts the source: its store (`Unknown` until the first round answers) and its task. `shared` names the
/// nodes that share their GPUs now (sorted), whose busy series each round asks for too.
pub fn watch_utilization(
    client: Prometheus,
    config: UtilizationConfig,
    signal: ChangeSignal,
    shared: impl Fn() -> Vec<String> + Send + 'static,
) -> (UtilizationStore, impl Future<Output = ()> + Send + 'static) {
    let store = UtilizationStore {
        round_limit: config.endpoint.timeout * 2 + Duration::from_secs(1),
        ..UtilizationStore::default()
    };
    let base = unasked(&client, &config);
    store.set(base.clone());
    let feed_store = store.clone();
    let feed = async move {
        let mut since = IdleSince::default();
        let mut last = LastAnswer::default();
        let mut retry = Policy {
            cap: config.interval.max(RETRY.first),
            ..RETRY
        }
        .backoff();
        loop {
            let now = jiff::Timestamp::now();
            let result = idle_series(&client, &config, &shared(), &mut since, now).await;
            let failed = result.is_err();
            match &result {
                Ok(_) => retry.reset(),
                Err(e) => tracing::warn!(error = %e, hold = ?config.hold,
                    "reading the GPUs' activity failed; the last answer stands for the hold, then the idle figures are withheld"),
            }
            let previous = feed_store.state();
            let (reading, held) = last.after(result, now, config.hold, previous.as_deref());
            if feed_store.set(Round {
                reading,
                held,
                ..base.clone()
            }) {
                signal.notify();
            }
            feed_store.asked.send_replace(true);
            let wait = if failed {
                retry.next_delay()
            } else {
                config.interval
            };
            tokio::time::sleep(wait).await;
        }
    };
    (store, feed)
}

/// One round for a one-shot command (`scan`, `idle`, the plugin): the activity now. `shared` names the nodes
/// that share their GPUs (sorted).
pub async fn read_once(
    client: &Prometheus,
    config: &UtilizationConfig,
    shared: &[String],
) -> Round {
    let now = jiff::Timestamp::now();
    let reading = match idle_series(client, config, shared, &mut IdleSince::default(), now).await {
        Ok(idle) => Reading::Current(idle),
        Err(e) => Reading::Unknown(e.to_string()),
    };
    Round {
        reading,
        ..unasked(client, config)
    }
}

/// The activity before any round.
fn unasked(client: &Prometheus, config: &UtilizationConfig) -> Round {
    Round {
        source: client.source(),
        window: promql::duration(config.query.window),
        rule: rule(&config.query),
        reading: Reading::Unknown("Prometheus has not been asked yet".into()),
        held: None,
    }
}

/// When the last round answered: its answer (the store's reading) stands in for failed rounds through the
/// hold. Only the time is kept here, so the answer is held once.
#[derive(Debug, Default)]
struct LastAnswer(Option<jiff::Timestamp>);

impl LastAnswer {
    /// The reading after a round that ended with `result` at `now`, and the hold's note when the last
    /// answer (`previous`, the reading published before this round) stands in for it. A failure within
    /// `hold` of the last answer repeats that answer; any other failure is `Unknown`, and forgets it.
    fn after(
        &mut self,
        result: Result<Vec<IdleSeries>, QueryError>,
        now: jiff::Timestamp,
        hold: Duration,
        previous: Option<&Round>,
    ) -> (Reading, Option<String>) {
        let error = match result {
            Ok(idle) => {
                self.0 = Some(now);
                return (Reading::Current(idle), None);
            }
            Err(e) => e.to_string(),
        };
        let until = self.0.and_then(|at| {
            let until = at
                .checked_add(jiff::SignedDuration::try_from(hold).ok()?)
                .ok()?;
            (now < until).then_some((at, until))
        });
        match (until, previous.map(|p| &p.reading)) {
            (Some((at, until)), Some(Reading::Current(idle))) => {
                let second = |t: jiff::Timestamp| t.round(jiff::Unit::Second).unwrap_or(t);
                let note = format!(
                    "the latest round failed ({error}); these figures are the answer of {}, held until {}",
                    second(at),
                    second(until)
                );
                (Reading::Current(idle.clone()), Some(note))
            }
            _ => {
                self.0 = None;
                (Reading::Unknown(error), None)
            }
        }
    }
}

/// The rule as `status.utilization.message` says it.
fn rule(query: &IdleQuery) -> String {
    format!(
        "idle: below {}% through {}, by {} (MIG instances' too), else {}",
        query.below * 100.0,
        promql::duration(query.window),
        promql::GR_ENGINE_ACTIVE,
        promql::GPU_UTIL
    )
}

/// One round's idle series (and busy ones of `shared` nodes), each with its `since`.
async fn idle_series(
    client: &Prometheus,
    config: &UtilizationConfig,
    shared: &[String],
    since: &mut IdleSince,
    now: jiff::Timestamp,
) -> Result<Vec<IdleSeries>, QueryError> {
    let answer = round(client, config, shared, now).await?;
    Ok(since.mark(&answer.samples()?, now, config.query.window))
}

/// One round: the count, refused past the bound, then the series' answer.
async fn round(
    client: &Prometheus,
    config: &UtilizationConfig,
    shared: &[String],
    now: jiff::Timestamp,
) -> Result<Answer, QueryError> {
    let time = now.as_second();
    let count = client.query(&config.query.count(shared), time).await?;
    let idle = count.samples()?.first().map_or(0.0, |s| s.value);
    if idle > config.max_series as f64 {
        return Err(QueryError::TooLarge(format!(
            "{idle} idle GPU series is more than --utilization-max-series={}; not fetched (raise the bound, \
             or narrow the series with --utilization-selector)",
            config.max_series
        )));
    }
    let answer = client.query(&config.query.with_busy(shared), time).await?;
    Ok(answer)
}

/// When each idle series was first found idle: the start of that round's window. Kept across rounds while the
/// series stays idle, and through failed rounds; forgotten once a round answers without it. A series is known
/// by a 64-bit hash of its labels: two series of one answer sharing a hash (odds near 1 in 10^9 at 100,000
/// series) would share a `since`, nothing worse.
#[derive(Debug, Default)]
pub struct IdleSince(HashMap<u64, jiff::Timestamp>);

impl IdleSince {
    /// The idle series of a round that answered, each with its `since`, sorted.
    pub fn mark(
        &mut self,
        idle: &[Sample<'_>],
        now: jiff::Timestamp,
        window: Duration,
    ) -> Vec<IdleSeries> {
        let start =
            jiff::Timestamp::from_second(now.as_second() - window.as_secs() as i64).unwrap_or(now);
        let mut seen = HashMap::with_capacity(idle.len());
        let mut series: Vec<IdleSeries> = idle
            .iter()
            .map(|sample| {
                let mut hasher = std::hash::DefaultHasher::new();
                sample.labels.hash(&mut hasher);
                let key = hasher.finish();
                let since = self.0.get(&key).copied().unwrap_or(start);
                seen.insert(key, since);
                IdleSeries::of_labels(|name| sample.labels.get(name).map(|v| v.as_ref()), since)
            })
            .collect();
        self.0 = seen;
        series.sort_unstable();
        series
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_series_keeps_the_since_it_was_first_found_idle_with() {
        let labels = |pod: &'static str| Sample {
            labels: [("namespace", "ml"), ("pod", pod)]
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            value: 0.0,
        };
        let at = |s| jiff::Timestamp::from_second(s).unwrap();
        let window = Duration::from_secs(1800);
        let mut since = IdleSince::default();
        let first = since.mark(&[labels("a")], at(10_000), window);
        assert_eq!(first[0].since, at(8_200));
        let again = since.mark(&[labels("a"), labels("b")], at(10_060), window);
        assert_eq!(again[0].since, at(8_200), "unchanged while idle");
        assert_eq!(again[1].since, at(8_260));
        // `a` was busy for a round: found idle again, it starts over.
        since.mark(&[labels("b")], at(10_120), window);
        let later = since.mark(&[labels("a"), labels("b")], at(10_180), window);
        assert_eq!(later[0].since, at(8_380));
        assert_eq!(later[1].since, at(8_260));
    }

    #[test]
    fn the_store_says_whether_the_activity_changed() {
        let store = UtilizationStore::default();
        let activity = Round::default();
        assert!(store.set(activity.clone()));
        assert!(!store.set(activity), "the same activity changes nothing");
        assert!(store.state().is_some());
    }

    /// A failed round within the hold repeats the last answer and says so; past the hold, or with no answer
    /// before it, the reading is `Unknown`; an answer ends the hold.
    #[test]
    fn the_last_answer_stands_through_the_hold_then_the_figures_are_unknown() {
        let at = |s| jiff::Timestamp::from_second(s).unwrap();
        let hold = Duration::from_secs(300);
        let timeout = || {
            Err(QueryError::Unreachable {
                url: "http://prometheus:9090".into(),
                reason: "no answer within 10s".into(),
            })
        };
        let idle = vec![IdleSeries::of_labels(
            |name| (name == "pod").then_some("a"),
            at(1_000),
        )];
        let published = |reading: Reading, held: Option<String>| Round {
            reading,
            held,
            ..Round::default()
        };
        let mut last = LastAnswer::default();

        let (reading, held) = last.after(timeout(), at(10_000), hold, None);
        assert!(
            matches!(reading, Reading::Unknown(_)) && held.is_none(),
            "no answer yet"
        );

        let (reading, held) = last.after(Ok(idle.clone()), at(10_000), hold, None);
        assert_eq!((&reading, &held), (&Reading::Current(idle.clone()), &None));
        let answered = published(reading, held);

        let (reading, held) = last.after(timeout(), at(10_060), hold, Some(&answered));
        assert_eq!(reading, Reading::Current(idle.clone()), "the answer stands");
        let note = held.expect("the hold says so");
        assert!(
            note.contains("no answer within 10s")
                && note.contains("1970-01-01T02:46:40Z")
                && note.contains("held until 1970-01-01T02:51:40Z"),
            "{note}"
        );
        let holding = published(reading, Some(note.clone()));
        let (again, held) = last.after(timeout(), at(10_200), hold, Some(&holding));
        assert_eq!(
            (again, held.as_ref()),
            (Reading::Current(idle.clone()), Some(&note)),
            "the same failure through the hold: the same activity, so nothing is rewritten"
        );

        let (reading, held) = last.after(timeout(), at(10_300), hold, Some(&holding));
        assert!(matches!(reading, Reading::Unknown(ref e) if e.contains("no answer within 10s")));
        assert!(held.is_none(), "past the hold: Unknown, withheld");
        let (reading, _) = last.after(timeout(), at(10_301), hold, Some(&answered));
        assert!(
            matches!(reading, Reading::Unknown(_)),
            "and stays so until an answer"
        );

        let mut none = LastAnswer::default();
        none.after(Ok(idle), at(10_000), Duration::ZERO, None);
        let (reading, _) = none.after(timeout(), at(10_001), Duration::ZERO, Some(&answered));
        assert!(
            matches!(reading, Reading::Unknown(_)),
            "hold 0s: Unknown at once"
        );
    }
}
