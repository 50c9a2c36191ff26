//! The gang plan on NVL72-like cliques of 18 nodes x 4 GPUs: which domain, which pods, and why not.

use std::sync::Arc;

use super::gang_plan::{GangJob, GangNoPlan, GangPlan, gang_plan};
use super::plan::{Immovable, PodTraits};
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{GPU_CLIQUE, NVLINK, NodeInventory};
use crate::inventory::test_support::{accounted, bound_pod, gpu_node};

/// 4-GPU nodes in cliques: per clique (its name, per node the sizes of its pods). Node `<clique><i>`, pod
/// `<node>-<j>`.
fn fleet(cliques: &[(&str, Vec<Vec<u64>>)]) -> Vec<Arc<NodeInventory>> {
    let mut nodes = Vec::new();
    let mut pods: Vec<GpuPod> = Vec::new();
    for (clique, held) in cliques {
        for (i, sizes) in held.iter().enumerate() {
            let name = format!("{clique}{i}");
            let mut node = gpu_node(&name, 4, "GB200", None, &[("nvidia.com/gpu", "4")]);
            node.topology.nvlink = Some((GPU_CLIQUE, (*clique).into()));
            nodes.push(node);
            for (j, g) in sizes.iter().enumerate() {
                let pod = format!("{name}-{j}");
                pods.push(bound_pod("ml", &pod, &name, &[("nvidia.com/gpu", *g)]));
            }
        }
    }
    accounted(nodes, &pods).nodes
}

/// `free` empty nodes, then nodes holding `held`, 18 in all.
fn clique(free: usize, held: &[&[u64]]) -> Vec<Vec<u64>> {
    let mut nodes = vec![Vec::new(); free];
    nodes.extend(held.iter().map(|h| h.to_vec()));
    assert_eq!(nodes.len(), 18);
    nodes
}

/// Clique b: every node with 2 GPUs held, 2 free (room for moved pods, none for the gang).
fn half_full() -> Vec<Vec<u64>> {
    vec![vec![2]; 18]
}

fn job(pods: u64) -> GangJob<'static> {
    GangJob {
        pods,
        gpus_per_pod: 4,
        level: Some(NVLINK),
        tolerations: &[],
    }
}

fn moved(plan: &GangPlan) -> Vec<&str> {
    let mut pods: Vec<&str> = plan.moves.iter().map(|m| m.pod.as_str()).collect();
    pods.sort();
    pods
}

#[test]
fn three_small_pods_leave_a_fragmented_clique_for_another_and_the_gang_gets_sixteen_nodes() {
    let nodes = fleet(&[
        ("a", clique(13, &[&[1], &[1], &[1], &[4], &[4]])),
        ("b", half_full()),
    ]);
    let plan = gang_plan(&nodes, &job(16), |_, _| PodTraits::default()).expect("a plan");
    assert_eq!(plan.domain.as_deref(), Some("a"), "{plan:?}");
    assert_eq!(plan.displaced_gpus, 3);
    assert_eq!(moved(&plan), ["a13-0", "a14-0", "a15-0"]);
    assert!(plan.moves.iter().all(|m| m.to.starts_with('b')), "{plan:?}");
    assert_eq!(plan.nodes.len(), 16);
    assert!(!plan.nodes.iter().any(|n| n == "a16" || n == "a17"));
}

#[test]
fn a_daemonset_pod_or_a_budget_allowing_nothing_keeps_its_node_and_another_is_chosen() {
    // One pod slot missing: a15's 1-GPU pod is the cheapest, a16's 2-GPU pod the next.
    let nodes = fleet(&[("a", clique(15, &[&[1], &[2], &[4]])), ("b", half_full())]);
    for pin in [
        Immovable::DaemonSet("kube-system/agent".into()),
        Immovable::NoDisruption("ml/keep".into()),
    ] {
        let plan = gang_plan(&nodes, &job(16), |_, pod| PodTraits {
            immovable: (pod == "a15-0").then(|| pin.clone()),
            ..Default::default()
        })
        .expect("a plan");
        assert_eq!(moved(&plan), ["a16-0"], "{pin:?}");
        assert_eq!(plan.displaced_gpus, 2);
    }
}

#[test]
fn a_gang_that_fits_now_needs_no_plan_and_one_larger_than_every_domain_has_none() {
    let nodes = fleet(&[("a", clique(16, &[&[4], &[4]])), ("b", half_full())]);
    let any = |_: &str, _: &str| PodTraits::default();
    assert_eq!(
        gang_plan(&nodes, &job(16), any),
        Err(GangNoPlan::FitsNow(Some("a".into())))
    );
    assert_eq!(
        gang_plan(&nodes, &job(19), any),
        Err(GangNoPlan::TooSmall { largest_pods: 18 })
    );
}

#[test]
fn a_budget_counts_across_the_hosts_and_the_plan_pays_for_it() {
    // Three slots missing; the three 1-GPU pods share a budget that lets two move.
    let nodes = fleet(&[
        ("a", clique(13, &[&[1], &[1], &[1], &[2], &[3]])),
        ("b", half_full()),
    ]);
    let traits = |allowed: u32| {
        move |_: &str, pod: &str| PodTraits {
            budgets: match ["a13-0", "a14-0", "a15-0"].contains(&pod) {
                true => vec![("ml/web".to_owned(), allowed)],
                false => Vec::new(),
            },
            ..Default::default()
        }
    };
    let plan = gang_plan(&nodes, &job(16), traits(3)).expect("a plan");
    assert_eq!(plan.displaced_gpus, 3, "{plan:?}");
    let plan = gang_plan(&nodes, &job(16), traits(2)).expect("a plan");
    assert_eq!(plan.displaced_gpus, 4, "{plan:?}");
    let web = plan.moves.iter().filter(|m| m.pod != "a16-0").count();
    assert_eq!((web, plan.moves.len()), (2, 3), "{plan:?}");
    // Allowing one of them, and the others pinned (clique b's too): no plan, and the why names the budget.
    let none = |_: &str, pod: &str| match ["a16-0", "a17-0"].contains(&pod) || pod.starts_with('b')
    {
        true => PodTraits {
            immovable: Some(Immovable::Static),
            ..Default::default()
        },
        false => traits(1)("", pod),
    };
    let Err(GangNoPlan::Stopped(stops)) = gang_plan(&nodes, &job(16), none) else {
        panic!("no plan")
    };
    let why = stops.to_string();
    assert!(
        why.contains("PodDisruptionBudget ml/web lets only 1"),
        "{why}"
    );
    assert!(why.contains("20 static pods"), "{why}");
    assert!(
        why.contains("16 pods of 4 GPUs in one nvlink domain"),
        "{why}"
    );
}

#[test]
fn a_gang_moves_whole_with_its_pod_in_the_other_clique_or_not_at_all() {
    // a15's 1-GPU pod is one of gang ml/train, whose other pod runs on b0 (2 GPUs): moving it moves both,
    // 3 GPUs, as many as a16's pod, which is of a higher priority.
    let nodes = fleet(&[("a", clique(15, &[&[1], &[3], &[4]])), ("b", half_full())]);
    let gang = |pod: &str| {
        ["a15-0", "b0-0"]
            .contains(&pod)
            .then(|| "Job ml/train".to_owned())
    };
    let priority = |pod: &str| if pod == "a16-0" { 10 } else { 0 };
    let plan = gang_plan(&nodes, &job(16), |_, pod| PodTraits {
        gang: gang(pod),
        priority: priority(pod),
        ..Default::default()
    })
    .expect("a plan");
    assert_eq!(moved(&plan), ["a15-0", "b0-0"], "{plan:?}");
    assert!(
        plan.moves
            .iter()
            .all(|m| m.gang.as_deref() == Some("Job ml/train"))
    );
    assert_eq!(plan.displaced_gpus, 3);
    // With b0's pod a DaemonSet's, the gang cannot move at all: a16's 3-GPU pod moves instead.
    let plan = gang_plan(&nodes, &job(16), |_, pod| PodTraits {
        gang: gang(pod),
        priority: priority(pod),
        immovable: (pod == "b0-0").then(|| Immovable::DaemonSet("ml/agent".into())),
        ..Default::default()
    })
    .expect("a plan");
    assert_eq!(moved(&plan), ["a16-0"], "{plan:?}");
}

#[test]
fn with_no_level_the_product_is_one_domain() {
    let nodes = fleet(&[
        ("a", clique(0, &[&[1_u64] as &[u64]; 18])),
        ("b", half_full()),
    ]);
    let mut any = job(2);
    any.level = None;
    let plan = gang_plan(&nodes, &any, |_, _| PodTraits::default()).expect("a plan");
    assert_eq!((plan.domain.as_deref(), plan.displaced_gpus), (None, 2));
    assert_eq!(plan.nodes.len(), 2);
}

#[test]
fn at_thirteen_thousand_nodes_in_720_cliques_a_gang_is_planned() {
    // Every node holds a 1-GPU pod: no clique offers a pod of 4, each needs 16 moves, all alike.
    let cliques: Vec<(String, Vec<Vec<u64>>)> = (0..720)
        .map(|c| (format!("c{c}-"), vec![vec![1]; 18]))
        .collect();
    let cliques: Vec<(&str, Vec<Vec<u64>>)> = cliques
        .iter()
        .map(|(n, h)| (n.as_str(), h.clone()))
        .collect();
    let nodes = fleet(&cliques);
    // Its time is `make scan-cost`'s to measure (benches/RESULTS.md), not a test's.
    let plan = gang_plan(&nodes, &job(16), |_, _| PodTraits::default()).expect("a plan");
    assert_eq!((plan.displaced_gpus, plan.moves.len()), (16, 16));
    let mut anywhere = job(128);
    anywhere.level = None;
    let plan = gang_plan(&nodes, &anywhere, |_, _| PodTraits::default()).expect("a plan");
    assert_eq!(plan.displaced_gpus, 128);
}
