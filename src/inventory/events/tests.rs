use super::*;
use crate::inventory::model::NamespaceTotals;
use crate::inventory::test_support::{entry, inventory};

fn node(name: &str, ready: bool, issues: &[IssueReason]) -> NodeInventory {
    entry(name, ready, 1, issues)
}

fn status(nodes: Vec<NodeInventory>) -> Inventory {
    inventory(nodes)
}

fn reasons(events: &[InventoryEvent]) -> Vec<&str> {
    events.iter().map(|e| e.reason.as_str()).collect()
}

#[test]
fn planned_work_is_told_and_a_health_failure_warned_about() {
    let before = status(vec![node("a", true, &[]), node("b", true, &[])]);
    let after = status(vec![
        node("a", true, &[IssueReason::DriverUpgradeInProgress]),
        node("b", true, &[IssueReason::GpuHealthCheckFailed]),
    ]);
    let events = transitions_since(EventBase::Model(&before), &after);
    let of = |reason: &str| events.iter().find(|e| e.reason == reason).unwrap().severity;
    assert!(
        matches!(of("DriverUpgradeInProgress"), Severity::Info),
        "{events:?}"
    );
    assert!(
        matches!(of("GpuHealthCheckFailed"), Severity::Degraded),
        "{events:?}"
    );
    // Once per transition: the same state again is no event; the issue going is one.
    assert!(transitions_since(EventBase::Model(&after), &after).is_empty());
    let cleared = transitions_since(EventBase::Model(&after), &before);
    assert!(
        reasons(&cleared).contains(&"GpuHealthCheckFailedResolved"),
        "{cleared:?}"
    );
}

#[test]
fn a_cut_published_status_compares_only_the_nodes_it_lists() {
    let mut published = status(vec![node("a", true, &[]), node("b", true, &[])]);
    published.nodes.retain(|n| n.name == "a");
    let whole = status(vec![
        node("a", false, &[IssueReason::NotReady]),
        node("b", true, &[]),
        node("c", true, &[]),
    ]);
    let base = EventBase::Published {
        inventory: Some(&published),
        complete: false,
    };
    let events = transitions_since(base, &whole);
    // Per node, only "a" is known: no Added, Removed or GpuCountChanged for the others.
    assert_eq!(reasons(&events), ["GpuNodeNotReady"], "{events:?}");
    // Against the whole model, the new node is told.
    let model = status(vec![node("a", true, &[]), node("b", true, &[])]);
    let events = transitions_since(EventBase::Model(&model), &whole);
    assert!(reasons(&events).contains(&"GpuNodeAdded"), "{events:?}");
    assert!(!reasons(&events).contains(&"GpuNodeRemoved"), "{events:?}");
    // Nothing published yet: the first observation.
    let base = EventBase::Published {
        inventory: None,
        complete: true,
    };
    let events = transitions_since(base, &whole);
    assert_eq!(reasons(&events), ["InventoryObserved"]);
}

#[test]
fn first_observation_is_one_summary() {
    let events = transitions(None, &status(vec![node("a", true, &[])]));
    assert_eq!(reasons(&events), ["InventoryObserved"]);
}

#[test]
fn not_ready_is_one_warning_naming_the_node() {
    let old = status(vec![node("a", true, &[]), node("b", true, &[])]);
    let new = status(vec![
        node("a", false, &[IssueReason::NotReady]),
        node("b", true, &[]),
    ]);
    let events = transitions(Some(&old), &new);
    assert_eq!(reasons(&events), ["GpuNodeNotReady"]);
    assert_eq!(events[0].severity, Severity::Degraded);
    assert!(
        events[0]
            .note
            .starts_with("GPU node a became NotReady: NotReady details"),
        "{}",
        events[0].note
    );
    assert_eq!(reasons(&transitions(Some(&new), &old)), ["GpuNodeReady"]);
    assert!(
        transitions(Some(&new), &new).is_empty(),
        "no change, no event"
    );
}

#[test]
fn nodes_gpus_and_issues() {
    let old = status(vec![
        node("a", true, &[]),
        node("b", true, &[IssueReason::GpusUnhealthy]),
    ]);
    let new = status(vec![
        node("b", true, &[]),
        node("c", true, &[IssueReason::Unschedulable]),
    ]);
    let events = transitions(Some(&old), &new);
    assert_eq!(
        reasons(&events),
        ["GpuNodeAdded", "GpuNodeRemoved", "GpusUnhealthyResolved"]
    );
    let new2 = status(vec![
        node("b", true, &[IssueReason::GpusUnhealthy]),
        node("c", true, &[IssueReason::Unschedulable]),
    ]);
    let events = transitions(Some(&new), &new2);
    assert_eq!(reasons(&events), ["GpusUnhealthy"]);
    assert_eq!(events[0].note, "b: GpusUnhealthy details");
}

#[test]
fn a_gpu_count_change_names_the_node_and_its_counts_and_many_are_folded() {
    let with_counts = |counts: &[u64]| {
        status(
            counts
                .iter()
                .enumerate()
                .map(|(i, c)| entry(&format!("n{i}"), true, *c, &[]))
                .collect(),
        )
    };
    let events = transitions(Some(&with_counts(&[8, 8, 4])), &with_counts(&[8, 6, 4]));
    assert_eq!(reasons(&events), ["GpuCountChanged"]);
    assert_eq!(events[0].note, "GPU node n1: 8 -> 6 GPUs");
    assert_eq!(events[0].severity, Severity::Info);

    let old = with_counts(&[8; 7]);
    let new = with_counts(&[7; 7]);
    let events = transitions(Some(&old), &new);
    assert_eq!(reasons(&events), ["GpuCountChanged"], "{events:?}");
    assert!(
        events[0]
            .note
            .starts_with("7 nodes: GPU count changed (GPUs in all: 56 -> 49): n0, n1"),
        "{}",
        events[0].note
    );
}

#[test]
fn mass_changes_are_folded() {
    let old = status(
        (0..20)
            .map(|i| node(&format!("n{i:02}"), true, &[]))
            .collect(),
    );
    let new = status(
        (0..20)
            .map(|i| node(&format!("n{i:02}"), false, &[IssueReason::NotReady]))
            .collect(),
    );
    let events = transitions(Some(&old), &new);
    assert_eq!(reasons(&events), ["GpuNodeNotReady"]);
    assert!(
        events[0]
            .note
            .starts_with("20 nodes: GPU node became NotReady: n00, n01"),
        "{}",
        events[0].note
    );
}

#[test]
fn only_flips_of_gpus_available_make_demand_events() {
    let with = |pending: u32, allocated: u64| {
        let mut n = node("a", true, &[]);
        n.allocated = crate::inventory::model::ResourceMap::from_iter([(
            "nvidia.com/gpu".to_owned(),
            allocated,
        )]);
        let mut inv = inventory(vec![n]);
        inv.pending_gpu_pods = pending;
        inv.namespaces = vec![NamespaceTotals {
            name: "ml".into(),
            pending_pods: pending,
            pending: [("nvidia.com/gpu".to_owned(), 8 * u64::from(pending))].into(),
            ..Default::default()
        }];
        inv
    };
    assert!(
        transitions(Some(&with(0, 1)), &with(0, 2)).is_empty(),
        "a pod starting is no event"
    );
    let warned = transitions(Some(&with(0, 1)), &with(2, 1));
    assert_eq!(reasons(&warned), ["GpuDemandExceedsSupply"]);
    assert!(
        warned[0].note.contains("ml: 2 pods (16 nvidia.com/gpu)"),
        "{}",
        warned[0].note
    );
    assert!(
        transitions(Some(&with(2, 1)), &with(3, 1)).is_empty(),
        "one more pending pod is no event"
    );
    assert_eq!(
        reasons(&transitions(Some(&with(3, 1)), &with(0, 1))),
        ["GpuDemandMet"]
    );
}

#[test]
fn a_degraded_nvlink_domain_is_one_warning_when_it_appears_and_one_event_when_it_clears() {
    use crate::inventory::model::{DomainProblem, DomainProblemReason, TopologySummary};
    let with_problem = |problems: Vec<DomainProblem>| {
        let mut inventory = status(vec![node("a", true, &[])]);
        inventory.topology = vec![TopologySummary {
            product: "NVIDIA-GB200".into(),
            level: "nvlink".into(),
            gpus_per_pod: 4,
            degraded_domains: problems.len() as u32,
            problems,
            ..Default::default()
        }];
        inventory
    };
    let problem = DomainProblem {
        reason: DomainProblemReason::NvlinkDomainDegraded,
        domain: "rack-1.1".into(),
        nodes: vec!["a".into()],
        message: "NVLink partition rack-1.1 (rack rack-1): 17 of 18 nodes usable (a NotReady); a 72-GPU job \
                  cannot start here"
            .into(),
    };
    let healthy = with_problem(Vec::new());
    let degraded = with_problem(vec![problem.clone()]);
    let appeared = transitions_since(EventBase::Model(&healthy), &degraded);
    assert_eq!(reasons(&appeared), ["NvlinkDomainDegraded"]);
    assert_eq!(appeared[0].severity, Severity::Degraded);
    assert_eq!(appeared[0].note, problem.message);
    // Still degraded, with another member at fault: no new event (one per transition).
    let mut worse = problem.clone();
    worse.message = "16 of 18 nodes usable".into();
    let still = transitions_since(EventBase::Model(&degraded), &with_problem(vec![worse]));
    assert!(reasons(&still).is_empty(), "{still:?}");
    let cleared = transitions_since(EventBase::Model(&degraded), &healthy);
    assert_eq!(reasons(&cleared), ["NvlinkDomainDegradedResolved"]);
    assert_eq!(cleared[0].severity, Severity::Info);
}

fn with_quotas(workloads: usize, exceeded: bool) -> Inventory {
    use crate::inventory::model::{
        FlavorQuota, QuotaIssue, QuotaIssueReason, QuotaReport, WorkloadIssue,
    };
    let mut inventory = status(vec![node("a", true, &[])]);
    let issues = if exceeded {
        vec![QuotaIssue {
            reason: QuotaIssueReason::QuotaExceedsCapacity,
            message: "flavor gb200: nominal quota 24 nvidia.com/gpu is above the 20 healthy".into(),
        }]
    } else {
        Vec::new()
    };
    inventory.quotas = Some(QuotaReport {
        quotas: vec![FlavorQuota {
            flavor: "gb200".into(),
            resource: "nvidia.com/gpu".into(),
            issues,
            ..FlavorQuota::default()
        }],
        workload_issues: (0..workloads)
            .map(|i| WorkloadIssue {
                workload: format!("ml/job-{i}"),
                cluster_queue: "cq".into(),
                message: "PodSet main asks for 80".into(),
            })
            .collect(),
    });
    inventory
}

#[test]
fn a_quota_issue_and_a_workload_that_cannot_fit_are_warned_about_once_and_told_when_they_clear() {
    let calm = with_quotas(0, false);
    let bad = with_quotas(1, true);
    let events = transitions_since(EventBase::Model(&calm), &bad);
    assert_eq!(
        reasons(&events),
        ["QuotaExceedsCapacity", "WorkloadCannotFit"]
    );
    assert!(events.iter().all(|e| e.severity == Severity::Degraded));
    assert!(
        events[1]
            .note
            .contains("Workload ml/job-0 can never be admitted"),
        "{events:?}"
    );
    assert!(
        transitions_since(EventBase::Model(&bad), &bad).is_empty(),
        "no change, no event"
    );
    let events = transitions_since(EventBase::Model(&bad), &calm);
    assert_eq!(
        reasons(&events),
        ["QuotaExceedsCapacityResolved", "WorkloadCannotFitResolved"]
    );
    assert!(events.iter().all(|e| e.severity == Severity::Info));
    // Many workloads at once: one event naming the first few.
    let events = transitions_since(EventBase::Model(&calm), &with_quotas(40, false));
    assert_eq!(reasons(&events), ["WorkloadCannotFit"]);
    assert!(
        events[0].note.starts_with("40 pending workloads"),
        "{events:?}"
    );
}
