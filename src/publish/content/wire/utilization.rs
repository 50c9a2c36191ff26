//! The held GPUs' activity both ways: a node's idle holdings and the inventory's report as the wire spells
//! them, and read back.

use std::collections::BTreeMap;

use crate::crd::{IdleEntry, UtilizationStatus};
use crate::inventory::model::{ClaimRef, Holder, IdleHolding, UtilizationReport, UtilizationState};

/// A node's idle holding.
pub fn idle_entry(idle: &IdleHolding) -> IdleEntry {
    let (pod, claim) = match &idle.holder {
        Holder::Pod { namespace, name } => (Some(format!("{namespace}/{name}")), None),
        Holder::Claim(claim) => (None, Some(claim.to_string())),
    };
    IdleEntry {
        pod,
        claim,
        resource: idle.resource.clone(),
        amount: idle.amount,
        idle_since: idle.idle_since.to_string(),
    }
}

/// The inventory's report.
pub fn utilization_status(report: &UtilizationReport) -> UtilizationStatus {
    UtilizationStatus {
        source: report.source.clone(),
        window: report.window.clone(),
        state: report.state.as_str().to_owned(),
        message: report.message.clone(),
        idle: report.idle.clone(),
    }
}

/// A published idle entry read back; `None` when it names no holder or its time does not parse (another
/// version wrote it).
pub fn read_idle_entry(entry: &IdleEntry) -> Option<IdleHolding> {
    let split = |text: &str| {
        text.split_once('/')
            .map(|(ns, name)| (ns.to_owned(), name.to_owned()))
    };
    let holder = match (&entry.pod, &entry.claim) {
        (Some(pod), _) => split(pod).map(|(namespace, name)| Holder::Pod { namespace, name })?,
        (None, Some(claim)) => {
            split(claim).map(|(namespace, name)| Holder::Claim(ClaimRef { namespace, name }))?
        }
        (None, None) => return None,
    };
    Some(IdleHolding {
        holder,
        resource: entry.resource.clone(),
        amount: entry.amount,
        idle_since: entry.idle_since.parse().ok()?,
    })
}

/// A published report read back, with the namespaces' idle units from `status.namespaces[].idle`.
pub fn read_utilization(
    status: &UtilizationStatus,
    namespaces: BTreeMap<String, BTreeMap<String, u64>>,
) -> UtilizationReport {
    UtilizationReport {
        source: status.source.clone(),
        window: status.window.clone(),
        state: match status.state.as_str() {
            "Current" => UtilizationState::Current,
            _ => UtilizationState::Unknown,
        },
        message: status.message.clone(),
        namespaces,
        idle: status.idle.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_holdings_and_the_report_read_back_as_written() {
        let idle = IdleHolding {
            holder: Holder::Claim(ClaimRef {
                namespace: "ml".into(),
                name: "c1".into(),
            }),
            resource: "gpu.nvidia.com/gpu".into(),
            amount: 1,
            idle_since: jiff::Timestamp::from_second(1_790_000_000).unwrap(),
        };
        let entry = idle_entry(&idle);
        assert_eq!(entry.claim.as_deref(), Some("ml/c1"));
        assert_eq!(entry.idle_since, "2026-09-21T14:13:20Z");
        assert_eq!(read_idle_entry(&entry), Some(idle));
        let report = UtilizationReport {
            source: "http://prometheus:9090".into(),
            window: "30m".into(),
            state: UtilizationState::Current,
            message: "rule".into(),
            namespaces: BTreeMap::from([(
                "ml".into(),
                BTreeMap::from([("nvidia.com/gpu".into(), 2)]),
            )]),
            idle: BTreeMap::from([("nvidia.com/gpu".into(), 2)]),
        };
        let status = utilization_status(&report);
        assert_eq!(read_utilization(&status, report.namespaces.clone()), report);
        let broken = IdleEntry {
            pod: Some("no-slash".into()),
            ..entry
        };
        assert_eq!(read_idle_entry(&broken), None);
    }
}
