//! RSS samples of the two replicas and the leak check. The check the issue asks for: the leader's RSS at the
//! end within SOAK_RSS_TOLERANCE of the leader's after the first SOAK_RSS_BASE_SECS. A leader kill in between
//! makes those two different processes, so the same check is also made on the replica that lived longest
//! (its RSS SOAK_RSS_BASE_SECS after its first sample against its last), when it lived long enough.

use std::collections::BTreeMap;

use serde::Serialize;

/// One sample: seconds into the window, each replica's VmRSS and pid.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RssSample {
    pub t: f64,
    pub leader_mib: Option<f64>,
    pub standby_mib: Option<f64>,
    pub leader_pid: Option<u32>,
    pub standby_pid: Option<u32>,
}

/// The leak check.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leak {
    pub base_secs: f64,
    pub base_mib: f64,
    pub end_mib: f64,
    pub ratio: f64,
    pub within_tolerance: bool,
    /// Whether the same process led at both samples.
    pub same_process: bool,
    /// The same check on the longest-lived replica, if one lived past its base sample.
    pub longest_lived: Option<ProcessRss>,
}

/// One process's RSS: at its base sample and at its last.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessRss {
    pub pid: u32,
    pub first_secs: f64,
    pub base_secs: f64,
    pub base_mib: f64,
    pub last_secs: f64,
    pub last_mib: f64,
    pub ratio: f64,
    pub within_tolerance: bool,
}

impl Leak {
    /// From the samples: the first at or after `base` s, and the last; None when the run is shorter.
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
            within_tolerance: (ratio - 1.0).abs() <= tolerance,
            same_process: first.leader_pid == last.leader_pid,
            longest_lived: longest_lived(samples, base, tolerance),
        })
    }

    /// Both checks that could be made held.
    pub fn held(&self) -> bool {
        self.within_tolerance
            && self
                .longest_lived
                .as_ref()
                .is_none_or(|p| p.within_tolerance)
    }
}

/// The replica with the longest run of samples, checked from `base` s after its first sample to its last.
fn longest_lived(samples: &[RssSample], base: f64, tolerance: f64) -> Option<ProcessRss> {
    let mut by_pid: BTreeMap<u32, Vec<(f64, f64)>> = BTreeMap::new();
    for r in samples {
        for (pid, mib) in [(r.leader_pid, r.leader_mib), (r.standby_pid, r.standby_mib)] {
            if let (Some(pid), Some(mib)) = (pid, mib) {
                by_pid.entry(pid).or_default().push((r.t, mib));
            }
        }
    }
    let (pid, series) = by_pid
        .into_iter()
        .max_by(|a, b| span(&a.1).total_cmp(&span(&b.1)))?;
    let first = series.first()?.0;
    let &(base_secs, base_mib) = series.iter().find(|(t, _)| *t >= first + base)?;
    let &(last_secs, last_mib) = series.last()?;
    if last_secs <= base_secs {
        return None;
    }
    let ratio = last_mib / base_mib;
    Some(ProcessRss {
        pid,
        first_secs: first,
        base_secs,
        base_mib,
        last_secs,
        last_mib,
        ratio,
        within_tolerance: (ratio - 1.0).abs() <= tolerance,
    })
}

fn span(series: &[(f64, f64)]) -> f64 {
    match (series.first(), series.last()) {
        (Some(a), Some(b)) => b.0 - a.0,
        _ => 0.0,
    }
}
