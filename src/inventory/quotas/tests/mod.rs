//! The quota rules on hand-made nodes and Kueue objects: each rule's case and the case next to it that must
//! not be flagged. The fleet and the objects are made here; the flavors' cases are in `capacity`, the
//! workloads' in `workloads`.

mod capacity;
mod workloads;

use std::collections::BTreeMap;
use std::sync::Arc;

use super::kueue::{
    Flavor, FlavorQuotas, LocalQueue, PendingWorkload, PodSet, QuotaHolder, ResourceGroup,
    ResourceQuota,
};
use super::{KueueInput, NodeView, QuotaMemo, QuotaScope, assess};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::{
    Amount, Issue, IssueReason, NodeInventory, QuotaIssueReason, QuotaReport,
};
use crate::inventory::selector::{LabelMatcher, parse_selector};
use crate::inventory::text_map::TextMap;
use crate::inventory::topology::gang::Toleration;

pub(super) const GPU: &str = "nvidia.com/gpu";
pub(super) const RACK: &str = "example.com/rack";

/// A GPU node of `gpus` nvidia.com/gpu, `free` of them free, in `pool` and `rack`.
pub(super) fn node(name: &str, gpus: u64, free: u64) -> NodeInventory {
    NodeInventory {
        name: name.to_owned(),
        ready: true,
        count: gpus,
        capacity: crate::inventory::model::ResourceMap::from_iter([(
            GPU.to_owned(),
            Amount::count(gpus),
        )]),
        allocatable: crate::inventory::model::ResourceMap::from_iter([(
            GPU.to_owned(),
            Amount::count(gpus),
        )]),
        allocated: crate::inventory::model::ResourceMap::from_iter([(GPU.to_owned(), gpus - free)]),
        free: crate::inventory::model::ResourceMap::from_iter([(GPU.to_owned(), free)]),
        ..NodeInventory::default()
    }
}

pub(super) fn labels(pool: &str, rack: &str) -> TextMap {
    [("pool", pool), (RACK, rack)].into_iter().collect()
}

pub(super) fn flavor(name: &str, pool: &str) -> Arc<Flavor> {
    Arc::new(Flavor {
        name: name.to_owned(),
        node_labels: BTreeMap::from([("pool".to_owned(), pool.to_owned())]),
        ..Flavor::default()
    })
}

pub(super) fn quota(nominal: u64) -> ResourceQuota {
    ResourceQuota {
        resource: GPU.to_owned(),
        nominal,
        ..ResourceQuota::default()
    }
}

pub(super) fn holder(
    name: &str,
    cohort: Option<&str>,
    flavors: &[(&str, ResourceQuota)],
) -> Arc<QuotaHolder> {
    Arc::new(QuotaHolder {
        name: name.to_owned(),
        cohort: cohort.map(str::to_owned),
        groups: vec![ResourceGroup {
            covered: vec![GPU.to_owned(), "cpu".to_owned()],
            flavors: flavors
                .iter()
                .map(|(flavor, q)| FlavorQuotas {
                    flavor: (*flavor).to_owned(),
                    resources: vec![
                        q.clone(),
                        ResourceQuota {
                            resource: "cpu".to_owned(),
                            nominal: 1000,
                            ..ResourceQuota::default()
                        },
                    ],
                })
                .collect(),
        }],
    })
}

pub(super) fn workload(
    name: &str,
    pods: u64,
    per_pod: &[(&str, u64)],
    level: Option<&str>,
) -> Arc<PendingWorkload> {
    Arc::new(PendingWorkload {
        namespace: "team".to_owned(),
        name: name.to_owned(),
        queue: "lq".to_owned(),
        pod_sets: vec![PodSet {
            name: "main".to_owned(),
            count: pods,
            per_pod: per_pod.iter().map(|(r, n)| ((*r).to_owned(), *n)).collect(),
            required_level: level.map(str::to_owned),
        }],
    })
}

pub(super) struct Kueue {
    pub(super) flavors: Vec<Arc<Flavor>>,
    pub(super) queues: Vec<Arc<QuotaHolder>>,
    pub(super) cohorts: Vec<Arc<QuotaHolder>>,
    pub(super) local: Vec<Arc<LocalQueue>>,
    pub(super) workloads: Vec<Arc<PendingWorkload>>,
}

impl Kueue {
    pub(super) fn new(flavors: Vec<Arc<Flavor>>, queues: Vec<Arc<QuotaHolder>>) -> Kueue {
        let local = vec![Arc::new(LocalQueue {
            namespace: "team".to_owned(),
            name: "lq".to_owned(),
            cluster_queue: queues.first().map(|q| q.name.clone()).unwrap_or_default(),
        })];
        Kueue {
            flavors,
            queues,
            cohorts: Vec::new(),
            local,
            workloads: Vec::new(),
        }
    }

    pub(super) fn input(&self) -> KueueInput<'_> {
        KueueInput {
            flavors: &self.flavors,
            cluster_queues: &self.queues,
            cohorts: &self.cohorts,
            local_queues: &self.local,
            workloads: &self.workloads,
        }
    }

    pub(super) fn report(
        &self,
        nodes: &[(NodeInventory, TextMap)],
        all_nodes: bool,
    ) -> QuotaReport {
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .map(|(entry, labels)| NodeView {
                entry,
                labels,
                node: None,
            })
            .collect();
        let input = self.input();
        let scope = if all_nodes {
            QuotaScope::Cluster
        } else {
            QuotaScope::Partial
        };
        assess(&views, &input, &scope, None)
    }

    pub(super) fn report_within(
        &self,
        nodes: &[(NodeInventory, TextMap)],
        selector: &str,
    ) -> QuotaReport {
        let selector = parse_selector(selector).unwrap();
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .filter(|(_, labels)| LabelMatcher::new(&selector).matches(labels))
            .map(|(entry, labels)| NodeView {
                entry,
                labels,
                node: None,
            })
            .collect();
        let input = self.input();
        assess(&views, &input, &QuotaScope::Selected(vec![&selector]), None)
    }
}

/// The nodes as the node cache holds them (their labels), one `Arc` each: what the memos compare.
pub(super) fn cached(nodes: &[(NodeInventory, TextMap)]) -> Vec<Arc<ClusterNode>> {
    nodes
        .iter()
        .map(|(_, labels)| {
            Arc::new(ClusterNode {
                labels: labels.clone(),
                ..ClusterNode::default()
            })
        })
        .collect()
}

/// The report of `nodes` read from the cache's `arcs` (labels and identity), with `memo`.
pub(super) fn assess_cached(
    nodes: &[(NodeInventory, TextMap)],
    arcs: &[Arc<ClusterNode>],
    kueue: &Kueue,
    memo: &std::cell::RefCell<QuotaMemo>,
) -> QuotaReport {
    let views: Vec<NodeView<'_>> = nodes
        .iter()
        .zip(arcs)
        .map(|((entry, _), node)| NodeView {
            entry,
            labels: &node.labels,
            node: Some(node),
        })
        .collect();
    assess(
        &views,
        &kueue.input(),
        &QuotaScope::Cluster,
        Some(&mut memo.borrow_mut()),
    )
}

/// Two racks of GB200-like nodes in pool `gb200`: r1 has 4 nodes of 4, r2 has 2 nodes of 4, one of each
/// 2 GPUs busy; and one H100 node of 8 in pool `h100`.
pub(super) fn fleet() -> Vec<(NodeInventory, TextMap)> {
    let mut nodes = Vec::new();
    for i in 0..4 {
        nodes.push((node(&format!("r1-{i}"), 4, 4), labels("gb200", "r1")));
    }
    for i in 0..2 {
        nodes.push((node(&format!("r2-{i}"), 4, 2), labels("gb200", "r2")));
    }
    nodes.push((node("h100-0", 8, 8), labels("h100", "h")));
    nodes
}

pub(super) fn reasons(report: &QuotaReport, flavor: &str) -> Vec<QuotaIssueReason> {
    let entry = report
        .quotas
        .iter()
        .find(|q| q.flavor == flavor)
        .expect("entry");
    entry.issues.iter().map(|i| i.reason).collect()
}
