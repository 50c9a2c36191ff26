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
