use std::sync::Arc;

use super::plan::{Immovable, NoPlan, PodTraits, plan};
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::NodeInventory;
use crate::inventory::test_support::{accounted, bound_pod, gpu_node};

/// 8-GPU nodes, each holding pods of the given sizes (pod `n<i>-<j>`).
fn fleet(held: &[&[u64]]) -> Vec<Arc<NodeInventory>> {
    let nodes = (0..held.len())
        .map(|i| {
            gpu_node(
                &format!("n{i}"),
                8,
                "H100",
                None,
                &[("nvidia.com/gpu", "8")],
            )
        })
        .collect();
    let pods: Vec<GpuPod> = held
        .iter()
        .enumerate()
        .flat_map(|(i, sizes)| {
            sizes.iter().enumerate().map(move |(j, g)| {
                bound_pod(
                    "ml",
                    &format!("n{i}-{j}"),
                    &format!("n{i}"),
                    &[("nvidia.com/gpu", *g)],
                )
            })
        })
        .collect();
    accounted(nodes, &pods).nodes
}

fn moves(plan: &super::plan::Plan) -> Vec<(&str, &str, &str, u64)> {
    plan.moves
        .iter()
        .map(|m| (m.pod.as_str(), m.from.as_str(), m.to.as_str(), m.gpus))
        .collect()
}

#[test]
fn the_fewest_gpus_move_to_where_they_fit_most_tightly() {
    // Free: n0 3, n1 3, n2 2. Emptying n0 takes its 2 and 3 (5 GPUs): n1 lacks 5 too, n2 lacks 6.
    let nodes = fleet(&[&[2, 3], &[4, 1], &[6]]);
    let plan = plan(&nodes, 8, |_, _| PodTraits::default()).expect("a plan");
    assert_eq!(plan.displaced_gpus, 5);
    assert_eq!(plan.node, "n0", "{plan:?}");
    // The 3 goes to n1's 3 (tightest), the 2 to n2's 2.
    assert_eq!(
        moves(&plan),
        [("n0-1", "n0", "n1", 3), ("n0-0", "n0", "n2", 2)]
    );
}

#[test]
fn lower_priority_moves_before_higher_at_equal_cost() {
    let nodes = fleet(&[&[4, 4], &[4], &[4]]);
    // n1 and n2 lack 4 each: moving n1-0 or n2-0 costs 4; n2-0 is of lower priority.
    let plan = plan(&nodes, 8, |_, pod| PodTraits {
        priority: if pod == "n2-0" { 0 } else { 100 },
        ..Default::default()
    })
    .expect("a plan");
    assert_eq!(moves(&plan), [("n2-0", "n2", "n1", 4)], "{plan:?}");
    assert_eq!(plan.highest_priority, 0);
}

#[test]
fn an_immovable_pod_never_moves_and_no_plan_is_better_than_a_wrong_one() {
    let nodes = fleet(&[&[4], &[4]]);
    let immovable = |_: &str, _: &str| PodTraits {
        immovable: Some(Immovable::DaemonSet("ml/agent".into())),
        ..Default::default()
    };
    let Err(NoPlan::Stopped(stops)) = plan(&nodes, 8, immovable) else {
        panic!("no plan")
    };
    assert_eq!(
        stops.to_string(),
        "no set of running pods, moved to where they fit, frees 8 GPUs on one node: 2 pods on the \
         candidate nodes cannot move: 2 DaemonSet pods; moving every pod that may move frees at most 4 GPUs \
         on one node"
    );
    // Nowhere to put what moves: two full nodes.
    let full = fleet(&[&[8], &[8]]);
    let Err(NoPlan::Stopped(stops)) = plan(&full, 8, |_, _| PodTraits::default()) else {
        panic!("no plan")
    };
    assert!(
        stops
            .to_string()
            .ends_with("GPUs on one node: the pods that would make room find none elsewhere"),
        "{stops}"
    );
}

#[test]
fn a_gang_moves_whole_and_its_other_pods_free_their_gpus() {
    // n0 holds a 4-GPU pod of gang g (whose other pod holds 4 of n1) and nothing else. Moving the gang
    // moves both pods: 8 GPUs displaced, the pod on n1 goes back into n1's freed room.
    let nodes = fleet(&[&[4], &[4, 4], &[4]]);
    let gang = |_: &str, pod: &str| PodTraits {
        gang: matches!(pod, "n0-0" | "n1-0").then(|| "Job ml/train".to_owned()),
        ..Default::default()
    };
    let plan = plan(&nodes, 8, gang).expect("a plan");
    // n2-0 alone (4 GPUs, to n0's 4 free) is cheaper than the gang: the gang stays.
    assert_eq!(moves(&plan), [("n2-0", "n2", "n0", 4)], "{plan:?}");
    // With n2's pod immovable, the gang moves whole.
    let plan = super::plan::plan(&nodes, 8, |ns, pod| PodTraits {
        immovable: (pod == "n2-0").then_some(Immovable::Static),
        ..gang(ns, pod)
    })
    .expect("a plan");
    assert_eq!(plan.displaced_gpus, 8, "{plan:?}");
    assert!(
        plan.moves
            .iter()
            .all(|m| m.gang.as_deref() == Some("Job ml/train"))
    );
    assert_eq!(plan.moves.len(), 2);
}

#[test]
fn a_request_that_fits_now_needs_no_plan_and_one_larger_than_any_node_has_none() {
    let nodes = fleet(&[&[4], &[]]);
    assert_eq!(
        plan(&nodes, 8, |_, _| PodTraits::default()),
        Err(NoPlan::FitsNow),
        "n1 has 8 free: fits now"
    );
    assert_eq!(
        plan(&fleet(&[&[4]]), 16, |_, _| PodTraits::default()),
        Err(NoPlan::NoNode)
    );
}

#[test]
fn a_disruption_budget_lets_at_most_its_allowance_of_pods_move() {
    // n0 lacks 4: its two 2-GPU pods must both go (to n1's 3 and n2's 2); n1 and n2 lack more than there
    // is room for elsewhere. Both pods are under one budget.
    let nodes = fleet(&[&[2, 2], &[5], &[6]]);
    let budget = |allowed: u32| {
        move |_: &str, pod: &str| PodTraits {
            budgets: if pod.starts_with("n0-") {
                vec![("ml/web".to_owned(), allowed)]
            } else {
                Vec::new()
            },
            owner: Some(format!("ReplicaSet/{pod}")),
            priority: 7,
            ..Default::default()
        }
    };
    let Err(NoPlan::Stopped(stops)) = plan(&nodes, 8, budget(1)) else {
        panic!("a budget of 1 forbids moving both")
    };
    assert!(
        stops
            .to_string()
            .contains("PodDisruptionBudget ml/web lets only 1 of its pods move at once"),
        "{stops}"
    );
    let plan = plan(&nodes, 8, budget(2)).expect("a budget of 2 lets both move");
    assert_eq!(
        moves(&plan),
        [("n0-0", "n0", "n2", 2), ("n0-1", "n0", "n1", 2)],
        "{plan:?}"
    );
    assert_eq!(plan.moves[0].owner.as_deref(), Some("ReplicaSet/n0-0"));
    assert_eq!(plan.moves[0].priority, 7);
}

#[test]
fn a_budget_counts_pods_across_the_units_it_covers() {
    // n0: four 1-GPU pods, 4 free: the one plan moves all four, to n1's 3 and n2's 2. Two budgets covering
    // two pods each, allowing 2, let every pod go; one budget covering all four, allowing 3, does not.
    let nodes = fleet(&[&[1, 1, 1, 1], &[5], &[6]]);
    let split = |_: &str, pod: &str| PodTraits {
        budgets: vec![(if pod < "n0-2" { "ml/a" } else { "ml/b" }.to_owned(), 2)],
        ..Default::default()
    };
    let plan = plan(&nodes, 8, split).expect("each budget allows its two");
    assert_eq!(
        (plan.node.as_str(), plan.moves.len()),
        ("n0", 4),
        "{plan:?}"
    );
    let one = |_: &str, pod: &str| PodTraits {
        budgets: if pod.starts_with("n0-") {
            vec![("ml/all".to_owned(), 3)]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    let Err(NoPlan::Stopped(stops)) = super::plan::plan(&nodes, 8, one) else {
        panic!("four moves under a budget of 3")
    };
    assert!(
        stops
            .to_string()
            .contains("PodDisruptionBudget ml/all lets only 3 of its pods move at once"),
        "{stops}"
    );
}

#[test]
fn the_why_counts_the_pods_that_cannot_move_by_rule() {
    // Every node lacks 4; n0's are a DaemonSet's and a budget's, n1's a static pod and a gang pod whose
    // other pod (on n2) is under the budget; n2's pod is the gang's.
    let nodes = fleet(&[&[2, 2], &[2, 2], &[4]]);
    let traits = |_: &str, pod: &str| PodTraits {
        immovable: match pod {
            "n0-0" => Some(Immovable::DaemonSet("ml/agent".into())),
            "n0-1" | "n2-0" => Some(Immovable::NoDisruption("ml/db".into())),
            "n1-0" => Some(Immovable::Static),
            _ => None,
        },
        gang: matches!(pod, "n1-1" | "n2-0").then(|| "Job ml/train".to_owned()),
        ..Default::default()
    };
    let Err(NoPlan::Stopped(stops)) = plan(&nodes, 8, traits) else {
        panic!("nothing may move")
    };
    assert_eq!(stops.pinned_pods(), 5, "{stops}");
    assert_eq!(
        stops.to_string(),
        "no set of running pods, moved to where they fit, frees 8 GPUs on one node: 5 pods on the \
         candidate nodes cannot move: 1 DaemonSet pod, 1 static pod, 2 under PodDisruptionBudget ml/db, \
         which allows no disruption, 1 of gang Job ml/train, which has a pod that cannot move; moving every \
         pod that may move frees at most 4 GPUs on one node"
    );
}

#[test]
fn a_gang_with_pods_beyond_the_plans_nodes_and_pods_of_other_namespaces_stay() {
    let nodes = fleet(&[&[4], &[4]]);
    let traits = |_: &str, pod: &str| PodTraits {
        immovable: Some(match pod {
            "n0-0" => Immovable::GangBeyond("JobSet ml/llama".into()),
            _ => Immovable::OutsideNamespace("team-a".into()),
        }),
        gang: (pod == "n0-0").then(|| "JobSet ml/llama".to_owned()),
        ..Default::default()
    };
    let Err(NoPlan::Stopped(stops)) = plan(&nodes, 8, traits) else {
        panic!("nothing may move")
    };
    let why = stops.to_string();
    assert!(
        why.contains(
            "2 pods on the candidate nodes cannot move: 1 outside namespace team-a (-n), 1 of gang JobSet \
             ml/llama, which has GPU pods on nodes this plan does not weigh"
        ),
        "{why}"
    );
}
