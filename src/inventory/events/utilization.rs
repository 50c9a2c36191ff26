//! Events for idle GPUs: a namespace that starts holding idle units (Warning `IdleGpus`) or stops (Normal
//! `IdleGpusResolved`), never one per query; and the activity becoming unknown or known again. Compared only
//! while both inventories' figures are known: `Unknown` is neither idle nor resolved.

use std::collections::BTreeMap;

use super::event::{InventoryEvent, MAX_EVENTS_PER_KIND, event};
use crate::inventory::model::{Inventory, Severity, UtilizationReport, UtilizationState};
use crate::inventory::text::capped_list;

/// The idle events for going from `old` to `new`.
pub(super) fn idle_events(events: &mut Vec<InventoryEvent>, old: &Inventory, new: &Inventory) {
    let (Some(was), Some(is)) = (&old.utilization, &new.utilization) else {
        return;
    };
    match (was.state, is.state) {
        (UtilizationState::Current, UtilizationState::Unknown) => {
            let note = format!("idle GPU figures withheld: {}", is.message);
            events.push(event(Severity::Degraded, "UtilizationUnknown", note));
        }
        (UtilizationState::Unknown, UtilizationState::Current) => {
            let note = format!("GPU activity read again from {}", is.source);
            events.push(event(Severity::Info, "UtilizationCurrent", note));
        }
        (UtilizationState::Current, UtilizationState::Current) => namespace_events(events, was, is),
        (UtilizationState::Unknown, UtilizationState::Unknown) => {}
    }
}

fn namespace_events(
    events: &mut Vec<InventoryEvent>,
    was: &UtilizationReport,
    is: &UtilizationReport,
) {
    let started: Vec<(&String, &BTreeMap<String, u64>)> = is
        .namespaces
        .iter()
        .filter(|(ns, _)| !was.namespaces.contains_key(*ns))
        .collect();
    let stopped: Vec<&str> = was
        .namespaces
        .keys()
        .filter(|ns| !is.namespaces.contains_key(*ns))
        .map(String::as_str)
        .collect();
    if started.len() > MAX_EVENTS_PER_KIND {
        let names = capped_list(started.iter().map(|(ns, _)| ns.as_str()));
        let note = format!(
            "{} namespaces hold GPUs idle through {}: {names}",
            started.len(),
            is.window
        );
        events.push(event(Severity::Degraded, "IdleGpus", note));
    } else {
        for (namespace, idle) in started {
            let units: Vec<String> = idle.iter().map(|(r, n)| format!("{n} {r}")).collect();
            let note = format!(
                "namespace {namespace} holds {} idle through {} ({})",
                units.join(", "),
                is.window,
                is.message
            );
            events.push(event(Severity::Degraded, "IdleGpus", note));
        }
    }
    if stopped.len() > MAX_EVENTS_PER_KIND {
        let note = format!(
            "{} namespaces no longer hold idle GPUs: {}",
            stopped.len(),
            capped_list(stopped.iter().copied())
        );
        events.push(event(Severity::Info, "IdleGpusResolved", note));
    } else {
        for namespace in stopped {
            let note = format!("namespace {namespace} no longer holds idle GPUs");
            events.push(event(Severity::Info, "IdleGpusResolved", note));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(state: UtilizationState, namespaces: &[&str]) -> Inventory {
        Inventory {
            utilization: Some(UtilizationReport {
                source: "http://p:9090".into(),
                window: "30m".into(),
                state,
                message: "why".into(),
                namespaces: namespaces
                    .iter()
                    .map(|ns| {
                        (
                            (*ns).to_owned(),
                            BTreeMap::from([("nvidia.com/gpu".to_owned(), 2)]),
                        )
                    })
                    .collect(),
                idle: BTreeMap::new(),
                ..UtilizationReport::default()
            }),
            ..Inventory::default()
        }
    }

    fn reasons(old: &Inventory, new: &Inventory) -> Vec<(String, String)> {
        let mut events = Vec::new();
        idle_events(&mut events, old, new);
        events.into_iter().map(|e| (e.reason, e.note)).collect()
    }

    #[test]
    fn a_namespace_starting_and_stopping_to_hold_idle_gpus_is_told_once() {
        use UtilizationState::*;
        let got = reasons(&with(Current, &["a"]), &with(Current, &["b"]));
        assert_eq!(
            got,
            vec![
                (
                    "IdleGpus".into(),
                    "namespace b holds 2 nvidia.com/gpu idle through 30m (why)".into()
                ),
                (
                    "IdleGpusResolved".into(),
                    "namespace a no longer holds idle GPUs".into()
                ),
            ]
        );
        assert!(
            reasons(&with(Current, &["a"]), &with(Current, &["a"])).is_empty(),
            "no change"
        );
        let many: Vec<String> = (0..7).map(|i| format!("ns{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let folded = reasons(&with(Current, &[]), &with(Current, &many));
        assert_eq!(folded.len(), 1);
        assert!(
            folded[0]
                .1
                .starts_with("7 namespaces hold GPUs idle through 30m"),
            "{}",
            folded[0].1
        );
    }

    #[test]
    fn unknown_is_neither_idle_nor_resolved() {
        use UtilizationState::*;
        let lost = reasons(&with(Current, &["a"]), &with(Unknown, &[]));
        assert_eq!(
            lost,
            vec![(
                "UtilizationUnknown".into(),
                "idle GPU figures withheld: why".into()
            )]
        );
        let back = reasons(&with(Unknown, &[]), &with(Current, &["a"]));
        assert_eq!(
            back,
            vec![(
                "UtilizationCurrent".into(),
                "GPU activity read again from http://p:9090".into()
            )]
        );
        assert!(
            reasons(&Inventory::default(), &with(Current, &["a"])).is_empty(),
            "not read before"
        );
    }
}
