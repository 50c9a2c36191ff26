//! Kueue's quotas checked against the GPUs, on the real API server with the real Kueue (v0.17, built from its
//! Go module; docs/quotas.md): flavors, queues, cohorts and workloads made through Kueue's own API, Kueue's
//! ClusterQueue status and admissions read beside the operator's `status.quotas` and
//! `status.workloadIssues`. Kueue admits on quota alone; the operator says where the quota is not backed by
//! healthy GPUs and which pending workload can never start.
//!
//! The fleet: KWOK nodes of 4 GB200 GPUs in GKE's subblocks (tests/common/kueue/fleet.rs). One Kueue runs at
//! a time (it admits every Workload it sees), so the cases take turns.

mod common;

use std::time::{Duration, Instant};

use common::kueue::KueueProcess;
use common::kueue::fleet::{Fleet, LEVELS, SUBBLOCK, free_gpus, hold_gpus};
use common::kueue::process::one_at_a_time;
use common::kueue::quota_objects::{Admission, GPU, QuotaObjects};
use common::{TEST_LABEL, TestEnv, eventually};
use gpu_inventory_operator::crd::{GpuInventoryStatus, QuotaEntry};
use serde_json::{Value, json};

/// The operator's reaction to a change it watches: its coalescing window and one scan, on a loaded machine.
const CHANGE: Duration = Duration::from_secs(10);
/// From its start to the first inventory with Kueue's objects in it.
const CONVERGE: Duration = Duration::from_secs(30);

fn quota<'s>(status: &'s GpuInventoryStatus, flavor: &str) -> Option<&'s QuotaEntry> {
    status.quotas.iter().find(|q| q.flavor == flavor)
}

fn reasons(entry: &QuotaEntry) -> Vec<&str> {
    entry.issues.iter().map(|i| i.reason.as_str()).collect()
}

/// A flavor of the test's nodes (every node carrying its label: the operator's own selector is implied, so
/// the flavor is judged in full).
fn flavor_spec(env: &TestEnv, extra: Value) -> Value {
    let mut labels = json!({ TEST_LABEL: env.id });
    if let (Some(labels), Some(extra)) = (labels.as_object_mut(), extra.as_object()) {
        labels.extend(extra.clone());
    }
    json!({ "nodeLabels": labels })
}

fn queue_spec(env: &TestEnv, cohort: Option<&str>, flavors: Value) -> Value {
    let mut spec = json!({
        "namespaceSelector": { "matchLabels": { TEST_LABEL: env.id } },
        "resourceGroups": [{ "coveredResources": [GPU], "flavors": flavors }],
    });
    if let Some(cohort) = cohort {
        spec["cohortName"] = json!(cohort);
    }
    spec
}

fn gpu_quota(flavor: &str, nominal: u32, extra: Value) -> Value {
    let mut resource = json!({ "name": GPU, "nominalQuota": nominal });
    if let (Some(r), Some(extra)) = (resource.as_object_mut(), extra.as_object()) {
        r.extend(extra.clone());
    }
    json!({ "name": flavor, "resources": [resource] })
}

#[tokio::test]
async fn a_quota_above_the_healthy_gpus_is_flagged_while_kueue_admits_on_it_and_clears_on_recovery_or_a_lower_quota()
 {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("quota-exceeds").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4)]).await;
    let mut kueue = KueueProcess::start(&env);
    let kueue_objects = QuotaObjects::new(&env);
    let flavor = kueue_objects
        .create("ResourceFlavor", "gb200", flavor_spec(&env, json!({})))
        .await;
    let cq = kueue_objects
        .create(
            "ClusterQueue",
            "research",
            queue_spec(&env, None, json!([gpu_quota(&flavor, 16, json!({}))])),
        )
        .await;
    let local = kueue_objects
        .create("LocalQueue", "user", json!({ "clusterQueue": cq }))
        .await;
    kueue_objects.wait_active(&cq).await;
    kueue.assert_running();
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();

    let held = env
        .wait_inventory(
            &inv,
            CONVERGE,
            "the flavor's quota, every GPU healthy",
            |s| quota(s, &flavor).is_some_and(|q| q.healthy_gpus == 16 && q.nominal_quota == 16),
        )
        .await
        .status
        .unwrap();
    let entry = quota(&held, &flavor).unwrap();
    assert_eq!((entry.nodes, entry.gpus, entry.free_gpus), (4, 16, 16));
    assert_eq!(entry.cluster_queues, std::slice::from_ref(&cq));
    assert!(entry.issues.is_empty(), "{entry:?}");

    // One node cordoned: 12 healthy GPUs behind a quota of 16.
    let cordoned = fleet.nodes("b1-s1")[0].clone();
    env.cordon(&cordoned, true).await;
    let exceeded = env
        .wait_inventory(&inv, CHANGE, "QuotaExceedsCapacity", |s| {
            quota(s, &flavor).is_some_and(|q| reasons(q) == ["QuotaExceedsCapacity"])
        })
        .await
        .status
        .unwrap();
    let entry = quota(&exceeded, &flavor).unwrap();
    assert_eq!(entry.healthy_gpus, 12);
    let message = &entry.issues[0].message;
    for part in [
        "nominal quota 16 nvidia.com/gpu".to_owned(),
        format!("ClusterQueue {cq}"),
        "above the 12 healthy of 16".to_owned(),
        format!("{cordoned} (cordoned)"),
    ] {
        assert!(message.contains(&part), "{part:?} not in {message:?}");
    }
    // Kueue, beside: it admits 16 GPUs on the quota alone (its ClusterQueue reserves all 16), although only
    // 12 can be scheduled.
    let job = kueue_objects.submit("sixteen", &local, 4, 4, None).await;
    assert_eq!(kueue_objects.admission(&job).await, Admission::Reserved);
    kueue_objects.wait_reservation(&cq, "total", "16").await;
    let warning = eventually(CHANGE, "the QuotaExceedsCapacity event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("QuotaExceedsCapacity"))
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));

    // The node recovers: the promise holds again.
    env.cordon(&cordoned, false).await;
    env.wait_inventory(&inv, CHANGE, "the issue cleared by the uncordon", |s| {
        quota(s, &flavor).is_some_and(|q| q.issues.is_empty() && q.healthy_gpus == 16)
    })
    .await;

    // Cordoned again, and the quota lowered to what is healthy: the status follows the quota change.
    env.cordon(&cordoned, true).await;
    env.wait_inventory(&inv, CHANGE, "flagged again", |s| {
        quota(s, &flavor).is_some_and(|q| !q.issues.is_empty())
    })
    .await;
    let changed = Instant::now();
    kueue_objects
        .patch_spec(
            "ClusterQueue",
            &cq,
            json!({ "resourceGroups": [{ "coveredResources": [GPU],
            "flavors": [gpu_quota(&flavor, 12, json!({}))] }] }),
        )
        .await;
    env.wait_inventory(&inv, CHANGE, "the issue cleared by the lower quota", |s| {
        quota(s, &flavor).is_some_and(|q| q.nominal_quota == 12 && q.issues.is_empty())
    })
    .await;
    // Reported for the note, not judged here (figures come from benchmarks): the issue asks for 2 s.
    eprintln!("quota change -> status.quotas: {:?}", changed.elapsed());
    kueue.assert_running();
}

#[tokio::test]
async fn a_flavor_matching_no_node_and_a_workload_too_large_for_any_subblock_are_flagged_and_one_that_fits_later_is_not()
 {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("quota-workloads").await;
    // Subblock s1 holds 12 GPUs, s2 8.
    let fleet = Fleet::create(&env, &[("b1", "s1", 3), ("b1", "s2", 2)]).await;
    let mut kueue = KueueProcess::start(&env);
    let kueue_objects = QuotaObjects::new(&env);
    let levels: Vec<Value> = LEVELS.iter().map(|l| json!({ "nodeLabel": l })).collect();
    let topology = kueue_objects
        .create("Topology", "levels", json!({ "levels": levels }))
        .await;
    let mut gb200_spec = flavor_spec(&env, json!({}));
    gb200_spec["topologyName"] = json!(topology);
    let gb200 = kueue_objects
        .create("ResourceFlavor", "gb200", gb200_spec)
        .await;
    // A flavor relabelled away from its nodes: its nodeLabels match none.
    let retired = kueue_objects
        .create(
            "ResourceFlavor",
            "retired",
            flavor_spec(
                &env,
                json!({ "cloud.google.com/gke-nodepool": "retired-2025" }),
            ),
        )
        .await;
    let cq = kueue_objects
        .create(
            "ClusterQueue",
            "research",
            queue_spec(
                &env,
                None,
                json!([
                    // 20: every GPU of the fleet, so the quota itself holds and only a workload is at fault.
                    gpu_quota(&gb200, 20, json!({})),
                    gpu_quota(&retired, 8, json!({}))
                ]),
            ),
        )
        .await;
    let local = kueue_objects
        .create("LocalQueue", "user", json!({ "clusterQueue": cq }))
        .await;
    kueue_objects.wait_active(&cq).await;
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "the retired flavor flagged", |s| {
            quota(s, &retired).is_some_and(|q| reasons(q) == ["FlavorMatchesNoNodes"])
        })
        .await
        .status
        .unwrap();
    let entry = quota(&status, &gb200).expect("the gb200 flavor's entry");
    assert!(entry.issues.is_empty(), "{entry:?}");

    // 16 GPUs in one subblock: Kueue cannot place it (the largest holds 12) and says so in the Workload; the
    // operator says it never will, as it is.
    let too_big = kueue_objects
        .submit("sixteen", &local, 4, 4, Some(SUBBLOCK))
        .await;
    let Admission::Pending(why) = kueue_objects.admission(&too_big).await else {
        panic!("Kueue admitted 16 GPUs in one subblock of at most 12");
    };
    // Kueue's message names the last flavor it tried (here: the retired one, which has no topology), not why
    // the subblocks are too small.
    assert!(
        why.contains("couldn't assign flavors to pod set main"),
        "Kueue's reason: {why}"
    );
    let flagged = env
        .wait_inventory(&inv, CHANGE, "WorkloadCannotFit", |s| {
            s.workload_issue_count == 1
        })
        .await
        .status
        .unwrap();
    let issue = &flagged.workload_issues[0];
    assert_eq!(issue.workload, format!("{}/{too_big}", env.namespace));
    assert_eq!(
        (issue.cluster_queue.as_str(), issue.reason.as_str()),
        (cq.as_str(), "WorkloadCannotFit")
    );
    assert!(
        issue.message.contains(&format!(
            "({}, flavor {gb200}) holds 12 in pods of 4",
            fleet.subblock("b1", "s1")
        )),
        "{}",
        issue.message
    );

    // 12 GPUs in one subblock while a pod holds 4 of s1's: Kueue cannot place it now, but it would fit once
    // that pod finishes, so the operator does not flag it.
    hold_gpus(&env, &mut kueue, "holder", &fleet.nodes("b1-s1")[0], 4).await;
    let later = kueue_objects
        .submit("twelve", &local, 3, 4, Some(SUBBLOCK))
        .await;
    assert!(matches!(
        kueue_objects.admission(&later).await,
        Admission::Pending(_)
    ));
    let listed = env
        .wait_inventory(&inv, CHANGE, "the held GPUs counted", |s| {
            quota(s, &gb200).is_some_and(|q| q.free_gpus == 16)
        })
        .await
        .status
        .unwrap();
    assert_eq!(
        listed.workload_issue_count, 1,
        "{:?}",
        listed.workload_issues
    );
    // Once the holder is gone, the same job is admitted: it was never impossible.
    kueue_objects.delete("Workload", &later).await;
    free_gpus(&env, &mut kueue, "holder").await;
    let again = kueue_objects
        .submit("twelve-again", &local, 3, 4, Some(SUBBLOCK))
        .await;
    assert_eq!(kueue_objects.admission(&again).await, Admission::Reserved);
    let status = env.inventory(&inv).await.unwrap().status.unwrap();
    assert_eq!(
        status.workload_issue_count, 1,
        "{:?}",
        status.workload_issues
    );
    kueue.assert_running();
}

#[tokio::test]
async fn lending_and_borrowing_in_a_cohort_is_not_a_promise_and_a_cohorts_own_quota_is() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("quota-cohort").await;
    let _fleet = Fleet::create(&env, &[("b1", "s1", 3)]).await;
    let mut kueue = KueueProcess::start(&env);
    let kueue_objects = QuotaObjects::new(&env);
    let flavor = kueue_objects
        .create("ResourceFlavor", "gb200", flavor_spec(&env, json!({})))
        .await;
    let cohort = kueue_objects.create("Cohort", "org", json!({})).await;
    let lender = kueue_objects
        .create(
            "ClusterQueue",
            "lender",
            queue_spec(
                &env,
                Some(&cohort),
                json!([gpu_quota(&flavor, 8, json!({ "lendingLimit": 8 }))]),
            ),
        )
        .await;
    let borrower = kueue_objects
        .create(
            "ClusterQueue",
            "borrower",
            queue_spec(
                &env,
                Some(&cohort),
                json!([gpu_quota(&flavor, 0, json!({ "borrowingLimit": 8 }))]),
            ),
        )
        .await;
    let local = kueue_objects
        .create("LocalQueue", "user", json!({ "clusterQueue": borrower }))
        .await;
    kueue_objects.wait_active(&lender).await;
    kueue_objects.wait_active(&borrower).await;
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "the flavor's quota from both queues", |s| {
            quota(s, &flavor).is_some_and(|q| q.cluster_queues.len() == 2)
        })
        .await
        .status
        .unwrap();
    let entry = quota(&status, &flavor).unwrap();
    assert_eq!(
        (
            entry.nominal_quota,
            entry.borrowing_limit,
            entry.healthy_gpus
        ),
        (8, Some(8), 12)
    );
    assert!(entry.issues.is_empty(), "only borrowable: {entry:?}");

    // Kueue, beside: the borrower's 8 GPUs are admitted on the lender's quota.
    let job = kueue_objects.submit("borrowed", &local, 2, 4, None).await;
    assert_eq!(kueue_objects.admission(&job).await, Admission::Reserved);
    kueue_objects
        .wait_reservation(&borrower, "borrowed", "8")
        .await;
    let status = env.inventory(&inv).await.unwrap().status.unwrap();
    assert!(quota(&status, &flavor).is_some_and(|q| q.issues.is_empty()));

    // The Cohort's own quota is a promise too: 8 + 8 above 12 healthy.
    kueue_objects
        .patch_spec(
            "Cohort",
            &cohort,
            json!({ "resourceGroups": [{ "coveredResources": [GPU], "flavors": [gpu_quota(&flavor, 8, json!({}))] }] }),
        )
        .await;
    let exceeded = env
        .wait_inventory(&inv, CHANGE, "the cohort's quota counted", |s| {
            quota(s, &flavor).is_some_and(|q| q.nominal_quota == 16)
        })
        .await
        .status
        .unwrap();
    let entry = quota(&exceeded, &flavor).unwrap();
    assert_eq!(entry.cohorts, std::slice::from_ref(&cohort));
    assert_eq!(reasons(entry), ["QuotaExceedsCapacity"]);
    assert!(
        entry.issues[0]
            .message
            .contains(&format!("Cohort {cohort}")),
        "{}",
        entry.issues[0].message
    );
    kueue.assert_running();
}

#[tokio::test]
async fn a_quiet_minute_with_kueue_running_and_its_objects_rewritten_writes_nothing() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("quota-quiet").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 3)]).await;
    let kueue_process = KueueProcess::start(&env);
    let kueue = QuotaObjects::new(&env);
    let flavor = kueue
        .create("ResourceFlavor", "gb200", flavor_spec(&env, json!({})))
        .await;
    let cq = kueue
        .create(
            "ClusterQueue",
            "research",
            queue_spec(&env, None, json!([gpu_quota(&flavor, 16, json!({}))])),
        )
        .await;
    let local = kueue
        .create("LocalQueue", "user", json!({ "clusterQueue": cq }))
        .await;
    kueue.wait_active(&cq).await;
    // One Workload that can never fit, pending for good: one pod of 20 GPUs, above the queue's quota of 16 (so
    // Kueue, which admits on quota alone, refuses it too) and above any node's 4.
    let stuck = kueue.submit("stuck", &local, 1, 20, None).await;
    assert!(matches!(
        kueue.admission(&stuck).await,
        Admission::Pending(_)
    ));
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "the quota flagged and the workload", |s| {
        s.workload_issue_count == 1 && quota(s, &flavor).is_some_and(|q| !q.issues.is_empty())
    })
    .await;
    for node in fleet.nodes("b1-s1") {
        env.wait_gpunode(node, CONVERGE, "its GpuNode", |_| true)
            .await;
    }
    // Let the first writes settle (the GpuNodes and the status land within a pass of each other).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = env.written_versions().await;
    // A quiet minute for the GPUs, not for Kueue's objects: every 5 s the Workload and the ClusterQueue get a
    // new annotation (a watch event each, as Kueue's status heartbeats are), which is no change to the
    // operator's view.
    let quiet = Instant::now();
    let mut tick = 0;
    while quiet.elapsed() < Duration::from_secs(60) {
        tick += 1;
        let note =
            json!({ "metadata": { "annotations": { "example.com/tick": tick.to_string() } } });
        kueue.patch_object("Workload", &stuck, note.clone()).await;
        kueue.patch_object("ClusterQueue", &cq, note).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    let after = env.written_versions().await;
    assert_eq!(before, after, "the operator wrote in a quiet minute");
    drop(kueue_process);
}
