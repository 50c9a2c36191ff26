//! Kueue's decision on a Workload, read from its status: quota reserved with a topology assignment, or
//! pending with Kueue's reason. The assignment is v1beta2's compact form (apis/kueue/v1beta2/workload_types.go,
//! `TopologyAssignment`): `levels`, then `slices`, each covering `domainCount` domains, with one value per level
//! either `universal` (the same for all of them) or `individual` (`prefix` + each of `roots` + `suffix`), and
//! pod counts either `universal` or `individual`. Kueue v0.17 lists only the lowest level when it is
//! `kubernetes.io/hostname`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::objects::condition;

/// The node label of the lowest level of every referee topology.
pub const HOSTNAME: &str = "kubernetes.io/hostname";

/// How the message of a Workload Kueue's scheduler could not place begins
/// (pkg/scheduler/flavorassigner/flavorassigner.go).
const SCHEDULER_REFUSAL: &str = "couldn't assign flavors to pod set";

/// What Kueue decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Quota reserved: the pods per host of its topology assignment.
    Admitted(BTreeMap<String, u32>),
    /// Not admitted: the message of its `QuotaReserved=False` condition.
    Refused(String),
}

impl Decision {
    /// The hosts of an admitted Workload; panics with Kueue's reason when it was refused.
    pub fn hosts(&self) -> &BTreeMap<String, u32> {
        match self {
            Decision::Admitted(hosts) => hosts,
            Decision::Refused(why) => panic!("Kueue refused the Workload: {why}"),
        }
    }
}

/// Kueue's decision in a Workload's JSON; `Err` (what is there instead) while it has not decided.
pub fn decision_of(workload: &Value) -> Result<Decision, String> {
    match condition(workload, "QuotaReserved") {
        Some((status, _, _)) if status == "True" => {
            let assignments = workload
                .pointer("/status/admission/podSetAssignments")
                .and_then(Value::as_array)
                .ok_or("QuotaReserved, but no status.admission.podSetAssignments")?;
            let mut hosts = BTreeMap::new();
            for assignment in assignments {
                let topology = assignment.get("topologyAssignment").ok_or_else(|| {
                    format!("a PodSet admitted without a topologyAssignment: {assignment}")
                })?;
                for (host, pods) in pods_per_host(topology)? {
                    *hosts.entry(host).or_insert(0) += pods;
                }
            }
            Ok(Decision::Admitted(hosts))
        }
        // The scheduler's verdict; other reasons to be pending (a queue Kueue has not seen yet) are no decision.
        Some((status, reason, message))
            if status == "False" && message.starts_with(SCHEDULER_REFUSAL) =>
        {
            Ok(Decision::Refused(format!("{reason}: {message}")))
        }
        Some((status, reason, message)) => {
            Err(format!("QuotaReserved {status} {reason}: {message}"))
        }
        None => Err("no QuotaReserved condition yet".to_owned()),
    }
}

/// The hosts of a topology assignment and the pods each gets.
pub fn pods_per_host(topology: &Value) -> Result<Vec<(String, u32)>, String> {
    let levels: Vec<&str> = topology["levels"]
        .as_array()
        .ok_or_else(|| format!("no levels in {topology}"))?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let host_level = levels
        .iter()
        .position(|l| *l == HOSTNAME)
        .ok_or_else(|| format!("no {HOSTNAME} level in {levels:?}"))?;
    let mut hosts = Vec::new();
    for slice in topology["slices"]
        .as_array()
        .ok_or_else(|| format!("no slices in {topology}"))?
    {
        let count = slice["domainCount"]
            .as_u64()
            .ok_or_else(|| format!("no domainCount in {slice}"))? as usize;
        let values = level_values(&slice["valuesPerLevel"][host_level], count)?;
        let pods = pod_counts(&slice["podCounts"], count)?;
        hosts.extend(values.into_iter().zip(pods));
    }
    Ok(hosts)
}

/// The `count` values of one level of a slice.
fn level_values(level: &Value, count: usize) -> Result<Vec<String>, String> {
    if let Some(value) = level["universal"].as_str() {
        return Ok(vec![value.to_owned(); count]);
    }
    let individual = &level["individual"];
    let roots = individual["roots"]
        .as_array()
        .ok_or_else(|| format!("neither universal nor individual.roots in {level}"))?;
    let prefix = individual["prefix"].as_str().unwrap_or("");
    let suffix = individual["suffix"].as_str().unwrap_or("");
    let values: Vec<String> = roots
        .iter()
        .map(|r| format!("{prefix}{}{suffix}", r.as_str().unwrap_or_default()))
        .collect();
    if values.len() != count {
        return Err(format!(
            "{} roots for {count} domains in {level}",
            values.len()
        ));
    }
    Ok(values)
}

/// The `count` pod counts of a slice.
fn pod_counts(counts: &Value, count: usize) -> Result<Vec<u32>, String> {
    if let Some(pods) = counts["universal"].as_u64() {
        return Ok(vec![pods as u32; count]);
    }
    let pods: Vec<u32> = counts["individual"]
        .as_array()
        .ok_or_else(|| format!("neither universal nor individual in podCounts {counts}"))?
        .iter()
        .map(|p| p.as_u64().unwrap_or_default() as u32)
        .collect();
    if pods.len() != count {
        return Err(format!(
            "{} pod counts for {count} domains in {counts}",
            pods.len()
        ));
    }
    Ok(pods)
}
