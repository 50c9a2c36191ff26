//! The join's rules, without Prometheus: which holding each idle series belongs to, and what is withheld.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::inventory::model::{
    ClaimRef, Holder, Holding, IdleHolding, NodeInventory, UtilizationState,
};
use crate::inventory::test_support::entry;

pub(super) fn at(minute: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_790_000_000 + minute * 60).unwrap()
}

pub(super) fn pod(ns: &str, name: &str) -> Holder {
    Holder::Pod {
        namespace: ns.into(),
        name: name.into(),
    }
}

pub(super) fn claim(ns: &str, name: &str) -> Holder {
    Holder::Claim(ClaimRef {
        namespace: ns.into(),
        name: name.into(),
    })
}

pub(super) fn holding(
    holder: Holder,
    resource: &str,
    amount: u64,
    device: Option<&str>,
) -> Holding {
    Holding {
        resource: resource.into(),
        holder,
        amount,
        device: device.map(Into::into),
        equivalent: None,
    }
}

/// A node of `count` GPUs with these holdings; `free` per resource is what they leave of `count`.
pub(super) fn node(name: &str, count: u64, holdings: Vec<Holding>) -> Arc<NodeInventory> {
    let mut node = entry(name, true, count, &[]);
    let mut held: BTreeMap<String, u64> = BTreeMap::new();
    for h in &holdings {
        *held.entry(h.resource.clone()).or_default() += h.amount;
    }
    node.free = held
        .iter()
        .map(|(r, n)| (r.clone(), count.saturating_sub(*n)))
        .collect();
    node.holdings = holdings;
    Arc::new(node)
}

pub(super) fn series(labels: &[(&'static str, &'static str)], since: i64) -> IdleSeries {
    let label = |name: &str| labels.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    IdleSeries::of_labels(label, at(since))
}

pub(super) fn current(idle: Vec<IdleSeries>) -> Round {
    Round {
        source: "http://prometheus:9090".into(),
        window: "30m".into(),
        rule: "idle: below 1% through 30m".into(),
        reading: Reading::Current(idle),
        held: None,
    }
}

#[test]
fn a_pods_idle_gpus_are_counted_up_to_what_it_holds() {
    let nodes = [node(
        "n1",
        8,
        vec![
            holding(pod("team-a", "idle"), "nvidia.com/gpu", 2, None),
            holding(pod("team-b", "busy"), "nvidia.com/gpu", 1, None),
        ],
    )];
    let idle = vec![
        series(
            &[
                ("namespace", "team-a"),
                ("pod", "idle"),
                ("gpu", "0"),
                ("Hostname", "n1"),
            ],
            3,
        ),
        series(
            &[
                ("namespace", "team-a"),
                ("pod", "idle"),
                ("gpu", "1"),
                ("Hostname", "n1"),
            ],
            5,
        ),
        // A third series for the same pod (a relabelled duplicate) never makes more than it holds.
        series(
            &[("namespace", "team-a"), ("pod", "idle"), ("UUID", "GPU-x")],
            5,
        ),
    ];
    let found = assess(&nodes, &current(idle));
    assert_eq!(found.report.state, UtilizationState::Current);
    assert_eq!(
        *found.by_node["n1"],
        [IdleHolding {
            holder: pod("team-a", "idle"),
            resource: "nvidia.com/gpu".into(),
            amount: 2,
            equivalent_milli: None,
            idle_since: at(5),
        }],
        "the latest `since` of its units: the holding is idle since all of them are"
    );
    assert_eq!(found.report.namespaces["team-a"]["nvidia.com/gpu"], 2);
    assert!(!found.report.namespaces.contains_key("team-b"));
    assert_eq!(found.report.idle["nvidia.com/gpu"], 2);
}

#[test]
fn exported_labels_name_the_holder_before_the_scrape_targets_own() {
    let nodes = [node(
        "n1",
        8,
        vec![holding(pod("ml", "train"), "nvidia.com/gpu", 1, None)],
    )];
    let idle = vec![series(
        &[
            ("namespace", "gpu-operator"),
            ("pod", "nvidia-dcgm-exporter-abc"),
            ("exported_namespace", "ml"),
            ("exported_pod", "train"),
        ],
        0,
    )];
    let found = assess(&nodes, &current(idle));
    assert_eq!(found.by_node["n1"][0].holder, pod("ml", "train"));
}

#[test]
fn a_mig_instance_is_counted_under_its_profiles_resource() {
    let nodes = [node(
        "n2",
        7,
        vec![
            holding(pod("ml", "small"), "nvidia.com/mig-1g.10gb", 1, None),
            holding(pod("ml", "small"), "nvidia.com/gpu", 1, None),
        ],
    )];
    let idle = vec![series(
        &[
            ("namespace", "ml"),
            ("pod", "small"),
            ("GPU_I_PROFILE", "1g.10gb"),
            ("GPU_I_ID", "3"),
        ],
        0,
    )];
    let found = assess(&nodes, &current(idle));
    assert_eq!(found.by_node["n2"].len(), 1);
    assert_eq!(found.by_node["n2"][0].resource, "nvidia.com/mig-1g.10gb");
}

#[test]
fn a_claims_gpu_is_found_by_claim_and_device_and_by_device_alone() {
    let nodes = [node(
        "n3",
        2,
        vec![
            holding(claim("ml", "c1"), "gpu.nvidia.com/gpu", 1, Some("gpu-0")),
            holding(claim("ml", "c2"), "gpu.nvidia.com/gpu", 1, Some("gpu-1")),
        ],
    )];
    let by_claim = series(
        &[
            ("dra_claim_namespace", "ml"),
            ("dra_claim_name", "c1"),
            ("dra_device_name", "gpu-0"),
        ],
        0,
    );
    let by_device = series(&[("Hostname", "n3"), ("dra_device_name", "gpu-1")], 0);
    let found = assess(&nodes, &current(vec![by_claim, by_device]));
    let holders: Vec<_> = found.by_node["n3"]
        .iter()
        .map(|i| i.holder.clone())
        .collect();
    assert_eq!(holders, vec![claim("ml", "c1"), claim("ml", "c2")]);
}

#[test]
fn a_series_without_pod_labels_is_the_nodes_only_when_one_holder_holds_every_unit() {
    let whole = node(
        "whole",
        2,
        vec![holding(pod("ml", "all"), "nvidia.com/gpu", 2, None)],
    );
    let shared = node(
        "shared",
        2,
        vec![
            holding(pod("ml", "a"), "nvidia.com/gpu", 1, None),
            holding(pod("ml", "b"), "nvidia.com/gpu", 1, None),
        ],
    );
    let partly = node(
        "partly",
        2,
        vec![holding(pod("ml", "one"), "nvidia.com/gpu", 1, None)],
    );
    let unnamed = |host| series(&[("Hostname", host), ("gpu", "0")], 0);
    let found = assess(
        &[whole, shared, partly],
        &current(vec![unnamed("whole"), unnamed("shared"), unnamed("partly")]),
    );
    assert_eq!(found.by_node.keys().collect::<Vec<_>>(), ["whole"]);
    assert_eq!(found.by_node["whole"][0].holder, pod("ml", "all"));
}

#[test]
fn a_series_of_a_holder_that_holds_nothing_is_blamed_on_no_one() {
    // The pod ended (its series lingers for a window), and a new pod holds the node's only GPU.
    let nodes = [node(
        "n1",
        1,
        vec![holding(pod("ml", "new"), "nvidia.com/gpu", 1, None)],
    )];
    let idle = vec![series(
        &[("namespace", "ml"), ("pod", "old"), ("Hostname", "n1")],
        0,
    )];
    let found = assess(&nodes, &current(idle));
    assert!(found.by_node.is_empty());
    assert!(found.report.namespaces.is_empty());
    assert_eq!(found.report.state, UtilizationState::Current);
}

#[test]
fn an_unknown_reading_withholds_every_figure() {
    let nodes = [node(
        "n1",
        1,
        vec![holding(pod("ml", "p"), "nvidia.com/gpu", 1, None)],
    )];
    let activity = Round {
        reading: Reading::Unknown("Prometheus unreachable: connection refused".into()),
        ..current(vec![])
    };
    let found = assess(&nodes, &activity);
    assert_eq!(found.report.state, UtilizationState::Unknown);
    assert_eq!(
        found.report.message,
        "Prometheus unreachable: connection refused"
    );
    assert!(found.by_node.is_empty() && found.report.idle.is_empty());
}

#[test]
fn labels_are_read_in_every_spelling() {
    let old = series(
        &[
            ("pod_namespace", "a"),
            ("pod_name", "p"),
            ("hostname", "n"),
            ("uuid", "GPU-1"),
        ],
        0,
    );
    assert_eq!(
        old.holder,
        SeriesHolder::Pod {
            namespace: "a".into(),
            name: "p".into()
        }
    );
    assert_eq!(old.node.as_deref(), Some("n"));
    assert_eq!(old.gpu.as_deref(), Some("GPU-1"));
    let empty = series(&[("pod", ""), ("namespace", "")], 0);
    assert_eq!(
        empty.holder,
        SeriesHolder::Unnamed,
        "empty values are absent"
    );
}

/// The memo's answer equals the whole join's after every change, and an unchanged node keeps its very list.
#[test]
fn the_kept_join_equals_the_whole_join_and_joins_only_what_changed() {
    let idle_pod = |n: &str| {
        vec![holding(
            pod("team-a", &format!("idle-{n}")),
            "nvidia.com/gpu",
            2,
            None,
        )]
    };
    let mut nodes: Vec<Arc<NodeInventory>> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| node(n, 8, idle_pod(n)))
        .collect();
    let series_of = |n: &'static str, pod: &'static str| {
        series(
            &[
                ("namespace", "team-a"),
                ("pod", pod),
                ("gpu", "0"),
                ("Hostname", n),
            ],
            1,
        )
    };
    let activity = Arc::new(current(vec![
        series_of("n1", "idle-n1"),
        series_of("n2", "idle-n2"),
        series_of("n3", "idle-n3"),
    ]));
    let mut memo = IdleMemo::default();
    let same_list = |a: &Assessment, b: &Assessment, node: &str| {
        Arc::ptr_eq(&a.by_node[node], &b.by_node[node])
    };
    let first = memo.put_idle(&nodes, &activity);
    assert_eq!(first, assess(&nodes, &activity));
    assert_eq!(first.report.idle.get("nvidia.com/gpu"), Some(&3));
    assert!(first.by_node.values().all(|list| list.len() == 1));
    assert_eq!(first.by_node.len(), 3);

    // n2's pod ends (a new entry for n2); n1 and n3 keep their very lists.
    nodes[1] = node("n2", 8, Vec::new());
    let second = memo.put_idle(&nodes, &activity);
    assert_eq!(second, assess(&nodes, &activity));
    assert_eq!(second.report.idle.get("nvidia.com/gpu"), Some(&2));
    assert!(same_list(&first, &second, "n1") && same_list(&first, &second, "n3"));
    assert!(!second.by_node.contains_key("n2"));

    // n2 holds an idle GPU again, in a new entry: joined again, beside n1's and n3's kept lists.
    nodes[1] = node("n2", 8, idle_pod("n2"));
    let again = memo.put_idle(&nodes, &activity);
    assert_eq!(again, assess(&nodes, &activity));
    assert!(same_list(&first, &again, "n1") && same_list(&first, &again, "n3"));

    // n2 leaves the scan, then n3: taken back.
    nodes.remove(1);
    let third = memo.put_idle(&nodes, &activity);
    assert_eq!(third, assess(&nodes, &activity));
    assert_eq!(third.report.namespaces["team-a"]["nvidia.com/gpu"], 2);
    nodes.pop();
    let fourth = memo.put_idle(&nodes, &activity);
    assert_eq!(fourth, assess(&nodes, &activity));
    assert_eq!(fourth.report.namespaces["team-a"]["nvidia.com/gpu"], 1);

    // Out of name order, the answer is still the whole join's.
    let shuffled: Vec<Arc<NodeInventory>> = ["n3", "n1", "n2"]
        .iter()
        .map(|n| node(n, 8, idle_pod(n)))
        .collect();
    assert_eq!(
        memo.put_idle(&shuffled, &activity),
        assess(&shuffled, &activity)
    );
    assert_eq!(memo.put_idle(&nodes, &activity), assess(&nodes, &activity));

    // A new round: joined again from scratch; an unknown one withholds every figure.
    let next = Arc::new(current(vec![series_of("n2", "nobody")]));
    let found = memo.put_idle(&nodes, &next);
    assert_eq!(found, assess(&nodes, &next));
    assert!(found.report.idle.is_empty() && found.report.namespaces.is_empty());
    assert!(found.by_node.is_empty());
    let unknown = Arc::new(Round {
        reading: Reading::Unknown("Prometheus unreachable".into()),
        ..current(Vec::new())
    });
    let withheld = memo.put_idle(&nodes, &unknown);
    assert_eq!(withheld.report.state, UtilizationState::Unknown);
    assert!(withheld.by_node.is_empty());
}
