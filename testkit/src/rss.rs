//! RSS samples of the two replicas and the leak check.
//!
//! The check: the leader's RSS at the end within SOAK_RSS_TOLERANCE of the leader's after the first
//! SOAK_RSS_BASE_SECS. The soak kills the leader, so those two samples are often two processes, and a process
//! promoted a moment before the base sample has not yet built its publishers' working set (a new leader climbs
//! from the standby's ~40 MiB to ~70 MiB in its first minutes at 5,000 nodes): then the ratio measures a
//! promotion, not a leak. So the check that decides is the same check made per process: the replica that led
//! longest without a break, its RSS SOAK_RSS_BASE_SECS into its leadership against its last sample as leader.
//! With no leader change that is the check itself (base 300 s, end of the run). The two samples
//! are reported beside it. A run long enough for the check in which no replica led that long fails: no leak
//! check could be made.

use serde::Serialize;

/// A size field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`: kB there), in MiB; None when the process is gone.
pub fn proc_status_mib(pid: u32, field: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// One sample: seconds into the window, each replica's VmRSS and pid.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RssSample {
    /// Seconds into the window.
    pub t: f64,
    /// The leader's VmRSS, MiB (None when the process was gone).
    pub leader_mib: Option<f64>,
    /// The standby's VmRSS, MiB.
    pub standby_mib: Option<f64>,
    /// The leader's pid.
    pub leader_pid: Option<u32>,
    /// The standby's pid.
    pub standby_pid: Option<u32>,
}

/// The leak checks.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leak {
    /// When the base sample was taken, seconds into the window.
    pub base_secs: f64,
    /// The leader's RSS at the base sample, MiB.
    pub base_mib: f64,
    /// The leader's RSS at the last sample, MiB.
    pub end_mib: f64,
    /// end / base.
    pub ratio: f64,
    /// Whether the ratio is within the tolerance of 1.
    pub within_tolerance: bool,
    /// Whether the same process led at both samples.
    pub same_process: bool,
    /// The same check on the replica that led longest, from `base` s into its leadership; None when none led
    /// past that.
    pub longest_leading: Option<ProcessRss>,
}

/// One process's RSS as leader: `base` s into its leadership and at its last sample as leader.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRss {
    /// The process.
    pub pid: u32,
    /// When its leadership began, seconds into the window.
    pub led_from_secs: f64,
    /// When its base sample was taken.
    pub base_secs: f64,
    /// Its RSS then, MiB.
    pub base_mib: f64,
    /// When its last sample as leader was taken.
    pub last_secs: f64,
    /// Its RSS then, MiB.
    pub last_mib: f64,
    /// last / base.
    pub ratio: f64,
    /// Whether the ratio is within the tolerance of 1.
    pub within_tolerance: bool,
}

impl Leak {
    /// From the samples: the first leader sample at or after `base` s, and the last; None when the run is
    /// shorter than that.
    pub fn of(samples: &[RssSample], base: f64, tolerance: f64) -> Option<Leak> {
        let first = samples
            .iter()
            .find(|r| r.t >= base && r.leader_mib.is_some())?;
        let last = samples.iter().rev().find(|r| r.leader_mib.is_some())?;
        if last.t <= first.t {
            return None;
        }
        let (base_mib, end_mib) = (first.leader_mib?, last.leader_mib?);
        let ratio = end_mib / base_mib;
        Some(Leak {
            base_secs: first.t,
            base_mib,
            end_mib,
            ratio,
            within_tolerance: within(ratio, tolerance),
            same_process: first.leader_pid == last.leader_pid,
            longest_leading: longest_leading(samples, base, tolerance),
        })
    }

    /// No leak shown: the longest leadership held its RSS.
    pub fn held(&self) -> bool {
        self.longest_leading
            .as_ref()
            .is_some_and(|p| p.within_tolerance)
    }
}

fn within(ratio: f64, tolerance: f64) -> bool {
    (ratio - 1.0).abs() <= tolerance
}

/// The longest unbroken run of samples with one pid as leader, checked from `base` s after its start to its end.
fn longest_leading(samples: &[RssSample], base: f64, tolerance: f64) -> Option<ProcessRss> {
    let (pid, run) = leaderships(samples)
        .into_iter()
        .max_by(|a, b| span(&a.1).total_cmp(&span(&b.1)))?;
    let led_from = run.first()?.0;
    let &(base_secs, base_mib) = run.iter().find(|(t, _)| *t >= led_from + base)?;
    let &(last_secs, last_mib) = run.last()?;
    if last_secs <= base_secs {
        return None;
    }
    let ratio = last_mib / base_mib;
    Some(ProcessRss {
        pid,
        led_from_secs: led_from,
        base_secs,
        base_mib,
        last_secs,
        last_mib,
        ratio,
        within_tolerance: within(ratio, tolerance),
    })
}

/// Each unbroken leadership: the leader's pid and its (t, MiB) samples. A sample without a leader (an election
/// in progress) ends a run; a pid that leads again later starts a new one.
fn leaderships(samples: &[RssSample]) -> Vec<(u32, Vec<(f64, f64)>)> {
    let mut runs: Vec<(u32, Vec<(f64, f64)>)> = Vec::new();
    let mut current: Option<u32> = None;
    for r in samples {
        match (r.leader_pid, r.leader_mib) {
            (Some(pid), Some(mib)) => {
                if current != Some(pid) {
                    runs.push((pid, Vec::new()));
                    current = Some(pid);
                }
                if let Some((_, run)) = runs.last_mut() {
                    run.push((r.t, mib));
                }
            }
            _ => current = None,
        }
    }
    runs
}

fn span(series: &[(f64, f64)]) -> f64 {
    match (series.first(), series.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    }
}
