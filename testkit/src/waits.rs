//! How long a test may wait for something, derived from why it happens.
//!
//! A wait follows the thing awaited (it polls for it and returns as soon as it is there); its deadline is only a
//! guard, and it is derived from the cause of the wait: a period of the operator's (its `--requeue`, a retry
//! backoff, a lease), of the cluster's (a monitor pass, a heartbeat, a resync), and the reactions in between,
//! each given [`LOAD_ALLOWANCE`]. A [`Deadline`] carries its limit and that cause, so a wait that runs out
//! says what it allowed for and why.
//!
//! The operator's retry policies (`runtime::backoff`) and the plugin's first-list timeout are the operator's own
//! constants, named here; its flags are read with its own command line ([`OperatorPeriods::of`]), defaults
//! included.

use std::fmt;
use std::time::Duration;

use clap::Parser;

use crate::lib_api::{FIRST_LIST_TIMEOUT, OperatorCli, OperatorCommand, RunArgs, backoff};

/// What one reaction may take on a loaded machine: a watch event travelling through the API server to a
/// controller (the operator, the scheduler, a controller-manager loop, KWOK) and its write coming back, or a
/// process starting and making its first requests. No period governs it, only load: on 2 cores shared by the
/// whole integration suite (and a benchmark), the operator's first status write came 0.4 s after its start in
/// the median and 2.8 s at the 90th percentile (the 290 operator logs of the suite's runs on this machine,
/// target/test-logs, 2026-12-02); 15 s is five times that.
pub const LOAD_ALLOWANCE: Duration = Duration::from_secs(15);

/// kube-scheduler's `podMaxBackoffSeconds` (the KubeSchedulerConfiguration default; hack/local-cluster.sh
/// passes no `--config`): a pod that could not be placed is tried again at most this long after the cluster
/// event that may let it fit (a taint lifted, a node added).
pub const SCHEDULER_MAX_BACKOFF: Duration = Duration::from_secs(10);

/// How often kube-controller-manager's garbage collector rediscovers the served resources (30 s, fixed in the
/// controller manager): the objects of a CRD installed (or reinstalled) since its last look are not collected
/// before its next one.
pub const GC_RESYNC: Duration = Duration::from_secs(30);

/// How long `kubectl gpu-inventory --watch` waits for its first full list before it gives up and says so: the
/// plugin's own constant.
pub const PLUGIN_FIRST_LIST_TIMEOUT: Duration = FIRST_LIST_TIMEOUT;

/// How long a wait may take, and why that long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadline {
    limit: Duration,
    cause: String,
}

impl Deadline {
    /// A deadline of `limit`, for the reason `cause` (the period or reaction it covers, and where it comes from).
    pub fn new(limit: Duration, cause: impl Into<String>) -> Deadline {
        Deadline {
            limit,
            cause: cause.into(),
        }
    }

    /// One reaction of `who` on a loaded machine ([`LOAD_ALLOWANCE`]).
    pub fn reaction(who: &str) -> Deadline {
        Deadline::new(
            LOAD_ALLOWANCE,
            format!("{who}: one reaction on a loaded machine"),
        )
    }

    /// The limit.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// Why the limit is what it is.
    pub fn cause(&self) -> &str {
        &self.cause
    }

    /// `self`, then `next`: the limits add up, the causes are both named.
    pub fn then(self, next: Deadline) -> Deadline {
        Deadline {
            limit: self.limit.saturating_add(next.limit),
            cause: format!("{} + {}", self.cause, next.cause),
        }
    }

    /// The longer of the two (for a wait on whichever of two causes comes last).
    pub fn or_longer(self, other: Deadline) -> Deadline {
        if other.limit > self.limit {
            other
        } else {
            self
        }
    }
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({})", self.limit, self.cause)
    }
}

impl From<Duration> for Deadline {
    /// A bare limit, for callers that have not named their wait's cause yet.
    fn from(limit: Duration) -> Deadline {
        Deadline::new(limit, "a fixed limit; its cause is not named")
    }
}

impl From<&Deadline> for Deadline {
    fn from(deadline: &Deadline) -> Deadline {
        deadline.clone()
    }
}

/// One of the operator's retry policies (`runtime::backoff`), named: `first` delay, doubling, at most `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The policy's name in src/runtime/backoff.rs.
    pub name: &'static str,
    /// The first delay.
    pub first: Duration,
    /// The longest delay.
    pub cap: Duration,
}

/// The operator's watches: a failed watch or list is retried after 0.5 s, 1 s, 2 s, 4 s, then every 5 s.
pub const WATCH_BACKOFF: RetryPolicy = RetryPolicy::of("WATCH", backoff::WATCH);

/// A write the API server refused: 1 s doubling to 60 s.
pub const RECONCILE_BACKOFF: RetryPolicy = RetryPolicy::of("RECONCILE", backoff::RECONCILE);

/// Waiting for an unreachable API server at start-up: 1 s doubling to 10 s.
pub const API_SERVER_STARTUP_BACKOFF: RetryPolicy =
    RetryPolicy::of("API_SERVER_STARTUP", backoff::API_SERVER_STARTUP);

/// Reinstalling a deleted CRD: 1 s doubling to 60 s.
pub const CRD_REINSTALL_BACKOFF: RetryPolicy =
    RetryPolicy::of("CRD_REINSTALL", backoff::CRD_REINSTALL);

/// Setting up leader election again after the Lease could not be read or written: 1 s doubling to 30 s.
pub const LEADER_ELECTION_BACKOFF: RetryPolicy =
    RetryPolicy::of("LEADER_ELECTION", backoff::LEADER_ELECTION);

/// Every retry policy of the operator the tests wait on.
pub const OPERATOR_BACKOFFS: [RetryPolicy; 5] = [
    WATCH_BACKOFF,
    RECONCILE_BACKOFF,
    API_SERVER_STARTUP_BACKOFF,
    CRD_REINSTALL_BACKOFF,
    LEADER_ELECTION_BACKOFF,
];

impl RetryPolicy {
    /// The operator's `policy`, under its name.
    pub const fn of(name: &'static str, policy: backoff::Policy) -> RetryPolicy {
        RetryPolicy {
            name,
            first: policy.first,
            cap: policy.cap,
        }
    }

    /// The delays before the 1st, 2nd, ... retry.
    pub fn delays(self) -> impl Iterator<Item = Duration> {
        std::iter::successors(Some(self.first), move |d| {
            Some(d.saturating_mul(2).min(self.cap))
        })
    }

    /// The longest the next attempt can still be away when the retries have been going on for at most
    /// `failing_for`: the delay in effect at that point of the schedule (delays never shrink, so a schedule
    /// that started later is at the same delay or an earlier, shorter one).
    pub fn longest_wait_after(self, failing_for: Duration) -> Duration {
        let mut at = Duration::ZERO;
        for delay in self.delays() {
            at = at.saturating_add(delay);
            if at > failing_for || delay == self.cap {
                return delay;
            }
        }
        self.cap
    }

    /// The deadline for the next attempt of `what` after retrying for at most `failing_for`, plus the reaction
    /// that attempt starts.
    pub fn next_attempt(self, what: &str, failing_for: Duration) -> Deadline {
        let wait = self.longest_wait_after(failing_for);
        Deadline::new(
            wait,
            format!(
                "{what}: its {} backoff ({:?} doubling to {:?}) after {:.0?} of retries is at most {wait:?}",
                self.name, self.first, self.cap, failing_for
            ),
        )
        .then(Deadline::reaction(what))
    }
}

/// The periods of one operator process, read from its command line with the operator's own parser (flags the
/// test left out are the operator's defaults, environment variables included).
#[derive(Clone, Debug)]
pub struct OperatorPeriods {
    /// `--requeue`: every inventory is reconciled at least this often.
    pub requeue: Duration,
    /// `--leader-elect`.
    pub leader_elect: bool,
    /// `--lease-duration`.
    pub lease_duration: Duration,
    /// `--readiness-grace`: /readyz turns 503 once the API server has failed this long.
    pub readiness_grace: Duration,
    /// `--startup-timeout`: how long an unreachable API server is retried at start-up.
    pub startup_timeout: Duration,
}

impl OperatorPeriods {
    /// The periods of an operator started with `args` (without the program name; `run` first or not).
    pub fn of(args: &[String]) -> OperatorPeriods {
        let argv = std::iter::once("gpu-inventory-operator").chain(args.iter().map(String::as_str));
        let cli = OperatorCli::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("the operator's arguments {args:?} do not parse: {e}"));
        let run: RunArgs = match cli.command {
            Some(OperatorCommand::Run(run)) => *run,
            None => cli.run,
            Some(other) => panic!("not `run`: {other:?}"),
        };
        OperatorPeriods {
            requeue: run.requeue,
            leader_elect: run.leader_elect,
            lease_duration: run.lease_duration,
            readiness_grace: run.readiness_grace,
            startup_timeout: run.startup_timeout,
        }
    }

    /// From the start of the process to its controllers running: connecting and the first lists (one
    /// reaction); with `--leader-elect`, also a lease left by a killed holder running out (`--lease-duration`)
    /// and the lease manager looking again within its grace (a third of it, src/runtime/leader.rs).
    pub fn start_up(&self) -> Deadline {
        let start = Deadline::reaction("the operator's start-up (connect, CRDs, first lists)");
        if !self.leader_elect {
            return start;
        }
        let lease = self.lease_duration.max(Duration::from_secs(2));
        let grace = (lease / 3).max(Duration::from_secs(1));
        start.then(Deadline::new(
            lease + grace,
            format!("a stale leader Lease expiring (--lease-duration {lease:?}) and its grace ({grace:?})"),
        ))
    }

    /// One periodic pass (`--requeue`): whatever the change stream did not bring is reconciled by then.
    pub fn requeue(&self) -> Deadline {
        Deadline::new(
            self.requeue,
            format!("one periodic pass (--requeue {:?})", self.requeue),
        )
    }

    /// A change reaching what the operator publishes: one reaction, and one periodic pass as the backstop.
    pub fn follow(&self) -> Deadline {
        Deadline::reaction("the operator following a change").then(self.requeue())
    }

    /// From the start of the process to its first complete publication.
    pub fn converge(&self) -> Deadline {
        self.start_up().then(self.follow())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn deadlines_add_up_and_name_their_causes() {
        let d = Deadline::new(secs(2), "a pass").then(Deadline::reaction("the operator"));
        assert_eq!(d.limit(), secs(2) + LOAD_ALLOWANCE);
        assert_eq!(
            d.to_string(),
            "17s (a pass + the operator: one reaction on a loaded machine)"
        );
        let longer = Deadline::new(secs(1), "short").or_longer(Deadline::new(secs(3), "long"));
        assert_eq!(longer.cause(), "long");
    }

    #[test]
    fn the_next_attempt_is_at_most_the_delay_in_effect() {
        let delays: Vec<u64> = RECONCILE_BACKOFF
            .delays()
            .take(8)
            .map(|d| d.as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        // Retries at 1, 3, 7, 15, 31, 63, 123 s after the first failure.
        let wait = |s| RECONCILE_BACKOFF.longest_wait_after(secs(s)).as_secs();
        assert_eq!(
            [wait(0), wait(1), wait(6), wait(15), wait(40), wait(500)],
            [1, 2, 4, 16, 32, 60]
        );
        assert_eq!(WATCH_BACKOFF.longest_wait_after(secs(3600)), secs(5));
    }

    #[test]
    fn periods_come_from_the_operators_own_flags() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let p = OperatorPeriods::of(&args(&[
            "run",
            "--requeue",
            "2s",
            "--readiness-grace",
            "5s",
        ]));
        assert_eq!((p.requeue, p.readiness_grace), (secs(2), secs(5)));
        assert!(!p.leader_elect);
        assert_eq!(p.start_up().limit(), LOAD_ALLOWANCE);
        assert_eq!(p.converge().limit(), 2 * LOAD_ALLOWANCE + secs(2));
        let p = OperatorPeriods::of(&args(&["--leader-elect", "--lease-duration", "6s"]));
        assert_eq!(p.start_up().limit(), LOAD_ALLOWANCE + secs(8));
        assert_eq!(p.requeue, secs(30), "the operator's default");
    }
}
