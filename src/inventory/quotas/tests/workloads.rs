//! `workloadIssues[]`: the pending workloads that can never fit, and those that can.

use super::*;

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
    let mut kueue = racks_of(&[16, 20]);
    kueue.workloads.push(workload(
        "no-such-level",
        1,
        &[(GPU, 4)],
        Some("example.com/block"),
    ));
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

/// The verdicts are kept while what they read is the same (pods come and go: the free units change), and
/// judged again when a node's health or allocatable units change, or a workload comes.
#[test]
fn the_verdicts_are_kept_through_pod_changes_and_judged_again_when_health_or_workloads_change() {
    use crate::inventory::quotas::QuotaMemo;
    let mut kueue = racks_of(&[16, 20]);
    let mut nodes = fleet();
    let arcs = cached(&nodes);
    let memo = std::cell::RefCell::new(QuotaMemo::default());
    let flagged = |nodes: &[(NodeInventory, TextMap)], kueue: &Kueue| -> Vec<String> {
        assess_cached(nodes, &arcs, kueue, &memo)
            .workload_issues
            .into_iter()
            .map(|w| w.workload)
            .collect()
    };
    assert_eq!(flagged(&nodes, &kueue), ["team/rack-of-20"]);
    assert_eq!(memo.borrow().workloads.judged(), 1);
    assert_eq!(flagged(&nodes, &kueue), ["team/rack-of-20"]);
    for (entry, _) in &mut nodes {
        entry.free.insert(GPU.to_owned(), 0);
        entry.allocated.insert(GPU.to_owned(), 4);
    }
    assert_eq!(
        flagged(&nodes, &kueue),
        ["team/rack-of-20"],
        "every GPU busy: still fits once others finish"
    );
    assert_eq!(
        memo.borrow().workloads.judged(),
        1,
        "kept through the pod changes"
    );

    nodes[0].0.ready = false;
    assert_eq!(
        flagged(&nodes, &kueue),
        ["team/rack-of-16", "team/rack-of-20"],
        "r1 lost a node: 12 units in one rack"
    );
    assert_eq!(
        memo.borrow().workloads.judged(),
        2,
        "a node's health changed"
    );
    nodes[0].0.ready = true;
    nodes[1]
        .0
        .allocatable
        .insert(GPU.to_owned(), Amount::count(2));
    assert_eq!(
        flagged(&nodes, &kueue),
        ["team/rack-of-16", "team/rack-of-20"]
    );
    assert_eq!(
        memo.borrow().workloads.judged(),
        3,
        "a node's allocatable changed"
    );

    kueue.workloads.push(workload("one", 1, &[(GPU, 4)], None));
    flagged(&nodes, &kueue);
    assert_eq!(memo.borrow().workloads.judged(), 4, "a workload came");
}

/// One gb200 flavor with quota 100, and a workload of 4-GPU pods required in one rack per size in `gpus`
/// (`rack-of-16`, ...).
fn racks_of(gpus: &[u64]) -> Kueue {
    let mut kueue = Kueue::new(
        vec![flavor("gb200", "gb200")],
        vec![holder("cq", None, &[("gb200", quota(100))])],
    );
    kueue.workloads = gpus
        .iter()
        .map(|n| workload(&format!("rack-of-{n}"), n / 4, &[(GPU, 4)], Some(RACK)))
        .collect();
    kueue
}
