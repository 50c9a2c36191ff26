//! target/soak/report.json and the table (report.txt, also printed).

use serde_json::{Value, json};
use testkit::rss::{Leak, RssSample};
use testkit::settings::soak::Settings;

use crate::churn::ChurnStats;
use crate::faults::Injected;

/// Everything the run found.
pub struct Outcome {
    pub faults: Vec<Injected>,
    pub churn: ChurnStats,
    pub converged_after_last_fault: Option<f64>,
    pub final_difference: Option<String>,
    /// The status's `omittedNodes` at the final comparison: GPU nodes its budget left out of `nodes[]`.
    pub status_omitted_nodes: u64,
    pub quiet_writes: u64,
    pub quiet_detail: String,
    pub panics: Vec<String>,
    pub self_exits: Vec<String>,
    pub rss: Vec<RssSample>,
    pub dra: String,
    pub gpu_nodes: usize,
    pub initial_pods: usize,
    pub started: String,
    pub finished: String,
}

impl Outcome {
    pub fn passed(&self, s: &Settings) -> bool {
        let leak_ok = self.leak(s).is_none_or(|l| l.held());
        self.final_difference.is_none()
            && self.quiet_writes == 0
            && self.panics.is_empty()
            && self.converged_after_last_fault.is_some()
            && leak_ok
    }

    pub fn leak(&self, s: &Settings) -> Option<Leak> {
        Leak::of(&self.rss, s.rss_base.as_secs_f64(), s.rss_tolerance)
    }
}

pub fn json(s: &Settings, o: &Outcome) -> Value {
    let by_kind = |m: &std::collections::BTreeMap<crate::churn::ChurnKind, u64>| -> Value {
        m.iter()
            .map(|(k, v)| (k.name().to_owned(), json!(v)))
            .collect()
    };
    json!({
        "seed": s.seed(),
        "seedFrom": if s.seed_given() { "SOAK_SEED" } else { "drawn (repeat with SOAK_SEED)" },
        "started": o.started,
        "finished": o.finished,
        "soakSecs": s.secs,
        "nodes": s.nodes,
        "gpuNodes": o.gpu_nodes,
        "initialPods": o.initial_pods,
        "churnRatePerSec": s.churn_rate,
        "faultEverySecs": s.fault_every.as_secs(),
        "faults": o.faults,
        "changes": {
            "total": o.churn.total_made(),
            "made": by_kind(&o.churn.made),
            "failed": by_kind(&o.churn.failed),
            "skippedAllSlotsBusy": o.churn.skipped,
            "nothingToDo": by_kind(&o.churn.idle),
        },
        "dra": o.dra,
        "convergedAfterLastFaultSecs": o.converged_after_last_fault,
        "finalEqualsScan": o.final_difference.is_none(),
        "firstDifference": o.final_difference,
        "statusNodesBudget": s.status_nodes_budget,
        "statusOmittedNodes": o.status_omitted_nodes,
        "quietSecs": s.quiet.as_secs(),
        "quietWrites": o.quiet_writes,
        "quietWriteDetail": o.quiet_detail,
        "panics": o.panics,
        "operatorSelfExits": o.self_exits,
        "rssMiB": o.rss,
        "rssLeak": o.leak(s),
        "passed": o.passed(s),
    })
}

fn mib(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}

pub fn table(s: &Settings, o: &Outcome) -> String {
    let mut t = format!(
        "gpu-inventory-operator soak (seed {}, {} s, {} nodes / {} GPU nodes, {} pods at start, churn {}/s)\n\n",
        s.seed(),
        s.secs,
        s.nodes,
        o.gpu_nodes,
        o.initial_pods,
        s.churn_rate
    );
    t += "  #   at (s)  kind        hold (s)  whole again (s)  detail\n";
    for (i, f) in o.faults.iter().enumerate() {
        t += &format!(
            "{:>3} {:>8.1}  {:<10} {:>8.1} {:>16.1}  {}\n",
            i + 1,
            f.at_secs,
            format!("{:?}", f.kind),
            f.hold_secs,
            f.recovered_at_secs,
            f.detail
        );
    }
    let made: Vec<String> = o
        .churn
        .made
        .iter()
        .map(|(k, v)| format!("{}={v}", k.name()))
        .collect();
    let failed: u64 = o.churn.failed.values().sum();
    let rows: Vec<(&str, String)> = vec![
        ("faults injected", o.faults.len().to_string()),
        (
            "changes made",
            format!("{} ({})", o.churn.total_made(), made.join(", ")),
        ),
        (
            "changes failed / skipped",
            format!("{failed} / {}", o.churn.skipped),
        ),
        (
            "converged after the last fault (s)",
            o.converged_after_last_fault
                .map_or("never".into(), |v| format!("{v:.1}")),
        ),
        (
            "final outputs equal a fresh scan",
            o.final_difference
                .as_deref()
                .map_or("yes".into(), |d| format!("NO: {d}")),
        ),
        (
            "writes in the quiet period",
            format!(
                "{} ({} s){}",
                o.quiet_writes,
                s.quiet.as_secs(),
                if o.quiet_detail.is_empty() {
                    String::new()
                } else {
                    format!(": {}", o.quiet_detail)
                }
            ),
        ),
        (
            "status nodes[] cut (budget / omitted)",
            format!("{} / {}", s.status_nodes_budget, o.status_omitted_nodes),
        ),
        ("panics in the logs", o.panics.len().to_string()),
        (
            "operator exits on their own (restarted)",
            o.self_exits.len().to_string(),
        ),
    ];
    t += "\n";
    for (k, v) in rows {
        t += &format!("{k:<42} {v}\n");
    }
    match o.leak(s) {
        Some(l) => {
            let verdict = if l.within_tolerance {
                "within"
            } else {
                "OUTSIDE"
            };
            let process = if l.same_process {
                "same process"
            } else {
                "leader changed in between: two processes, not a leak measure"
            };
            t += &format!(
                "{:<42} {} at {:.0} s, {} at the end: ratio {:.3} ({verdict} {:.0} %, {process})\n",
                "leader RSS (MiB)",
                mib(Some(l.base_mib)),
                l.base_secs,
                mib(Some(l.end_mib)),
                l.ratio,
                s.rss_tolerance * 100.0,
            );
            t += &match &l.longest_leading {
                Some(p) => format!(
                    "{:<42} pid {} led {:.0}-{:.0} s: {} at {:.0} s, {} at {:.0} s: ratio {:.3} ({})\n",
                    "longest leadership RSS (MiB)",
                    p.pid,
                    p.led_from_secs,
                    p.last_secs,
                    mib(Some(p.base_mib)),
                    p.base_secs,
                    mib(Some(p.last_mib)),
                    p.last_secs,
                    p.ratio,
                    if p.within_tolerance {
                        "within"
                    } else {
                        "OUTSIDE"
                    }
                ),
                None => format!(
                    "{:<42} no replica led {} s without a break: no leak check could be made\n",
                    "longest leadership RSS",
                    s.rss_base.as_secs()
                ),
            };
        }
        None => {
            let last = o.rss.last();
            t += &format!(
                "{:<42} end: leader {}, standby {} (run shorter than the {} s base sample: no leak ratio)\n",
                "RSS (MiB)",
                mib(last.and_then(|r| r.leader_mib)),
                mib(last.and_then(|r| r.standby_mib)),
                s.rss_base.as_secs()
            );
        }
    }
    t += &format!("{:<42} {}\n", "DRA", o.dra);
    t += &format!(
        "{:<42} {}\n",
        "result",
        if o.passed(s) { "PASS" } else { "FAIL" }
    );
    t
}
