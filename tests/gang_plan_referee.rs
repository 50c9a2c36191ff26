//! The real Kueue referees `fit --plan` for a gang (#57 item 4). Small pods fragment one domain so that a gang
//! required in one domain of a level is not admitted; `fit --plan` names the domain, its nodes and the pods to
//! move; once those pods are gone, Kueue admits the gang on the plan's nodes, kube-scheduler binds the gang's
//! pods there (pinned as Kueue's topology assignment pins them), and the moved pods, recreated without a node,
//! are bound off the gang's nodes. Fails if Kueue or the scheduler disagrees with the plan. Two levels: a
//! network subblock (4 pods x 4 GPUs) and an NVLink clique (16 pods x 4 GPUs, a 64-GPU gang).
//!
//! The order of the steps matters: kube-scheduler knows nothing of Kueue's reservations, so the moved pods are
//! recreated only once the gang's pods hold their GPUs (a controller recreating them at once could take the
//! room back; docs/fragmentation.md, "Carrying it out"). Kueue does not retry a Workload when a pod outside it
//! goes, so the gang is submitted again after the deletions (docs/kueue-referee.md).

mod common;

use std::collections::BTreeSet;

use common::allocation::node;
use common::fit_plan_cli::fit_as;
use common::kueue::fleet::{Fleet, HOSTNAME, LEVELS, PRODUCT, SUBBLOCK, free_gpus, hold_gpus};
use common::kueue::process::one_at_a_time;
use common::kueue::{Decision, KueueProcess, TasQueue};
use common::{TEST_LABEL, TestEnv};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

const CLIQUE: &str = "nvidia.com/gpu.clique";

/// A gang, the plan expected for it, and where the moved pods may go.
struct Case<'a> {
    /// The level as Kueue's Topology names it (a label key), and as `fit --level` does.
    kueue_level: &'a str,
    fit_level: &'a str,
    pods: u32,
    /// The domain's label value and its nodes, all of which the gang takes.
    domain: String,
    hosts: Vec<String>,
    /// The small pods (name, node), each holding one GPU: the plan moves them all.
    smalls: Vec<(String, String)>,
    /// The nodes the moved pods may go to.
    away: Vec<String>,
}

#[tokio::test]
async fn kueue_admits_the_gang_in_the_plan_s_subblock_once_the_named_pod_has_moved() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("gang-plan").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4), ("b1", "s2", 3)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let (s1, s2) = (fleet.nodes("b1-s1").to_vec(), fleet.nodes("b1-s2").to_vec());
    // s1 offers 3 pods of 4 with the small pod in place, s2 has only 3 nodes: Kueue fits 3 of the 4 pods.
    let case = Case {
        kueue_level: SUBBLOCK,
        fit_level: SUBBLOCK,
        pods: 4,
        domain: fleet.subblock("b1", "s1"),
        hosts: s1.clone(),
        smalls: vec![("small".to_owned(), s1[0].clone())],
        away: s2,
    };
    referee_plan(&env, &mut kueue, &queue, &case).await;
}

#[tokio::test]
async fn kueue_admits_a_64_gpu_gang_in_the_plan_s_nvlink_clique_once_three_pods_have_moved() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("gang-clique").await;
    let (a, b) = (format!("{}-a.1", env.id), format!("{}-b.1", env.id));
    // Clique a: 16 nodes, 3 holding a small pod (13 pods of 4 free); clique b: 12 nodes, too few for 16.
    let hosts = clique(&env, "a", &a, 16).await;
    let away = clique(&env, "b", &b, 12).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &[CLIQUE, HOSTNAME]).await;
    let smalls = (0..3)
        .map(|i| (format!("small-{i}"), hosts[i].clone()))
        .collect();
    let case = Case {
        kueue_level: CLIQUE,
        fit_level: "nvlink",
        pods: 16,
        domain: a,
        hosts,
        smalls,
        away,
    };
    referee_plan(&env, &mut kueue, &queue, &case).await;
}

/// `nodes` Ready 4-GPU GB200 nodes in NVLink clique `value`, named `<id>-<tag>-n<i>`.
async fn clique(env: &TestEnv, tag: &str, value: &str, nodes: usize) -> Vec<String> {
    let mut names = Vec::new();
    for i in 0..nodes {
        let labels = json!({ CLIQUE: value, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": PRODUCT, "nvidia.com/gpu.count": "4" });
        let name = format!("{tag}-n{i}");
        names.push(
            env.create_node(node(&name, labels, &[("nvidia.com/gpu", "4")]))
                .await,
        );
    }
    for name in &names {
        env.wait_schedulable(name).await;
    }
    names
}

/// Holds the small pods, checks Kueue refuses the gang and `fit --plan`'s plan, then carries the plan out and
/// checks Kueue and kube-scheduler follow it.
async fn referee_plan(env: &TestEnv, kueue: &mut KueueProcess, queue: &TasQueue, case: &Case<'_>) {
    for (pod, on) in &case.smalls {
        hold_gpus(env, kueue, pod, on, 1).await;
    }
    let decision = queue.submit("gang", case.pods, 4, case.kueue_level).await;
    assert!(matches!(decision, Decision::Refused(_)), "{decision:?}");
    let selector = format!("{TEST_LABEL}={}", env.id);
    let gpus = (case.pods * 4).to_string();
    let args = [
        "--gpus",
        &gpus,
        "--gpus-per-pod",
        "4",
        "--level",
        case.fit_level,
    ];
    let run = fit_as(&[&args[..], &["--plan", "-l", &selector]].concat(), None);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let plan = &run.answer["plan"];
    assert_eq!(plan["domain"], json!(case.domain), "{plan}");
    let hosts: BTreeSet<String> = serde_json::from_value(plan["nodes"].clone()).unwrap();
    assert_eq!(hosts, case.hosts.iter().cloned().collect(), "{plan}");
    let moves = plan["moves"].as_array().unwrap();
    let moved: BTreeSet<(&str, &str)> = moves
        .iter()
        .map(|m| (m["pod"].as_str().unwrap(), m["from"].as_str().unwrap()))
        .collect();
    let smalls = case.smalls.iter().map(|(p, n)| (p.as_str(), n.as_str()));
    assert_eq!(moved, smalls.collect(), "{plan}");
    for m in moves {
        assert!(case.away.iter().any(|n| *n == m["to"]), "{plan}");
    }
    queue.withdraw("gang").await;
    for (pod, _) in &case.smalls {
        free_gpus(env, kueue, pod).await;
    }
    carry_out(env, kueue, queue, case, &hosts).await;
}

/// Asks Kueue again, binds the gang's pods where it puts them, then recreates the moved pods without a node.
async fn carry_out(
    env: &TestEnv,
    kueue: &mut KueueProcess,
    queue: &TasQueue,
    case: &Case<'_>,
    hosts: &BTreeSet<String>,
) {
    let decision = queue
        .submit("gang-after", case.pods, 4, case.kueue_level)
        .await;
    let Decision::Admitted(placed) = &decision else {
        panic!("Kueue refused the gang after the plan: {decision:?}");
    };
    assert!(
        placed.keys().all(|h| hosts.contains(h)),
        "Kueue placed {placed:?} off {hosts:?}"
    );
    assert_eq!(placed.values().sum::<u32>(), case.pods, "{placed:?}");
    let mut n = 0;
    for (host, pods) in placed {
        for _ in 0..*pods {
            hold_gpus(env, kueue, &format!("gang-{n}"), host, 4).await;
            n += 1;
        }
    }
    // As their controllers would: no node named (only this test's nodes, which its label selects).
    for (pod, _) in &case.smalls {
        let again = format!("{pod}-again");
        let body: Pod = serde_json::from_value(json!({
            "metadata": { "name": again },
            "spec": { "nodeSelector": { TEST_LABEL: env.id }, "automountServiceAccountToken": false,
                      "containers": [{ "name": "c", "image": "cuda",
                                       "resources": { "limits": { "nvidia.com/gpu": "1" } } }] },
        }))
        .unwrap();
        env.create_pod(body).await;
        let bound = env.wait_bound(&again).await;
        assert!(
            !hosts.contains(&bound),
            "{again} came back on the gang's node {bound}"
        );
    }
}
