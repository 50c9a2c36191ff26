//! The held GPUs' activity both ways: a node's idle holdings and the inventory's report as the wire spells
//! them, and read back.

use std::collections::BTreeMap;

use crate::crd::{IdleEntry, NamespaceUsage, UtilizationStatus};
use crate::inventory::model::{
    ClaimRef, Equivalent, Holder, IdleHolding, UtilizationReport, UtilizationState,
};

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
        gpu_equivalents: idle.equivalent_milli.map(Equivalent::decimal),
        idle_since: idle.idle_since.to_string(),
    }
}

/// A namespace's idle GPU-equivalents, in all and by product (`namespaces[].idleGpuEquivalents`,
/// `idleGpuEquivalentsByProduct`); none where the activity is not read or the namespace holds none idle.
pub fn idle_equivalents(
    utilization: Option<&UtilizationReport>,
    namespace: &str,
) -> (Option<String>, BTreeMap<String, String>) {
    let Some(by_product) = utilization.and_then(|u| u.namespace_equivalents.get(namespace)) else {
        return (None, BTreeMap::new());
    };
    let sum = by_product
        .values()
        .fold(0u64, |sum, m| sum.saturating_add(*m));
    let by_product = by_product
        .iter()
        .map(|(product, milli)| (product.clone(), Equivalent::decimal(*milli)))
        .collect();
    (Some(Equivalent::decimal(sum)), by_product)
}

/// The inventory's report.
pub fn utilization_status(report: &UtilizationReport) -> UtilizationStatus {
    UtilizationStatus {
        source: report.source.clone(),
        window: report.window.clone(),
        state: report.state.as_str().to_owned(),
        message: report.message.clone(),
        idle: report.idle.clone(),
        busy_shared_gpus: report.busy_shared,
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
        equivalent_milli: entry
            .gpu_equivalents
            .as_deref()
            .and_then(Equivalent::parse_decimal),
        idle_since: entry.idle_since.parse().ok()?,
    })
}

/// A published report read back, with the namespaces' idle units and idle GPU-equivalents by product from
/// `status.namespaces[]` (`idle`, `idleGpuEquivalentsByProduct`).
pub fn read_utilization(
    status: &UtilizationStatus,
    namespaces: &[NamespaceUsage],
) -> UtilizationReport {
    let idle = namespaces
        .iter()
        .filter(|n| !n.idle.is_empty())
        .map(|n| (n.name.clone(), n.idle.clone()));
    let equivalents = namespaces.iter().filter_map(|n| {
        let by_product: BTreeMap<String, u64> = n
            .idle_gpu_equivalents_by_product
            .iter()
            .filter_map(|(product, text)| Some((product.clone(), Equivalent::parse_decimal(text)?)))
            .collect();
        (!by_product.is_empty()).then(|| (n.name.clone(), by_product))
    });
    UtilizationReport {
        source: status.source.clone(),
        window: status.window.clone(),
        state: match status.state.as_str() {
            "Current" => UtilizationState::Current,
            _ => UtilizationState::Unknown,
        },
        message: status.message.clone(),
        namespaces: idle.collect(),
        idle: status.idle.clone(),
        namespace_equivalents: equivalents.collect(),
        busy_shared: status.busy_shared_gpus,
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
            equivalent_milli: Some(250),
            idle_since: jiff::Timestamp::from_second(1_790_000_000).unwrap(),
        };
        let entry = idle_entry(&idle);
        assert_eq!(entry.claim.as_deref(), Some("ml/c1"));
        assert_eq!(entry.gpu_equivalents.as_deref(), Some("0.25"));
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
            namespace_equivalents: BTreeMap::from([(
                "ml".into(),
                BTreeMap::from([
                    ("NVIDIA-H100-80GB-HBM3".into(), 1250),
                    ("Tesla-T4".into(), 250),
                ]),
            )]),
            busy_shared: 2,
        };
        let status = utilization_status(&report);
        assert_eq!(status.busy_shared_gpus, 2);
        let (sum, by_product) = idle_equivalents(Some(&report), "ml");
        assert_eq!(sum.as_deref(), Some("1.5"));
        assert_eq!(by_product["NVIDIA-H100-80GB-HBM3"], "1.25");
        assert_eq!(
            idle_equivalents(Some(&report), "other"),
            (None, BTreeMap::new())
        );
        let namespaces = [NamespaceUsage {
            name: "ml".into(),
            idle: report.namespaces["ml"].clone(),
            idle_gpu_equivalents: sum,
            idle_gpu_equivalents_by_product: by_product,
            ..NamespaceUsage::default()
        }];
        assert_eq!(read_utilization(&status, &namespaces), report);
        let broken = IdleEntry {
            pod: Some("no-slash".into()),
            ..entry
        };
        assert_eq!(read_idle_entry(&broken), None);
    }
}
