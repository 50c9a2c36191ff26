//! Kubernetes Events for what changed between two inventories (pure: the status publisher sends them).
//!
//! They are diffed on the model, every node, before any size cut: a node left out of a cut list still
//! exists, and one that goes NotReady past the cut is still told.
//!
//! One event per transition, never one per reconcile: events come only from a status write, and a status
//! write happens only when the content changed. A mass change (a rack losing power) is folded into one event
//! per kind of transition, naming the first few nodes.

use std::collections::{BTreeMap, BTreeSet};

use crate::inventory::conditions::{DEMAND_EXCEEDS_SUPPLY, gpus_available_message};
use crate::inventory::model::{Inventory, IssueReason, NodeInventory, Severity};
use crate::inventory::text::capped_list;

mod event;
mod fragmentation;
mod quotas;
mod utilization;

use event::event;
pub(crate) use event::{InventoryEvent, MAX_EVENTS_PER_KIND};

/// What the events of a new inventory are diffed against.
#[derive(Clone, Copy, Debug)]
pub(crate) enum EventBase<'a> {
    /// The whole inventory (every node, before any size cut) this process saw last: exact.
    Model(&'a Inventory),
    /// No earlier model in this process (a start, a new leader): what the server holds, read back into the
    /// model, if anything. When its `nodes[]` was cut to a budget (`complete: false`) only the nodes it lists
    /// are compared (a node it leaves out is neither "added" nor "removed").
    Published {
        /// The published status as a model (totals, and the nodes it lists).
        inventory: Option<&'a Inventory>,
        /// It listed every node.
        complete: bool,
    },
}

/// The events for going from `base` to `new`, a whole inventory.
pub(crate) fn transitions_since(base: EventBase<'_>, new: &Inventory) -> Vec<InventoryEvent> {
    match base {
        EventBase::Model(old) => transitions(Some(old), new),
        EventBase::Published {
            inventory: Some(old),
            complete: false,
        } => {
            let listed: BTreeSet<&str> = old.nodes.iter().map(|n| n.name.as_str()).collect();
            let known = Inventory {
                nodes: new
                    .nodes
                    .iter()
                    .filter(|n| listed.contains(n.name.as_str()))
                    .cloned()
                    .collect(),
                // Once per start, and only for a status that was cut; the events read the totals, not the
                // sums per resource, product or namespace.
                total_gpu_nodes: new.total_gpu_nodes,
                ready_gpu_nodes: new.ready_gpu_nodes,
                total_gpus: new.total_gpus,
                free_gpus: new.free_gpus,
                pending_gpu_pods: new.pending_gpu_pods,
                // The domains' problems are the inventory's, not a node's: compared whole.
                topology: new.topology.clone(),
                fragmentation: new.fragmentation.clone(),
                // Kueue's quotas are the inventory's too, and so are the namespaces' idle units.
                quotas: new.quotas.clone(),
                utilization: new.utilization.clone(),
                ..Default::default()
            };
            transitions(Some(old), &known)
        }
        EventBase::Published { inventory, .. } => transitions(inventory, new),
    }
}

/// The events for going from `old` to `new`. With no `old` (first observation), one summary event.
fn transitions(old: Option<&Inventory>, new: &Inventory) -> Vec<InventoryEvent> {
    let Some(old) = old else {
        return vec![event(
            Severity::Info,
            "InventoryObserved",
            format!(
                "{} GPU nodes ({} Ready) with {} GPUs",
                new.total_gpu_nodes, new.ready_gpu_nodes, new.total_gpus
            ),
        )];
    };
    let before = by_name(old);
    let after = by_name(new);
    let mut events = Vec::new();
    membership_events(&mut events, &before, &after);
    readiness_events(&mut events, &before, &after);
    count_events(&mut events, (old, new), &before, &after);
    issue_events(&mut events, &before, &after);
    domain_events(&mut events, old, new);
    quotas::quota_events(&mut events, old, new);
    fragmentation::fragmentation_events(&mut events, old, new);
    utilization::idle_events(&mut events, old, new);
    events.extend(demand_event(old, new));
    events
}

/// The inventory's nodes by name.
fn by_name(inventory: &Inventory) -> BTreeMap<&str, &NodeInventory> {
    inventory
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.as_ref()))
        .collect()
}

/// GPU nodes that appeared, then those that disappeared.
fn membership_events(
    events: &mut Vec<InventoryEvent>,
    before: &BTreeMap<&str, &NodeInventory>,
    after: &BTreeMap<&str, &NodeInventory>,
) {
    let added: Vec<&str> = after
        .keys()
        .filter(|n| !before.contains_key(*n))
        .copied()
        .collect();
    let removed: Vec<&str> = before
        .keys()
        .filter(|n| !after.contains_key(*n))
        .copied()
        .collect();
    per_node(
        events,
        Severity::Info,
        "GpuNodeAdded",
        "GPU node appeared",
        &added,
        |name| {
            let node = after[name];
            format!(
                "GPU node {name} appeared ({} x {})",
                node.count,
                product(node)
            )
        },
    );
    per_node(
        events,
        Severity::Info,
        "GpuNodeRemoved",
        "GPU node disappeared",
        &removed,
        |name| {
            format!(
                "GPU node {name} disappeared (had {} GPUs)",
                before[name].count
            )
        },
    );
}

/// Nodes that became NotReady (with the NotReady issue's words), then those Ready again.
fn readiness_events(
    events: &mut Vec<InventoryEvent>,
    before: &BTreeMap<&str, &NodeInventory>,
    after: &BTreeMap<&str, &NodeInventory>,
) {
    let became_ready: Vec<&str> = common(before, after, |b, a| !b.ready && a.ready);
    let became_not_ready: Vec<&str> = common(before, after, |b, a| b.ready && !a.ready);
    per_node(
        events,
        Severity::Degraded,
        "GpuNodeNotReady",
        "GPU node became NotReady",
        &became_not_ready,
        |name| {
            let why = after[name]
                .issue(IssueReason::NotReady)
                .map(|i| format!(": {}", i.message))
                .unwrap_or_default();
            format!("GPU node {name} became NotReady{why}")
        },
    );
    per_node(
        events,
        Severity::Info,
        "GpuNodeReady",
        "GPU node is Ready again",
        &became_ready,
        |name| format!("GPU node {name} is Ready again"),
    );
}

/// Nodes whose GPU count changed, per node as the other per-node events ("GPUs: 32013 -> 32011" told nobody
/// which node lost two); the folded event gives the inventory's totals.
fn count_events(
    events: &mut Vec<InventoryEvent>,
    (old, new): (&Inventory, &Inventory),
    before: &BTreeMap<&str, &NodeInventory>,
    after: &BTreeMap<&str, &NodeInventory>,
) {
    let recounted: Vec<&str> = common(before, after, |b, a| b.count != a.count);
    per_node(
        events,
        Severity::Info,
        "GpuCountChanged",
        &format!(
            "GPU count changed (GPUs in all: {} -> {})",
            old.total_gpus, new.total_gpus
        ),
        &recounted,
        |name| {
            format!(
                "GPU node {name}: {} -> {} GPUs",
                before[name].count, after[name].count
            )
        },
    );
}

/// A topology domain's problem that appeared (a Warning with its message) or cleared, per (product, level,
/// domain) among the problems the summaries list.
fn domain_events(events: &mut Vec<InventoryEvent>, old: &Inventory, new: &Inventory) {
    let problems = |inventory: &Inventory| -> BTreeMap<(String, String, String), (String, String)> {
        inventory
            .topology
            .iter()
            .flat_map(|s| {
                s.problems.iter().map(|p| {
                    let key = (s.product.clone(), s.level.to_string(), p.domain.clone());
                    (key, (p.reason.as_str().to_owned(), p.message.clone()))
                })
            })
            .collect()
    };
    let (was, is) = (problems(old), problems(new));
    for (key, (reason, message)) in &is {
        if !was.contains_key(key) {
            events.push(event(Severity::Degraded, reason, message.clone()));
        }
    }
    for ((product, level, domain), (reason, _)) in &was {
        if !is.contains_key(&(product.clone(), level.clone(), domain.clone())) {
            events.push(event(
                Severity::Info,
                &format!("{reason}Resolved"),
                format!("{level} domain {domain} ({product}): every member usable again"),
            ));
        }
    }
}

/// One event when `GpusAvailable` flips (GPU pods start or stop waiting), never one per pod: pods come and
/// go without any while it holds.
fn demand_event(old: &Inventory, new: &Inventory) -> Option<InventoryEvent> {
    let message = || gpus_available_message(new);
    match (old.pending_gpu_pods == 0, new.pending_gpu_pods == 0) {
        (true, false) => Some(event(Severity::Degraded, DEMAND_EXCEEDS_SUPPLY, message())),
        (false, true) => Some(event(
            Severity::Info,
            "GpuDemandMet",
            format!("no GPU pod waits any more: {}", message()),
        )),
        _ => None,
    }
}

fn product(node: &NodeInventory) -> &str {
    node.product.as_deref().unwrap_or("<unlabeled>")
}

fn common<'a>(
    before: &BTreeMap<&'a str, &NodeInventory>,
    after: &BTreeMap<&'a str, &NodeInventory>,
    changed: impl Fn(&NodeInventory, &NodeInventory) -> bool,
) -> Vec<&'a str> {
    after
        .iter()
        .filter_map(|(name, a)| before.get(name).filter(|b| changed(b, a)).map(|_| *name))
        .collect()
}

/// One event per node, or one folded event past [`MAX_EVENTS_PER_KIND`].
fn per_node(
    events: &mut Vec<InventoryEvent>,
    severity: Severity,
    reason: &str,
    folded: &str,
    names: &[&str],
    note: impl Fn(&str) -> String,
) {
    if names.len() > MAX_EVENTS_PER_KIND {
        let list = capped_list(names.iter().copied());
        events.push(event(
            severity,
            reason,
            format!("{} nodes: {folded}: {list}", names.len()),
        ));
    } else {
        events.extend(names.iter().map(|name| event(severity, reason, note(name))));
    }
}

/// Issues that appeared or cleared on nodes present before and after. `NotReady` is left out: the
/// Ready transitions above already tell that story.
fn issue_events(
    events: &mut Vec<InventoryEvent>,
    before: &BTreeMap<&str, &NodeInventory>,
    after: &BTreeMap<&str, &NodeInventory>,
) {
    let reasons = |node: &NodeInventory| -> BTreeSet<IssueReason> {
        node.issues
            .iter()
            .map(|i| i.reason)
            .filter(|r| *r != IssueReason::NotReady)
            .collect()
    };
    let mut appeared: BTreeMap<IssueReason, Vec<&str>> = BTreeMap::new();
    let mut cleared: BTreeMap<IssueReason, Vec<&str>> = BTreeMap::new();
    for (name, a) in after {
        let Some(b) = before.get(name) else { continue };
        let (was, is) = (reasons(b), reasons(a));
        for reason in is.difference(&was) {
            appeared.entry(*reason).or_default().push(name);
        }
        for reason in was.difference(&is) {
            cleared.entry(*reason).or_default().push(name);
        }
    }
    for (reason, names) in &appeared {
        // Planned work (a driver upgrade, announced maintenance) is told, not warned about.
        per_node(
            events,
            reason.severity(),
            reason.as_str(),
            &format!("{reason} appeared"),
            names,
            |name| {
                let message = after[name]
                    .issue(*reason)
                    .map(|i| i.message.as_str())
                    .unwrap_or_default();
                format!("{name}: {message}")
            },
        );
    }
    for (reason, names) in &cleared {
        let cleared_reason = format!("{reason}Resolved");
        per_node(
            events,
            Severity::Info,
            &cleared_reason,
            &format!("{reason} cleared"),
            names,
            |name| format!("{name}: {reason} cleared"),
        );
    }
}

#[cfg(test)]
mod tests;
