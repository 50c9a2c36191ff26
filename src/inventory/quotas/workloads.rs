//! `workloadIssues[]`: pending Workloads that can never be admitted as they are.
//!
//! Kueue gives each PodSet one flavor per resource group, so a PodSet's pods must all fit the healthy nodes of
//! one flavor its ClusterQueue lists for each resource it asks for. A PodSet of `count` pods of `k` units of a
//! resource cannot fit when, for every such flavor, the healthy nodes (see `flavor_nodes`) would not hold it
//! even were every unit free: each node holds `floor(allocatable / k)` of its pods, and with
//! `topologyRequest.required` only the nodes of one domain of that level count (the largest). What is in use
//! now is not counted: a workload that would fit once others finish is not flagged. Nor is one whose
//! LocalQueue or ClusterQueue does not exist: Kueue says so itself.

use std::collections::HashMap;

use super::flavor_nodes::{FlavorNode, units};
use super::kueue::{KueueInput, PendingWorkload, PodSet, QuotaHolder};
use crate::inventory::model::WorkloadIssue;
use crate::inventory::resources::is_accounted_request;

/// The most pods of `k` units one flavor's healthy nodes hold, in one domain of `level` when given, and where.
#[derive(Clone, Debug, Default)]
struct Room {
    units: u64,
    domain: Option<String>,
}

/// What the rules need to answer for one workload.
pub struct WorkloadRules<'k, 'n> {
    whole: &'k dyn Fn(&str) -> bool,
    queues: HashMap<(&'k str, &'k str), &'k str>,
    cluster_queues: HashMap<&'k str, &'k QuotaHolder>,
    nodes_of: &'k HashMap<&'k str, Vec<FlavorNode<'n>>>,
    rooms: HashMap<(&'k str, &'k str, u64, Option<&'k str>), Room>,
}

impl<'k, 'n> WorkloadRules<'k, 'n> {
    /// The rules over these Kueue objects and flavors' nodes; `whole(flavor)`: the scan holds every node of
    /// the flavor.
    pub fn new(
        kueue: &KueueInput<'k>,
        nodes_of: &'k HashMap<&'k str, Vec<FlavorNode<'n>>>,
        whole: &'k dyn Fn(&str) -> bool,
    ) -> Self {
        WorkloadRules {
            whole,
            queues: kueue
                .local_queues
                .iter()
                .map(|q| {
                    (
                        (q.namespace.as_str(), q.name.as_str()),
                        q.cluster_queue.as_str(),
                    )
                })
                .collect(),
            cluster_queues: kueue
                .cluster_queues
                .iter()
                .map(|q| (q.name.as_str(), q.as_ref()))
                .collect(),
            nodes_of,
            rooms: HashMap::new(),
        }
    }

    /// Why `workload` can never be admitted as it is, if it cannot.
    pub fn cannot_fit(&mut self, workload: &'k PendingWorkload) -> Option<WorkloadIssue> {
        let queue = *self
            .queues
            .get(&(workload.namespace.as_str(), workload.queue.as_str()))?;
        let cluster_queue = *self.cluster_queues.get(queue)?;
        // Judged only where the scan holds every node of some flavor of the queue: an inventory of other nodes
        // cannot say a workload fits nowhere.
        let in_scope = cluster_queue
            .groups
            .iter()
            .flat_map(|g| &g.flavors)
            .any(|f| (self.whole)(&f.flavor));
        if !in_scope {
            return None;
        }
        let reasons: Vec<String> = workload
            .pod_sets
            .iter()
            .flat_map(|pod_set| {
                pod_set
                    .per_pod
                    .iter()
                    .filter(|(resource, k)| **k > 0 && is_accounted_request(resource))
                    .map(move |(resource, k)| (pod_set, resource.as_str(), *k))
            })
            .filter_map(|(pod_set, resource, k)| self.refusal(cluster_queue, pod_set, resource, k))
            .collect();
        (!reasons.is_empty()).then(|| WorkloadIssue {
            workload: format!("{}/{}", workload.namespace, workload.name),
            cluster_queue: cluster_queue.name.clone(),
            message: reasons.join("; "),
        })
    }

    fn refusal(
        &mut self,
        queue: &'k QuotaHolder,
        pod_set: &'k PodSet,
        resource: &'k str,
        k: u64,
    ) -> Option<String> {
        let demand = pod_set.count.saturating_mul(k);
        // Made only for a workload that is refused: most fit.
        let asks = || {
            format!(
                "PodSet {} asks for {demand} {resource} ({} pod(s) of {k})",
                pod_set.name, pod_set.count
            )
        };
        let flavors: Vec<&'k str> = queue.flavors_for(resource).collect();
        if flavors.is_empty() {
            return Some(format!(
                "{}, and no flavor of ClusterQueue {} covers {resource}",
                asks(),
                queue.name
            ));
        }
        // A flavor of which the scan holds only some nodes might hold the rest elsewhere.
        if flavors.iter().any(|f| !(self.whole)(f)) {
            return None;
        }
        let level = pod_set.required_level.as_deref();
        let best = flavors
            .iter()
            .map(|flavor| (*flavor, self.room(flavor, resource, k, level)))
            .max_by_key(|(_, room)| room.units)?;
        if best.1.units >= demand {
            return None;
        }
        let (flavor, room) = best;
        let most = match (level, &room.domain) {
            (Some(level), Some(domain)) => format!(
                "the largest {level} domain of its flavors' healthy nodes ({domain}, flavor {flavor}) holds {} in pods of {k}",
                room.units
            ),
            (Some(level), None) => format!(
                "no healthy node of its flavors ({}) has the {level} label",
                flavors.join(", ")
            ),
            (None, _) => format!(
                "the healthy nodes of its largest flavor ({flavor}) hold {} in pods of {k}",
                room.units
            ),
        };
        let within = level
            .map(|l| format!(" in one {l} domain"))
            .unwrap_or_default();
        Some(format!(
            "{}{within}, but {most} even with every unit free",
            asks()
        ))
    }

    fn room(&mut self, flavor: &'k str, resource: &'k str, k: u64, level: Option<&'k str>) -> Room {
        let nodes_of = self.nodes_of;
        self.rooms
            .entry((flavor, resource, k, level))
            .or_insert_with(|| {
                let nodes = nodes_of.get(flavor).map(Vec::as_slice).unwrap_or_default();
                room_in(nodes, resource, k, level)
            })
            .clone()
    }
}

fn room_in(nodes: &[FlavorNode<'_>], resource: &str, k: u64, level: Option<&str>) -> Room {
    let holds = |node: &FlavorNode<'_>| {
        let allocatable = units(&node.node.entry.allocatable, resource);
        allocatable.checked_div(k).unwrap_or(0).saturating_mul(k)
    };
    let healthy = nodes.iter().filter(|n| n.unhealthy.is_none());
    let Some(level) = level else {
        return Room {
            units: healthy.map(holds).sum(),
            domain: None,
        };
    };
    let mut domains: HashMap<&str, u64> = HashMap::new();
    for node in healthy {
        if let Some(domain) = node.node.labels.get(level) {
            *domains.entry(domain).or_default() += holds(node);
        }
    }
    domains
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(a.0)))
        .map(|(domain, units)| Room {
            units,
            domain: Some(domain.to_owned()),
        })
        .unwrap_or_default()
}

/// Every pending workload that cannot fit, by name.
pub fn workload_issues<'k>(
    kueue: &KueueInput<'k>,
    nodes_of: &'k HashMap<&'k str, Vec<FlavorNode<'_>>>,
    whole: &'k dyn Fn(&str) -> bool,
) -> Vec<WorkloadIssue> {
    let mut rules = WorkloadRules::new(kueue, nodes_of, whole);
    let mut issues: Vec<WorkloadIssue> = kueue
        .workloads
        .iter()
        .filter_map(|w| rules.cannot_fit(w))
        .collect();
    issues.sort_by(|a, b| a.workload.cmp(&b.workload));
    issues
}
