//! The real Kueue as referee of `gpu-inventory-operator fit` (issue 37; docs/kueue-referee.md): the same
//! question, "can a job of G GPUs in pods of K start now in one domain of this level?", asked of Kueue's
//! topology-aware scheduling (a Workload whose PodSet requires the level) and of `fit` (live, against the same
//! cluster). They must agree: Kueue admits it exactly when `fit` says it fits, and the hosts Kueue assigns lie
//! in one of the domains `fit` lists. Each case first holds Kueue to a decision computed by hand (which
//! domain, or how many pods at most fit), so a Kueue that is set up wrong fails before `fit` is asked.
//!
//! The fleet: KWOK nodes of 4 NVIDIA GB200 GPUs in blocks and subblocks of GKE's topology labels. Needs
//! kube-scheduler, kube-controller-manager and KWOK (hack/local-cluster.sh) and Kueue, built once by
//! `hack/build-control-plane.sh kueue`. One Kueue runs at a time (it admits every Workload it sees), so the
//! cases take turns.

mod common;

use std::collections::BTreeMap;

use common::fit_cli::{FitAnswer, FitQuestion, fit};
use common::kueue::assignment::pods_per_host;
use common::kueue::fleet::{BLOCK, Fleet, LEVELS, PRODUCT, SUBBLOCK, free_gpus, hold_gpus, taint};
use common::kueue::process::one_at_a_time;
use common::kueue::{Decision, KueueProcess, TasQueue};
use common::{TEST_LABEL, TestEnv};
use serde_json::json;

/// Two blocks of unequal subblocks, so that each question has one right domain: b1-s1 offers 16 GPUs, b1-s2
/// 12, b2-s1 and b2-s2 8 each; block b1 28, b2 16.
const UNEVEN: &[(&str, &str, usize)] = &[
    ("b1", "s1", 4),
    ("b1", "s2", 3),
    ("b2", "s1", 2),
    ("b2", "s2", 2),
];

fn question(gpus: u32, gpus_per_pod: u32, level: &str) -> FitQuestion<'_> {
    FitQuestion {
        gpus,
        gpus_per_pod,
        level,
        product: PRODUCT,
    }
}

/// Asks Kueue: a Workload of G/K pods of K GPUs, required in one domain of the level.
async fn ask_kueue(queue: &TasQueue, name: &str, q: FitQuestion<'_>) -> Decision {
    assert_eq!(q.gpus % q.gpus_per_pod, 0, "G must be a multiple of K");
    queue
        .submit(name, q.gpus / q.gpus_per_pod, q.gpus_per_pod, q.level)
        .await
}

/// Kueue's decision, by hand: admitted, each of `nodes` given `pods` pods.
fn expect_admitted_on(decision: &Decision, nodes: &[String], pods: u32) {
    let expected: BTreeMap<String, u32> = nodes.iter().map(|n| (n.clone(), pods)).collect();
    assert_eq!(decision.hosts(), &expected, "Kueue's placement");
}

/// Kueue's decision, by hand: admitted, `pods` pods in all, on hosts all among `within`.
fn expect_admitted_within(decision: &Decision, within: &[String], pods: u32) {
    let hosts = decision.hosts();
    assert_eq!(hosts.values().sum::<u32>(), pods, "pods placed: {hosts:?}");
    let outside: Vec<&String> = hosts.keys().filter(|h| !within.contains(h)).collect();
    assert!(
        outside.is_empty(),
        "Kueue placed pods on {outside:?}, outside {within:?}"
    );
}

/// Kueue's decision, by hand: refused, at most `fit` of the `pods` pods fit in one domain.
fn expect_refused(decision: &Decision, fit: u32, pods: u32) {
    let Decision::Refused(why) = decision else {
        panic!("Kueue admitted the Workload on {decision:?}; expected a refusal");
    };
    let count = if fit == 0 {
        format!("doesn't allow to fit any of {pods} pod(s)")
    } else {
        format!("allows to fit only {fit} out of {pods} pod(s)")
    };
    assert!(
        why.contains(&count),
        "Kueue's reason: {why}; expected it to say {count}"
    );
}

/// `fit`'s domains, by hand: `(label value, free GPUs, nodes offering a pod)`, in any order among equals.
fn expect_domains(answer: &FitAnswer, expected: &[(String, u64, &[String])]) {
    let mut got: Vec<(String, u64, Vec<String>)> = answer
        .domains
        .iter()
        .map(|d| (d.name.clone(), d.free_gpus, sorted(&d.nodes)))
        .collect();
    let mut want: Vec<(String, u64, Vec<String>)> = expected
        .iter()
        .map(|(name, free, nodes)| (name.clone(), *free, sorted(nodes)))
        .collect();
    // The order of domains is checked by the referee (largest first); ties may come either way.
    got.sort();
    want.sort();
    assert_eq!(got, want, "fit's domains: {answer:?}");
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names
}

/// The referee: asks `fit` the question Kueue decided and holds the two to each other. Returns `fit`'s answer.
async fn referee(env: &TestEnv, decision: &Decision, q: FitQuestion<'_>) -> FitAnswer {
    // The test's nodes, as Kueue's ResourceFlavor selects them: other tests' GB200 nodes stay out of both.
    let answer = fit(q, &format!("{TEST_LABEL}={}", env.id));
    assert_eq!(
        (
            answer.gpus,
            answer.gpus_per_pod,
            answer.level.as_deref(),
            answer.product.as_deref()
        ),
        (
            u64::from(q.gpus),
            u64::from(q.gpus_per_pod),
            Some(q.level),
            Some(PRODUCT)
        ),
        "fit answered another question: {answer:?}"
    );
    let frees: Vec<u64> = answer.domains.iter().map(|d| d.free_gpus).collect();
    assert!(
        frees.windows(2).all(|w| w[0] >= w[1]),
        "domains not largest first: {answer:?}"
    );
    assert!(
        frees.iter().all(|&f| f >= u64::from(q.gpus)),
        "a listed domain is too small: {answer:?}"
    );
    match decision {
        Decision::Admitted(hosts) => {
            assert!(
                answer.fits,
                "Kueue admitted the job on {hosts:?}, fit says it does not fit: {answer:?}"
            );
            let home = answer
                .domains
                .iter()
                .find(|d| hosts.keys().all(|h| d.nodes.contains(h)));
            assert!(
                home.is_some(),
                "Kueue's hosts {hosts:?} lie in no single domain fit lists: {:?}",
                answer.domains
            );
        }
        Decision::Refused(why) => {
            assert!(
                !answer.fits,
                "Kueue refused the job ({why}), fit says it fits: {answer:?}"
            );
            assert!(
                answer.domains.is_empty(),
                "no domain fits, yet fit lists some: {answer:?}"
            );
            assert!(
                answer.why.as_deref().is_some_and(|w| !w.is_empty()),
                "fit says no without why: {answer:?}"
            );
        }
    }
    answer
}

#[tokio::test]
async fn a_job_that_fits_in_a_subblock_goes_to_one_that_fit_lists() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-subblock").await;
    let fleet = Fleet::create(&env, UNEVEN).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;

    let q = question(12, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "twelve", q).await;
    // b1-s1 (16) and b1-s2 (12) can take it; Kueue's best fit is the tightest: b1-s2, one pod per node.
    expect_admitted_on(&decision, fleet.nodes("b1-s2"), 1);
    let answer = referee(&env, &decision, q).await;
    expect_domains(
        &answer,
        &[
            (fleet.subblock("b1", "s1"), 16, fleet.nodes("b1-s1")),
            (fleet.subblock("b1", "s2"), 12, fleet.nodes("b1-s2")),
        ],
    );
}

#[tokio::test]
async fn a_job_larger_than_any_subblock_fits_only_in_a_block() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-block").await;
    let fleet = Fleet::create(&env, UNEVEN).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;

    let in_subblock = question(20, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "twenty-subblock", in_subblock).await;
    // The largest subblock, b1-s1, takes 4 of the 5 pods.
    expect_refused(&decision, 4, 5);
    referee(&env, &decision, in_subblock).await;
    queue.withdraw("twenty-subblock").await;

    let in_block = question(20, 4, BLOCK);
    let decision = ask_kueue(&queue, "twenty-block", in_block).await;
    // Only b1 (28) can take 20.
    expect_admitted_within(&decision, &fleet.block_nodes("b1"), 5);
    let answer = referee(&env, &decision, in_block).await;
    expect_domains(
        &answer,
        &[(fleet.block("b1"), 28, &fleet.block_nodes("b1"))],
    );
}

#[tokio::test]
async fn a_job_larger_than_every_block_fits_nowhere() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-nowhere").await;
    Fleet::create(&env, UNEVEN).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;

    let q = question(32, 4, BLOCK);
    let decision = ask_kueue(&queue, "thirty-two", q).await;
    // The largest block, b1 (28), takes 7 of the 8 pods.
    expect_refused(&decision, 7, 8);
    referee(&env, &decision, q).await;
}

#[tokio::test]
async fn gpus_held_by_pods_outside_kueue_count_until_the_pods_go() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-freed").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4), ("b1", "s2", 3)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let s1 = fleet.nodes("b1-s1").to_vec();
    hold_gpus(&env, &mut kueue, "holder", &s1[0], 4).await;

    let q = question(16, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "sixteen-held", q).await;
    // b1-s1 offers 12 while the pod holds a node, b1-s2 12: 3 of the 4 pods.
    expect_refused(&decision, 3, 4);
    referee(&env, &decision, q).await;

    free_gpus(&env, &mut kueue, "holder").await;
    // Kueue does not retry a Workload it found inadmissible when a pod outside it goes (only node, flavor
    // and queue changes do: docs/kueue-referee.md); the question is asked again.
    queue.withdraw("sixteen-held").await;
    let decision = ask_kueue(&queue, "sixteen-freed", q).await;
    expect_admitted_on(&decision, &s1, 1);
    let answer = referee(&env, &decision, q).await;
    expect_domains(&answer, &[(fleet.subblock("b1", "s1"), 16, &s1)]);
}

#[tokio::test]
async fn a_not_ready_node_and_a_cordoned_node_offer_nothing() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-notready").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4), ("b1", "s2", 4)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let (s1, s2) = (fleet.nodes("b1-s1").to_vec(), fleet.nodes("b1-s2").to_vec());

    env.set_ready(&s1[0], "False").await;
    kueue
        .wait_logged(
            "Node Ready status changed, triggering reconcile",
            &[&format!("\"{}\"", s1[0])],
            "Kueue seeing the node NotReady",
        )
        .await;
    env.cordon(&s2[0], true).await;
    // Kueue takes the cordon in with the same node update it logs nothing for; the node lifecycle controller's
    // `unschedulable` taint comes after it, and that update Kueue logs.
    kueue
        .wait_logged(
            "Node taints changed, triggering reconcile",
            &[&format!("\"{}\"", s2[0])],
            "Kueue seeing the node cordoned",
        )
        .await;

    let q = question(16, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "sixteen", q).await;
    // Each subblock has 3 nodes left: 3 of the 4 pods.
    expect_refused(&decision, 3, 4);
    referee(&env, &decision, q).await;
    queue.withdraw("sixteen").await;

    let q = question(12, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "twelve", q).await;
    let usable: Vec<String> = s1[1..].iter().chain(&s2[1..]).cloned().collect();
    expect_admitted_within(&decision, &usable, 3);
    let answer = referee(&env, &decision, q).await;
    // Both subblocks offer 12 on the 3 nodes left each.
    expect_domains(
        &answer,
        &[
            (fleet.subblock("b1", "s1"), 12, &s1[1..]),
            (fleet.subblock("b1", "s2"), 12, &s2[1..]),
        ],
    );
}

#[tokio::test]
async fn pods_smaller_than_a_node_take_only_whole_pods_of_what_is_free() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-halves").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 2), ("b1", "s2", 2)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let (s1, s2) = (fleet.nodes("b1-s1").to_vec(), fleet.nodes("b1-s2").to_vec());
    // b1-s1: 3 + 3 GPUs free, but pods of 2 take 2 of each node's 3: 4. b1-s2: 0 + 1 free: nothing.
    hold_gpus(&env, &mut kueue, "one-a", &s1[0], 1).await;
    hold_gpus(&env, &mut kueue, "one-b", &s1[1], 1).await;
    hold_gpus(&env, &mut kueue, "four", &s2[0], 4).await;
    hold_gpus(&env, &mut kueue, "three", &s2[1], 3).await;

    let six = question(6, 2, SUBBLOCK);
    let decision = ask_kueue(&queue, "six", six).await;
    // Free GPUs alone (6 in b1-s1) would say yes; whole pods: 2 of the 3.
    expect_refused(&decision, 2, 3);
    referee(&env, &decision, six).await;
    queue.withdraw("six").await;

    let four = question(4, 2, SUBBLOCK);
    let decision = ask_kueue(&queue, "four", four).await;
    expect_admitted_on(&decision, &s1, 1);
    let answer = referee(&env, &decision, four).await;
    expect_domains(&answer, &[(fleet.subblock("b1", "s1"), 4, &s1)]);
}

/// The key of the taint the taint case puts on nodes.
const RESERVED: &str = "example.com/reserved-for";

#[tokio::test]
async fn a_node_tainted_no_schedule_offers_nothing_and_prefer_no_schedule_bars_nothing() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("ref-taints").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4), ("b1", "s2", 3)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let (s1, s2) = (fleet.nodes("b1-s1").to_vec(), fleet.nodes("b1-s2").to_vec());
    // Nodes kept for another team; the Workload has no toleration (docs/kueue-referee.md: Kueue counts a node
    // only if the PodSet or the ResourceFlavor tolerates its NoSchedule and NoExecute taints). Not the
    // `nvidia.com/gpu` taint many GPU nodes carry: whether a job tolerates that one is open (same page).
    taint(&env, &mut kueue, &s1[0], RESERVED, "NoSchedule").await;
    taint(&env, &mut kueue, &s2[0], RESERVED, "PreferNoSchedule").await;

    let q = question(16, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "sixteen", q).await;
    // Without its tainted node b1-s1 offers 12, as b1-s2 does: 3 of the 4 pods.
    expect_refused(&decision, 3, 4);
    referee(&env, &decision, q).await;
    queue.withdraw("sixteen").await;

    let q = question(12, 4, SUBBLOCK);
    let decision = ask_kueue(&queue, "twelve", q).await;
    let usable: Vec<String> = s1[1..].iter().chain(&s2).cloned().collect();
    expect_admitted_within(&decision, &usable, 3);
    let answer = referee(&env, &decision, q).await;
    // b1-s2 counts its PreferNoSchedule node: without it, it would offer 8.
    expect_domains(
        &answer,
        &[
            (fleet.subblock("b1", "s1"), 12, &s1[1..]),
            (fleet.subblock("b1", "s2"), 12, &s2),
        ],
    );
}

/// The assignment reader against v1beta2's compact form, by hand: a prefix and suffix around individual roots
/// with individual pod counts, and a universal value with a universal count (no cluster needed).
#[test]
fn kueue_s_compact_topology_assignment_is_read_host_by_host() {
    let assignment = json!({
        "levels": [BLOCK, "kubernetes.io/hostname"],
        "slices": [
            { "domainCount": 2,
              "valuesPerLevel": [{ "universal": "b1" }, { "individual": { "prefix": "gb-", "suffix": "-x", "roots": ["1", "2"] } }],
              "podCounts": { "individual": [3, 1] } },
            { "domainCount": 1,
              "valuesPerLevel": [{ "universal": "b2" }, { "universal": "gb-9" }],
              "podCounts": { "universal": 2 } },
        ],
    });
    let hosts = pods_per_host(&assignment).unwrap();
    assert_eq!(
        hosts,
        vec![
            ("gb-1-x".to_owned(), 3),
            ("gb-2-x".to_owned(), 1),
            ("gb-9".to_owned(), 2)
        ]
    );
    let without_hosts = json!({ "levels": [BLOCK], "slices": [] });
    assert!(
        pods_per_host(&without_hosts)
            .unwrap_err()
            .contains("no kubernetes.io/hostname level")
    );
}
