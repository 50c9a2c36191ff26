//! The shared-GPU rules of the join (docs/utilization.md, "Shared GPUs"): an idle shared device makes every
//! holder of it idle with its share, a busy one makes no one idle and is counted, and the idle
//! GPU-equivalents are summed per namespace and product.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::shared_nodes::{shared_nodes, shares_gpus};
use super::tests::{at, current, holding, node, pod, series};
use super::*;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::{
    Basis, Equivalent, GpuPart, Holder, Holding, NodeInventory, SharedGpu, Sharing,
};

const GPU: &str = "nvidia.com/gpu";

/// A holding of `amount` `resource` worth `milli` thousandths of a GPU.
fn share(holder: Holder, resource: &str, amount: u64, milli: u64, basis: Basis) -> Holding {
    Holding {
        equivalent: Some(Equivalent { milli, basis }),
        ..holding(holder, resource, amount, None)
    }
}

/// A T4 node of `count` physical GPUs time-sliced 4 ways, with one replica per holder.
fn sliced(name: &str, count: u64, holders: &[Holder]) -> Arc<NodeInventory> {
    let replica = Basis::Replicas { per_gpu: 4 };
    let holdings = holders
        .iter()
        .map(|h| share(h.clone(), GPU, 1, 250, replica))
        .collect();
    let mut node = (*node(name, count * 4, holdings)).clone();
    node.count = count;
    node.product = Some("Tesla-T4-SHARED".into());
    node.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: false,
    });
    Arc::new(node)
}

/// An A100 node with two HAMi cards of 40960 MiB: on `GPU-a` two pods of 10240 and 20480 MiB (team-a, team-b),
/// on `GPU-b` one of 10240 MiB (team-b).
fn hami() -> Arc<NodeInventory> {
    let memory = |mib| Basis::Memory { mib, of_mib: 40960 };
    let (small, large, other) = (
        pod("team-a", "small"),
        pod("team-b", "large"),
        pod("team-b", "other"),
    );
    let holdings = vec![
        share(small.clone(), GPU, 1, 250, memory(10240)),
        holding(small.clone(), "nvidia.com/gpumem", 10240, None),
        share(large.clone(), GPU, 1, 500, memory(20480)),
        share(other.clone(), GPU, 1, 250, memory(10240)),
    ];
    let mut node = (*node("hami", 2, holdings)).clone();
    node.product = Some("NVIDIA-A100-SXM4-40GB".into());
    node.sharing = Some(Sharing {
        strategy: Some("hami".into()),
        replicas: Some(10),
        renamed_resource: false,
    });
    let part = |holder: &Holder, milli, mib| GpuPart {
        holder: holder.clone(),
        milli,
        memory_mib: Some(mib),
    };
    let card = |id: &str, parts| SharedGpu {
        id: id.into(),
        memory_mib: Some(40960),
        slots: Some(10),
        healthy: true,
        parts,
    };
    node.shared_gpus = vec![
        card(
            "GPU-a",
            vec![part(&small, 250, 10240), part(&large, 500, 20480)],
        ),
        card("GPU-b", vec![part(&other, 250, 10240)]),
    ];
    Arc::new(node)
}

fn busy(mut series: IdleSeries) -> IdleSeries {
    series.busy = true;
    series
}

fn idle_of(found: &Assessment, node: &str) -> Vec<(Holder, u64, Option<u64>)> {
    found.by_node.get(node).map_or_else(Vec::new, |list| {
        list.iter()
            .map(|i| (i.holder.clone(), i.amount, i.equivalent_milli))
            .collect()
    })
}

#[test]
fn an_idle_time_sliced_gpu_makes_every_holder_idle_with_its_replica_whoever_the_series_names() {
    let (a, b) = (pod("team-a", "tune"), pod("team-b", "serve"));
    let nodes = [sliced("sliced", 1, &[a.clone(), b.clone()])];
    let both = vec![(a.clone(), 1, Some(250)), (b.clone(), 1, Some(250))];
    // Without the pod mapper: no holder labels.
    let unnamed = series(&[("Hostname", "sliced"), ("UUID", "GPU-t4")], 2);
    let found = assess(&nodes, &current(vec![unnamed]));
    assert_eq!(idle_of(&found, "sliced"), both);
    // dcgm-exporter's default: the GPU's series names one of the pods sharing it (the last the kubelet lists).
    let named = series(
        &[
            ("Hostname", "sliced"),
            ("UUID", "GPU-t4"),
            ("namespace", "team-b"),
            ("pod", "serve"),
        ],
        2,
    );
    let found = assess(&nodes, &current(vec![named]));
    assert_eq!(idle_of(&found, "sliced"), both);
    let product = |ns: &str| found.report.namespace_equivalents[ns]["Tesla-T4-SHARED"];
    assert_eq!((product("team-a"), product("team-b")), (250, 250));
    assert_eq!(found.report.idle[GPU], 2);
    assert_eq!(found.report.busy_shared, 0);
    assert!(
        !found.report.message.contains("busy"),
        "{}",
        found.report.message
    );
}

#[test]
fn a_named_share_on_a_node_of_several_shared_gpus_is_that_holders_alone() {
    let (a, b) = (pod("team-a", "tune"), pod("team-b", "serve"));
    let nodes = [sliced("sliced", 2, &[a.clone(), b])];
    let named = series(
        &[
            ("Hostname", "sliced"),
            ("UUID", "GPU-0"),
            ("namespace", "team-a"),
            ("pod", "tune"),
        ],
        0,
    );
    // Which GPU the other pod's replica is on is not known: it is not blamed.
    let unnamed = series(&[("Hostname", "sliced"), ("UUID", "GPU-1")], 0);
    let found = assess(&nodes, &current(vec![named, unnamed]));
    assert_eq!(idle_of(&found, "sliced"), vec![(a, 1, Some(250))]);
}

#[test]
fn an_idle_hami_card_makes_its_holders_idle_with_their_parts_and_a_busy_one_no_one() {
    let nodes = [hami()];
    let card_a = series(&[("Hostname", "hami"), ("UUID", "GPU-a")], 4);
    let card_b = busy(series(&[("Hostname", "hami"), ("UUID", "GPU-b")], 4));
    let found = assess(&nodes, &current(vec![card_a, card_b]));
    assert_eq!(
        idle_of(&found, "hami"),
        vec![
            (pod("team-a", "small"), 1, Some(250)),
            (pod("team-b", "large"), 1, Some(500)),
        ],
        "the pod on the busy card is not idle"
    );
    let list = &found.by_node["hami"];
    assert!(
        list.iter()
            .all(|i| i.resource == GPU && i.idle_since == at(4)),
        "on the holding that places the pod on the card, not its memory: {list:?}"
    );
    let report = &found.report;
    let product = "NVIDIA-A100-SXM4-40GB";
    assert_eq!(report.namespace_equivalents["team-a"][product], 250);
    assert_eq!(report.namespace_equivalents["team-b"][product], 500);
    assert_eq!(report.busy_shared, 1);
    assert!(
        report.message.ends_with(
            "; 1 shared GPU busy: per-holder use is not measured (DCGM reports the device)"
        ),
        "{}",
        report.message
    );
}

#[test]
fn a_busy_shared_gpu_is_idle_for_no_one_and_counted_once() {
    let (a, b) = (pod("team-a", "tune"), pod("team-b", "serve"));
    let nodes = [sliced("sliced", 1, &[a, b])];
    // --kubernetes-virtual-gpus: one series per pod sharing the GPU, the device's value in each.
    let per_pod = |ns, name| {
        busy(series(
            &[
                ("Hostname", "sliced"),
                ("UUID", "GPU-t4"),
                ("namespace", ns),
                ("pod", name),
            ],
            0,
        ))
    };
    let stale = series(&[("Hostname", "sliced"), ("UUID", "GPU-t4")], 0);
    let found = assess(
        &nodes,
        &current(vec![
            per_pod("team-a", "tune"),
            per_pod("team-b", "serve"),
            stale,
        ]),
    );
    assert!(found.by_node.is_empty(), "{:?}", found.by_node);
    assert!(found.report.namespace_equivalents.is_empty());
    assert_eq!(found.report.busy_shared, 1);
    // A busy GPU on a node that does not share its GPUs, or that no one holds, is not counted.
    let whole = node("whole", 8, vec![holding(pod("ml", "train"), GPU, 1, None)]);
    let idle_sliced = sliced("empty", 1, &[]);
    let found = assess(
        &[whole, idle_sliced],
        &current(vec![
            busy(series(&[("Hostname", "whole"), ("UUID", "GPU-w")], 0)),
            busy(series(&[("Hostname", "empty"), ("UUID", "GPU-e")], 0)),
        ]),
    );
    assert_eq!(found.report.busy_shared, 0);
    assert!(!found.report.message.contains("busy"));
}

#[test]
fn whole_gpus_count_their_idle_units_share_of_the_holdings_equivalents() {
    let train = pod("ml", "train");
    let mut node = (*node(
        "h100",
        8,
        vec![share(train.clone(), GPU, 4, 4000, Basis::Whole)],
    ))
    .clone();
    node.product = Some("NVIDIA-H100-80GB-HBM3".into());
    let on = |gpu| {
        series(
            &[
                ("Hostname", "h100"),
                ("gpu", gpu),
                ("namespace", "ml"),
                ("pod", "train"),
            ],
            0,
        )
    };
    let found = assess(&[Arc::new(node)], &current(vec![on("0"), on("1")]));
    assert_eq!(idle_of(&found, "h100"), vec![(train, 2, Some(2000))]);
    assert_eq!(
        found.report.namespace_equivalents,
        BTreeMap::from([(
            "ml".into(),
            BTreeMap::from([("NVIDIA-H100-80GB-HBM3".into(), 2000)])
        )])
    );
}

/// The memo keeps the busy count and the idle GPU-equivalents as the whole join makes them.
#[test]
fn the_kept_join_keeps_the_busy_count_and_the_equivalents() {
    let (a, b) = (pod("team-a", "tune"), pod("team-b", "serve"));
    let mut nodes = vec![hami(), sliced("sliced", 1, &[a.clone(), b.clone()])];
    let activity = Arc::new(current(vec![
        series(&[("Hostname", "hami"), ("UUID", "GPU-a")], 1),
        busy(series(&[("Hostname", "hami"), ("UUID", "GPU-b")], 1)),
        series(&[("Hostname", "sliced"), ("UUID", "GPU-t4")], 1),
    ]));
    let mut memo = IdleMemo::default();
    let first = memo.put_idle(&nodes, &activity);
    assert_eq!(first, assess(&nodes, &activity));
    assert_eq!(first.report.busy_shared, 1);
    assert_eq!(first.report.namespace_equivalents["team-b"].len(), 2);
    // The HAMi node leaves: its busy card and its idle parts are taken back.
    nodes.remove(0);
    let second = memo.put_idle(&nodes, &activity);
    assert_eq!(second, assess(&nodes, &activity));
    assert_eq!(second.report.busy_shared, 0);
    assert!(!second.report.message.contains("busy"));
    assert_eq!(
        second.report.namespace_equivalents["team-b"],
        BTreeMap::from([("Tesla-T4-SHARED".into(), 250)])
    );
}

#[test]
fn the_nodes_asked_for_busy_series_are_those_that_share_their_gpus() {
    let node = |name: &str, labels: &[(&str, &str)], registers: bool| {
        Arc::new(ClusterNode {
            name: name.into(),
            labels: labels.iter().copied().collect(),
            registers: match registers {
                true => vec![(
                    "hami.io/node-nvidia-register".into(),
                    "GPU-a,10,40960,100,A100,0,true:".into(),
                )]
                .into(),
                false => Box::default(),
            },
            ..ClusterNode::default()
        })
    };
    let nodes = [
        node(
            "whole",
            &[
                ("nvidia.com/gpu.replicas", "1"),
                ("nvidia.com/gpu.sharing-strategy", "none"),
            ],
            false,
        ),
        node("sliced", &[("nvidia.com/gpu.replicas", "4")], false),
        node("mps", &[("nvidia.com/gpu.sharing-strategy", "mps")], false),
        node(
            "gke",
            &[("cloud.google.com/gke-gpu-sharing-strategy", "time-sharing")],
            false,
        ),
        node("hami", &[], true),
    ];
    assert!(!shares_gpus(&nodes[0]));
    assert_eq!(shared_nodes(&nodes), ["gke", "hami", "mps", "sliced"]);
}

#[test]
fn the_busy_label_marks_a_series_busy() {
    let marked = series(&[("UUID", "GPU-a"), ("gpu_inventory_activity", "busy")], 0);
    assert!(marked.busy);
    assert!(!series(&[("UUID", "GPU-a")], 0).busy);
}
