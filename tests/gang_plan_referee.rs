//! The real Kueue referees `fit --plan` for a gang (#57 item 4): a pod of 1 GPU fragments subblock s1 so that
//! a gang of 4 pods x 4 GPUs required in one subblock is not admitted; `fit --plan` names the subblock and the
//! pod to move; once the pod is gone, Kueue admits the gang on the plan's nodes, kube-scheduler binds the
//! gang's pods there (pinned as Kueue's topology assignment pins them), and the moved pod, recreated without a
//! node, is bound outside the gang's nodes. Fails if Kueue or the scheduler disagrees with the plan.
//!
//! The order of the steps matters: kube-scheduler knows nothing of Kueue's reservations, so the moved pod is
//! recreated only once the gang's pods hold their GPUs (a controller recreating it at once could take the room
//! back; docs/fragmentation.md, "Carrying it out"). Kueue does not retry a Workload when a pod outside it goes,
//! so the gang is submitted again after the deletion (docs/kueue-referee.md).

mod common;

use common::fit_plan_cli::fit_as;
use common::kueue::fleet::{Fleet, LEVELS, SUBBLOCK, free_gpus, hold_gpus};
use common::kueue::process::one_at_a_time;
use common::kueue::{Decision, KueueProcess, TasQueue};
use common::{TEST_LABEL, TestEnv};
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

#[tokio::test]
async fn kueue_admits_the_gang_on_the_plan_s_nodes_once_the_named_pod_has_moved() {
    let _turn = one_at_a_time().await;
    let env = TestEnv::new("gang-plan").await;
    let fleet = Fleet::create(&env, &[("b1", "s1", 4), ("b1", "s2", 3)]).await;
    let mut kueue = KueueProcess::start(&env);
    let queue = TasQueue::create(&env, &mut kueue, &LEVELS).await;
    let (s1, s2) = (fleet.nodes("b1-s1").to_vec(), fleet.nodes("b1-s2").to_vec());
    hold_gpus(&env, &mut kueue, "small", &s1[0], 1).await;

    // s1 offers 3 pods of 4 with the small pod in place, s2 has only 3 nodes: Kueue fits 3 of the 4 pods.
    let decision = queue.submit("gang", 4, 4, SUBBLOCK).await;
    assert!(
        matches!(&decision, Decision::Refused(why) if why.contains("allows to fit only 3 out of 4 pod(s)")),
        "{decision:?}"
    );
    let selector = format!("{TEST_LABEL}={}", env.id);
    let args = ["--gpus", "16", "--gpus-per-pod", "4", "--level", SUBBLOCK];
    let run = fit_as(&[&args[..], &["--plan", "-l", &selector]].concat(), None);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let plan = &run.answer["plan"];
    assert_eq!(plan["domain"], json!(fleet.subblock("b1", "s1")), "{plan}");
    let hosts: Vec<String> = serde_json::from_value(plan["nodes"].clone()).unwrap();
    assert_eq!(hosts, s1, "{plan}");
    let moves = plan["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 1, "{plan}");
    assert_eq!(
        (&moves[0]["pod"], &moves[0]["from"]),
        (&json!("small"), &json!(s1[0]))
    );
    let to = moves[0]["to"].as_str().unwrap().to_owned();
    assert!(s2.contains(&to), "{plan}");

    // Carry it out: the pod goes, the gang is asked for again.
    queue.withdraw("gang").await;
    free_gpus(&env, &mut kueue, "small").await;
    let decision = queue.submit("gang-after", 4, 4, SUBBLOCK).await;
    let Decision::Admitted(placed) = &decision else {
        panic!("Kueue refused the gang after the plan: {decision:?}");
    };
    assert!(
        placed.keys().all(|h| hosts.contains(h)),
        "Kueue placed {placed:?} off the plan's {hosts:?}"
    );
    assert_eq!(placed.values().sum::<u32>(), 4, "{placed:?}");
    // The gang's pods where Kueue put them, each bound by kube-scheduler (hold_gpus fails otherwise).
    let mut n = 0;
    for (host, pods) in placed {
        for _ in 0..*pods {
            hold_gpus(&env, &mut kueue, &format!("gang-{n}"), host, 4).await;
            n += 1;
        }
    }
    // The moved pod, recreated as its controller would: no node named (only this test's nodes, which the
    // test label selects); the scheduler must find room off the gang's nodes, which it fills.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": "small-again" },
        "spec": {
            "nodeSelector": { TEST_LABEL: env.id },
            "automountServiceAccountToken": false,
            "containers": [{ "name": "c", "image": "cuda",
                             "resources": { "limits": { "nvidia.com/gpu": "1" } } }],
        },
    }))
    .unwrap();
    env.create_pod(pod).await;
    let bound = env.wait_bound("small-again").await;
    assert!(
        !hosts.contains(&bound),
        "the moved pod came back on the gang's node {bound}"
    );
}
