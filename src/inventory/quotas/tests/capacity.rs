//! `quotas[]`: each flavor's promise against its nodes, cohorts, scopes and the members' memo.

use super::*;

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

#[test]
fn the_flavors_members_are_kept_while_the_nodes_are_the_same_and_read_again_when_one_changes() {
    let kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("cq", None, &[("gb200", quota(8))])],
    );
    let fleet = fleet();
    let mut arcs = cached(&fleet);
    let memo = std::cell::RefCell::new(QuotaMemo::default());
    let report = |arcs: &[Arc<ClusterNode>]| assess_cached(&fleet, arcs, &kueue, &memo);
    assert_eq!(report(&arcs).quotas[0].nodes, 6);
    assert_eq!(report(&arcs).quotas[0].nodes, 6, "kept");
    // Node r1-0 relabelled out of the pool: a new Arc, so the members are read again.
    arcs[0] = cached(&[(node("r1-0", 4, 4), labels("other", "r1"))]).remove(0);
    assert_eq!(report(&arcs).quotas[0].nodes, 5);
}
