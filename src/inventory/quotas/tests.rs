//! The quota rules on hand-made nodes and Kueue objects: each rule's case and the case next to it that must
//! not be flagged.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::kueue::{
    Flavor, FlavorQuotas, LocalQueue, PendingWorkload, PodSet, QuotaHolder, ResourceGroup,
    ResourceQuota,
};
use super::{KueueInput, NodeView, QuotaScope, assess};
use crate::inventory::model::{
    Amount, Issue, IssueReason, NodeInventory, QuotaIssueReason, QuotaReport,
};
use crate::inventory::selector::{LabelMatcher, parse_selector};
use crate::inventory::text_map::TextMap;
use crate::inventory::topology::gang::Toleration;

const GPU: &str = "nvidia.com/gpu";
const RACK: &str = "example.com/rack";

/// A GPU node of `gpus` nvidia.com/gpu, `free` of them free, in `pool` and `rack`.
fn node(name: &str, gpus: u64, free: u64) -> NodeInventory {
    NodeInventory {
        name: name.to_owned(),
        ready: true,
        count: gpus,
        capacity: BTreeMap::from([(GPU.to_owned(), Amount::count(gpus))]),
        allocatable: BTreeMap::from([(GPU.to_owned(), Amount::count(gpus))]),
        allocated: BTreeMap::from([(GPU.to_owned(), gpus - free)]),
        free: BTreeMap::from([(GPU.to_owned(), free)]),
        ..NodeInventory::default()
    }
}

fn labels(pool: &str, rack: &str) -> TextMap {
    [("pool", pool), (RACK, rack)].into_iter().collect()
}

fn flavor(name: &str, pool: &str) -> Arc<Flavor> {
    Arc::new(Flavor {
        name: name.to_owned(),
        node_labels: BTreeMap::from([("pool".to_owned(), pool.to_owned())]),
        ..Flavor::default()
    })
}

fn quota(nominal: u64) -> ResourceQuota {
    ResourceQuota {
        resource: GPU.to_owned(),
        nominal,
        ..ResourceQuota::default()
    }
}

fn holder(name: &str, cohort: Option<&str>, flavors: &[(&str, ResourceQuota)]) -> Arc<QuotaHolder> {
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

fn workload(
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

struct Kueue {
    flavors: Vec<Arc<Flavor>>,
    queues: Vec<Arc<QuotaHolder>>,
    cohorts: Vec<Arc<QuotaHolder>>,
    local: Vec<Arc<LocalQueue>>,
    workloads: Vec<Arc<PendingWorkload>>,
}

impl Kueue {
    fn new(flavors: Vec<Arc<Flavor>>, queues: Vec<Arc<QuotaHolder>>) -> Kueue {
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

    fn report(&self, nodes: &[(NodeInventory, TextMap)], all_nodes: bool) -> QuotaReport {
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .map(|(entry, labels)| NodeView { entry, labels })
            .collect();
        let input = KueueInput {
            flavors: &self.flavors,
            cluster_queues: &self.queues,
            cohorts: &self.cohorts,
            local_queues: &self.local,
            workloads: &self.workloads,
        };
        let scope = if all_nodes {
            QuotaScope::Cluster
        } else {
            QuotaScope::Partial
        };
        assess(&views, &input, &scope)
    }

    fn report_within(&self, nodes: &[(NodeInventory, TextMap)], selector: &str) -> QuotaReport {
        let selector = parse_selector(selector).unwrap();
        let views: Vec<NodeView<'_>> = nodes
            .iter()
            .filter(|(_, labels)| LabelMatcher::new(&selector).matches(labels))
            .map(|(entry, labels)| NodeView { entry, labels })
            .collect();
        let input = KueueInput {
            flavors: &self.flavors,
            cluster_queues: &self.queues,
            cohorts: &self.cohorts,
            local_queues: &self.local,
            workloads: &self.workloads,
        };
        assess(&views, &input, &QuotaScope::Selected(vec![&selector]))
    }
}

/// Two racks of GB200-like nodes in pool `gb200`: r1 has 4 nodes of 4, r2 has 2 nodes of 4, one of each
/// 2 GPUs busy; and one H100 node of 8 in pool `h100`.
fn fleet() -> Vec<(NodeInventory, TextMap)> {
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

fn reasons(report: &QuotaReport, flavor: &str) -> Vec<QuotaIssueReason> {
    let entry = report
        .quotas
        .iter()
        .find(|q| q.flavor == flavor)
        .expect("entry");
    entry.issues.iter().map(|i| i.reason).collect()
}

#[test]
fn a_quota_within_the_healthy_gpus_is_not_flagged_and_the_entry_counts_nodes_gpus_and_free() {
    let kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("cq", None, &[("gb200", quota(24))])],
    );
    let report = kueue.report(&fleet(), true);
    assert_eq!(
        report.quotas.len(),
        1,
        "cpu is not an accelerator: {report:?}"
    );
    let entry = &report.quotas[0];
    assert_eq!(
        (
            entry.nominal_quota,
            entry.nodes,
            entry.gpus,
            entry.healthy_gpus,
            entry.free_gpus
        ),
        (24, 6, 24, 24, 20)
    );
    assert_eq!(entry.cluster_queues, ["cq"]);
    assert!(entry.issues.is_empty(), "{entry:?}");
}

#[test]
fn a_quota_above_the_healthy_gpus_is_quota_exceeds_capacity_naming_both_numbers_and_the_unhealthy_nodes()
 {
    let mut nodes = fleet();
    nodes[0].0.ready = false;
    nodes[1].0.unschedulable = true;
    nodes[2]
        .0
        .issues
        .push(Issue::new(IssueReason::GpusMissing, "3 of 4"));
    // Information (planned work) does not make a node unhealthy.
    nodes[3]
        .0
        .issues
        .push(Issue::new(IssueReason::MaintenanceScheduled, "soon"));
    let kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![
            holder("a", None, &[("gb200", quota(16))]),
            holder("b", None, &[("gb200", quota(8))]),
        ],
    );
    let report = kueue.report(&nodes, true);
    let entry = &report.quotas[0];
    assert_eq!(
        (entry.nominal_quota, entry.healthy_gpus, entry.free_gpus),
        (24, 12, 8)
    );
    assert_eq!(entry.cluster_queues, ["a", "b"]);
    assert_eq!(
        reasons(&report, "gb200"),
        [QuotaIssueReason::QuotaExceedsCapacity]
    );
    let message = &entry.issues[0].message;
    for part in [
        "nominal quota 24 nvidia.com/gpu",
        "ClusterQueue a, ClusterQueue b",
        "12 healthy of 24",
        "r1-0 (NotReady)",
        "r1-1 (cordoned)",
        "r1-2 (GpusMissing)",
    ] {
        assert!(message.contains(part), "{part:?} not in {message:?}");
    }
    assert!(!message.contains("r1-3"), "{message}");
    // Back under: the quota lowered to what is healthy.
    let lowered = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("a", None, &[("gb200", quota(12))])],
    );
    assert!(lowered.report(&nodes, true).quotas[0].issues.is_empty());
}

#[test]
fn a_taint_the_flavor_does_not_tolerate_holds_no_healthy_gpus_and_one_it_tolerates_does() {
    let mut nodes = fleet();
    for (entry, _) in nodes.iter_mut().take(6) {
        entry.blocking_taints = vec![("dedicated".into(), "ml".into(), "NoSchedule".into())];
    }
    // GKE's taint keyed by the node's own resource is tolerated (ExtendedResourceToleration).
    nodes[6].0.blocking_taints = vec![(GPU.into(), "present".into(), "NoSchedule".into())];
    let queues = vec![holder(
        "cq",
        None,
        &[("gb200", quota(24)), ("h100", quota(8))],
    )];
    let kueue = Kueue::new(
        vec![flavor("gb200", "gb200"), flavor("h100", "h100")],
        queues.clone(),
    );
    let report = kueue.report(&nodes, true);
    assert_eq!(report.quotas[0].healthy_gpus, 0);
    assert!(
        report.quotas[0].issues[0]
            .message
            .contains("taint dedicated=ml:NoSchedule")
    );
    assert_eq!(report.quotas[1].healthy_gpus, 8, "{:?}", report.quotas[1]);
    for tolerating in [
        Flavor {
            tolerations: vec![Toleration::parse("dedicated=ml:NoSchedule").unwrap()],
            ..(*flavor("gb200", "gb200")).clone()
        },
        Flavor {
            node_taints: vec![("dedicated".into(), "ml".into(), "NoSchedule".into())],
            ..(*flavor("gb200", "gb200")).clone()
        },
    ] {
        let kueue = Kueue::new(
            vec![Arc::new(tolerating), flavor("h100", "h100")],
            queues.clone(),
        );
        assert_eq!(kueue.report(&nodes, true).quotas[0].healthy_gpus, 24);
    }
}

#[test]
fn a_flavor_matching_no_gpu_node_is_flagged_only_when_it_has_quota_and_the_nodes_are_the_whole_cluster()
 {
    let kueue = Kueue::new(
        vec![
            flavor("gb200", "gb200"),
            flavor("renamed", "old-pool"),
            flavor("spare", "old-pool"),
        ],
        vec![holder(
            "cq",
            None,
            &[
                ("gb200", quota(8)),
                ("renamed", quota(16)),
                ("spare", quota(0)),
                ("ghost", quota(4)),
            ],
        )],
    );
    let report = kueue.report(&fleet(), true);
    assert_eq!(
        reasons(&report, "renamed"),
        [QuotaIssueReason::FlavorMatchesNoNodes]
    );
    assert!(reasons(&report, "spare").is_empty(), "no quota, no promise");
    assert_eq!(
        reasons(&report, "ghost"),
        [QuotaIssueReason::FlavorMatchesNoNodes]
    );
    assert!(
        report
            .quotas
            .iter()
            .find(|q| q.flavor == "ghost")
            .unwrap()
            .issues[0]
            .message
            .contains("no ResourceFlavor")
    );
    // An inventory of some nodes only shows the flavors that match some of them.
    let subset = kueue.report(&fleet(), false);
    let flavors: Vec<&str> = subset.quotas.iter().map(|q| q.flavor.as_str()).collect();
    assert_eq!(flavors, ["gb200"]);
}

#[test]
fn borrowing_is_not_a_promise_and_a_cohorts_own_quota_is() {
    let borrower = holder(
        "borrower",
        Some("co"),
        &[(
            "gb200",
            ResourceQuota {
                borrowing_limit: Some(100),
                ..quota(0)
            },
        )],
    );
    let lender = holder(
        "lender",
        Some("co"),
        &[(
            "gb200",
            ResourceQuota {
                lending_limit: Some(10),
                ..quota(20)
            },
        )],
    );
    let mut kueue = Kueue::new(vec![flavor("gb200", "gb200")], vec![borrower, lender]);
    let report = kueue.report(&fleet(), true);
    let entry = &report.quotas[0];
    assert_eq!(
        (entry.nominal_quota, entry.borrowing_limit),
        (20, Some(100))
    );
    assert!(entry.issues.is_empty(), "only borrowable: {entry:?}");
    kueue.cohorts = vec![holder("co", None, &[("gb200", quota(8))])];
    let report = kueue.report(&fleet(), true);
    let entry = &report.quotas[0];
    assert_eq!(
        (entry.nominal_quota, entry.cohorts.as_slice()),
        (28, ["co".to_owned()].as_slice())
    );
    assert_eq!(
        reasons(&report, "gb200"),
        [QuotaIssueReason::QuotaExceedsCapacity]
    );
    assert!(entry.issues[0].message.contains("Cohort co"));
}

#[test]
fn a_workload_larger_than_its_flavors_healthy_gpus_cannot_fit_and_one_that_fits_once_others_finish_can()
 {
    let mut kueue = Kueue::new(
        vec![flavor("gb200", "gb200"), flavor("h100", "h100")],
        vec![holder(
            "cq",
            None,
            &[("gb200", quota(100)), ("h100", quota(100))],
        )],
    );
    kueue.workloads = vec![
        workload("too-big", 7, &[(GPU, 4)], None),
        workload("busy-now", 6, &[(GPU, 4)], None),
        workload("per-pod-too-big", 1, &[(GPU, 16)], None),
        workload("pods-do-not-pack", 3, &[(GPU, 3)], None),
    ];
    let report = kueue.report(&fleet(), true);
    let flagged: Vec<&str> = report
        .workload_issues
        .iter()
        .map(|w| w.workload.as_str())
        .collect();
    assert_eq!(
        flagged,
        ["team/per-pod-too-big", "team/too-big"],
        "{report:#?}"
    );
    let too_big = &report.workload_issues[1];
    assert_eq!(too_big.cluster_queue, "cq");
    assert!(
        too_big
            .message
            .contains("asks for 28 nvidia.com/gpu (7 pod(s) of 4)"),
        "{}",
        too_big.message
    );
    assert!(
        too_big.message.contains("(gb200) hold 24"),
        "{}",
        too_big.message
    );
    // Pods of 3 on nodes of 4 and 8: six fit the gb200 nodes, two the h100 node; three fit.
    assert!(!flagged.contains(&"team/pods-do-not-pack"));
}

#[test]
fn a_workload_requiring_a_level_cannot_fit_when_the_largest_domain_is_too_small() {
    let mut kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("cq", None, &[("gb200", quota(100))])],
    );
    kueue.workloads = vec![
        workload("rack-of-16", 4, &[(GPU, 4)], Some(RACK)),
        workload("rack-of-20", 5, &[(GPU, 4)], Some(RACK)),
        workload("no-such-level", 1, &[(GPU, 4)], Some("example.com/block")),
    ];
    let mut nodes = fleet();
    let report = kueue.report(&nodes, true);
    let flagged: Vec<&str> = report
        .workload_issues
        .iter()
        .map(|w| w.workload.as_str())
        .collect();
    assert_eq!(flagged, ["team/no-such-level", "team/rack-of-20"]);
    let message = &report.workload_issues[1].message;
    assert!(
        message.contains("in one example.com/rack domain"),
        "{message}"
    );
    assert!(message.contains("(r1, flavor gb200) holds 16"), "{message}");
    assert!(
        report.workload_issues[0]
            .message
            .contains("has the example.com/block label")
    );
    // A node of r1 NotReady: the rack of 16 no longer fits either.
    nodes[0].0.ready = false;
    let report = kueue.report(&nodes, true);
    assert!(
        report
            .workload_issues
            .iter()
            .any(|w| w.workload == "team/rack-of-16")
    );
}

#[test]
fn a_resource_no_flavor_of_the_queue_covers_cannot_fit_and_unknown_queues_are_left_to_kueue() {
    let mut kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("cq", None, &[("gb200", quota(100))])],
    );
    let mut lost = (*workload("lost", 1, &[(GPU, 1)], None)).clone();
    lost.queue = "no-such-queue".to_owned();
    kueue.workloads = vec![
        workload("amd", 1, &[("amd.com/gpu", 1)], None),
        workload("cpu-only", 1, &[("cpu", 4)], None),
        Arc::new(lost),
    ];
    let report = kueue.report(&fleet(), true);
    assert_eq!(report.workload_issues.len(), 1, "{report:#?}");
    assert!(
        report.workload_issues[0]
            .message
            .contains("no flavor of ClusterQueue cq covers amd.com/gpu")
    );
    // A subset of the nodes cannot say a workload fits nowhere.
    assert!(kueue.report(&fleet(), false).workload_issues.is_empty());
}

#[test]
fn an_inventory_of_some_nodes_judges_in_full_the_flavors_whose_node_labels_imply_its_selector() {
    let mut kueue = Kueue::new(
        vec![
            flavor("gb200", "gb200"),
            flavor("h100", "h100"),
            flavor("renamed", "old-pool"),
        ],
        vec![holder(
            "cq",
            None,
            &[
                ("gb200", quota(100)),
                ("h100", quota(8)),
                ("renamed", quota(4)),
            ],
        )],
    );
    kueue.workloads = vec![workload("too-big", 7, &[(GPU, 4)], None)];
    // pool=gb200: the gb200 flavor lies wholly inside; h100 and renamed do not.
    let report = kueue.report_within(&fleet(), "pool=gb200");
    let flavors: Vec<&str> = report.quotas.iter().map(|q| q.flavor.as_str()).collect();
    assert_eq!(flavors, ["gb200"], "{report:#?}");
    assert_eq!(
        reasons(&report, "gb200"),
        [QuotaIssueReason::QuotaExceedsCapacity]
    );
    // The workload's queue offers gb200 and h100 for the GPU; h100's nodes are not all here: not judged.
    assert!(report.workload_issues.is_empty());
    // `pool in (gb200,h100)`: both flavors lie wholly inside it, and the queue is judged.
    let report = kueue.report_within(&fleet(), "pool in (gb200,h100)");
    assert_eq!(
        report.workload_issues.len(),
        0,
        "h100 holds 8 more: 32 > 28 fits"
    );
    // A selector a flavor pins a different value of, or does not pin, leaves it out.
    let report = kueue.report_within(&fleet(), "example.com/rack=r1");
    assert!(
        report.quotas.iter().all(|q| q.issues.is_empty()),
        "{report:#?}"
    );
}
