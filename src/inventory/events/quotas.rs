//! Events for Kueue's quotas: a flavor's quota issue or a workload that cannot fit, as it appears (a Warning
//! with its message) and as it clears (Normal). Many workloads at once are folded into one event.

use std::collections::BTreeMap;

use super::event::{InventoryEvent, MAX_EVENTS_PER_KIND, event};
use crate::inventory::model::{Inventory, QuotaIssueReason, Severity};
use crate::inventory::text::capped_list;

/// The quota and workload events for going from `old` to `new`.
pub(super) fn quota_events(events: &mut Vec<InventoryEvent>, old: &Inventory, new: &Inventory) {
    flavor_events(events, old, new);
    workload_events(events, old, new);
}

type FlavorIssues = BTreeMap<(String, String, QuotaIssueReason), String>;

fn flavor_issues(inventory: &Inventory) -> FlavorIssues {
    inventory
        .quotas
        .iter()
        .flat_map(|report| &report.quotas)
        .flat_map(|q| {
            q.issues.iter().map(|i| {
                let key = (q.flavor.clone(), q.resource.clone(), i.reason);
                (key, i.message.clone())
            })
        })
        .collect()
}

fn flavor_events(events: &mut Vec<InventoryEvent>, old: &Inventory, new: &Inventory) {
    let (was, is) = (flavor_issues(old), flavor_issues(new));
    for (key, message) in &is {
        if !was.contains_key(key) {
            events.push(event(Severity::Degraded, key.2.as_str(), message.clone()));
        }
    }
    for (flavor, resource, reason) in was.keys() {
        if is.contains_key(&(flavor.clone(), resource.clone(), *reason)) {
            continue;
        }
        let now = match reason {
            QuotaIssueReason::FlavorMatchesNoNodes => {
                "its nodeLabels match nodes again, or it has no quota"
            }
            _ => "its nominal quota is within the healthy units again",
        };
        events.push(event(
            Severity::Info,
            &format!("{reason}Resolved"),
            format!("flavor {flavor}, {resource}: {now}"),
        ));
    }
}

fn workload_events(events: &mut Vec<InventoryEvent>, old: &Inventory, new: &Inventory) {
    let issues = |inventory: &Inventory| -> BTreeMap<String, String> {
        inventory
            .quotas
            .iter()
            .flat_map(|r| &r.workload_issues)
            .map(|w| (w.workload.clone(), w.message.clone()))
            .collect()
    };
    let (was, is) = (issues(old), issues(new));
    let appeared: Vec<(&String, &String)> =
        is.iter().filter(|(w, _)| !was.contains_key(*w)).collect();
    let cleared: Vec<&str> = was
        .keys()
        .filter(|w| !is.contains_key(*w))
        .map(String::as_str)
        .collect();
    let reason = QuotaIssueReason::WorkloadCannotFit.as_str();
    if appeared.len() > MAX_EVENTS_PER_KIND {
        let names = capped_list(appeared.iter().map(|(w, _)| w.as_str()));
        let note = format!(
            "{} pending workloads can never be admitted as they are: {names}",
            appeared.len()
        );
        events.push(event(Severity::Degraded, reason, note));
    } else {
        for (workload, message) in appeared {
            let note = format!("Workload {workload} can never be admitted as it is: {message}");
            events.push(event(Severity::Degraded, reason, note));
        }
    }
    if !cleared.is_empty() {
        let note = format!(
            "no longer flagged (it fits now, was admitted or was deleted): {}",
            capped_list(cleared.iter().copied())
        );
        events.push(event(Severity::Info, &format!("{reason}Resolved"), note));
    }
}
