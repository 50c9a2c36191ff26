use std::sync::Arc;

use super::plan::{PodTraits, plan};
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
        immovable: Some("DaemonSet".into()),
        ..Default::default()
    };
    assert_eq!(plan(&nodes, 8, immovable), None);
    // Nowhere to put what moves: two full nodes.
    let full = fleet(&[&[8], &[8]]);
    assert_eq!(plan(&full, 8, |_, _| PodTraits::default()), None);
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
        immovable: (pod == "n2-0").then(|| "static pod".to_owned()),
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
        None,
        "n1 has 8 free: fits now"
    );
    assert_eq!(plan(&fleet(&[&[4]]), 16, |_, _| PodTraits::default()), None);
}
