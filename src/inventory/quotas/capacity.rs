//! `quotas[]`: each flavor's nominal quota of each accelerator resource, summed over the ClusterQueues and
//! Cohorts that give it, against the units the flavor's nodes hold and how many of them are healthy.
//!
//! Lending and borrowing move quota between the members of a cohort; they do not add to it. So the promise is
//! the nominal quotas' sum, and only it is held to the healthy units: a `borrowingLimit` says how much one
//! ClusterQueue may take of others' unused nominal quota, which is already counted where it is nominal.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::flavor_nodes::{FlavorNode, offers, units};
use super::kueue::{KueueInput, QuotaHolder};
use crate::inventory::model::{FlavorQuota, QuotaIssue, QuotaIssueReason};
use crate::inventory::resources::is_accounted_request;
use crate::inventory::text::capped_list;

/// The promise of one flavor and resource, before it is held to the nodes.
#[derive(Default)]
struct Promise {
    nominal: u64,
    borrowing_limit: Option<u64>,
    cluster_queues: BTreeSet<String>,
    cohorts: BTreeSet<String>,
}

/// Who gives a quota: a ClusterQueue or a Cohort.
#[derive(Clone, Copy)]
enum Giver {
    ClusterQueue,
    Cohort,
}

/// The entries of every (flavor, accelerator resource) with quota. `nodes_of(flavor)` is the flavor's nodes
/// (`None`: no ResourceFlavor of that name exists). `whole(flavor)`: the scan holds every node of the flavor,
/// so one matching none of them matches no node at all; a flavor not whole in the scan is listed only when
/// some of its nodes are in it, and never said to match nothing.
pub fn quota_entries<'n>(
    kueue: &KueueInput<'_>,
    nodes_of: &HashMap<&str, Vec<FlavorNode<'n>>>,
    whole: &dyn Fn(&str) -> bool,
) -> Vec<FlavorQuota> {
    let mut promises: BTreeMap<(String, String), Promise> = BTreeMap::new();
    let holders = kueue
        .cluster_queues
        .iter()
        .map(|q| (q.as_ref(), Giver::ClusterQueue))
        .chain(kueue.cohorts.iter().map(|c| (c.as_ref(), Giver::Cohort)));
    for (holder, giver) in holders {
        add_quotas(&mut promises, holder, giver);
    }
    promises
        .into_iter()
        .filter_map(|((flavor, resource), promise)| {
            let nodes = nodes_of.get(flavor.as_str());
            let all_nodes = whole(&flavor);
            let entry = held_to_nodes(
                flavor,
                resource,
                promise,
                nodes.map(Vec::as_slice),
                all_nodes,
            );
            (all_nodes || entry.nodes > 0).then_some(entry)
        })
        .collect()
}

fn add_quotas(
    promises: &mut BTreeMap<(String, String), Promise>,
    holder: &QuotaHolder,
    giver: Giver,
) {
    for group in &holder.groups {
        for flavor in &group.flavors {
            for quota in &flavor.resources {
                if !is_accounted_request(&quota.resource) {
                    continue;
                }
                let key = (flavor.flavor.clone(), quota.resource.clone());
                let promise = promises.entry(key).or_default();
                promise.nominal = promise.nominal.saturating_add(quota.nominal);
                if let Some(limit) = quota.borrowing_limit {
                    promise.borrowing_limit =
                        Some(promise.borrowing_limit.unwrap_or(0).saturating_add(limit));
                }
                match giver {
                    Giver::ClusterQueue => promise.cluster_queues.insert(holder.name.clone()),
                    Giver::Cohort => promise.cohorts.insert(holder.name.clone()),
                };
            }
        }
    }
}

fn held_to_nodes(
    flavor: String,
    resource: String,
    promise: Promise,
    nodes: Option<&[FlavorNode<'_>]>,
    all_nodes: bool,
) -> FlavorQuota {
    let offering: Vec<&FlavorNode<'_>> = nodes
        .unwrap_or_default()
        .iter()
        .filter(|n| offers(n.node.entry, &resource))
        .collect();
    let mut entry = FlavorQuota {
        nodes: u32::try_from(offering.len()).unwrap_or(u32::MAX),
        nominal_quota: promise.nominal,
        borrowing_limit: promise.borrowing_limit,
        cluster_queues: promise.cluster_queues.into_iter().collect(),
        cohorts: promise.cohorts.into_iter().collect(),
        ..FlavorQuota::default()
    };
    for node in &offering {
        let node_entry = node.node.entry;
        entry.gpus += units(&node_entry.capacity, &resource);
        match &node.unhealthy {
            None => {
                entry.healthy_gpus += units(&node_entry.allocatable, &resource);
                entry.free_gpus += node_entry.free.get(&resource).copied().unwrap_or(0);
            }
            Some(why) => entry
                .unhealthy_nodes
                .push((node_entry.name.clone(), why.clone())),
        }
    }
    entry.flavor = flavor;
    entry.resource = resource;
    if let Some(issue) = issue_of(&entry, nodes.is_some(), all_nodes) {
        entry.issues.push(issue);
    }
    entry
}

fn issue_of(entry: &FlavorQuota, flavor_exists: bool, all_nodes: bool) -> Option<QuotaIssue> {
    // Only a scan holding every node of the flavor can hold its quota to them.
    if entry.nominal_quota == 0 || !all_nodes {
        return None;
    }
    let givers = givers(entry);
    if entry.nodes == 0 {
        let why = if flavor_exists {
            format!("its nodeLabels match no node offering {}", entry.resource)
        } else {
            "no ResourceFlavor of that name exists".to_owned()
        };
        return Some(QuotaIssue {
            reason: QuotaIssueReason::FlavorMatchesNoNodes,
            message: format!(
                "flavor {} has a nominal quota of {} {} ({givers}) but {why}",
                entry.flavor, entry.nominal_quota, entry.resource
            ),
        });
    }
    if entry.nominal_quota <= entry.healthy_gpus {
        return None;
    }
    let unhealthy: Vec<String> = entry
        .unhealthy_nodes
        .iter()
        .map(|(node, why)| format!("{node} ({why})"))
        .collect();
    let not_healthy = if unhealthy.is_empty() {
        String::new()
    } else {
        format!(
            "; not healthy: {}",
            capped_list(unhealthy.iter().map(String::as_str))
        )
    };
    Some(QuotaIssue {
        reason: QuotaIssueReason::QuotaExceedsCapacity,
        message: format!(
            "flavor {}: nominal quota {} {} ({givers}) is above the {} healthy of {} on its {} node(s){not_healthy}",
            entry.flavor,
            entry.nominal_quota,
            entry.resource,
            entry.healthy_gpus,
            entry.gpus,
            entry.nodes
        ),
    })
}

fn givers(entry: &FlavorQuota) -> String {
    let queues = entry
        .cluster_queues
        .iter()
        .map(|q| format!("ClusterQueue {q}"));
    let cohorts = entry.cohorts.iter().map(|c| format!("Cohort {c}"));
    let all: Vec<String> = queues.chain(cohorts).collect();
    capped_list(all.iter().map(String::as_str))
}
