//! The accounting without an API server: scanned nodes and pods in, allocation out.

use std::collections::BTreeMap;

use super::*;
use crate::inventory::assemble::assemble;
use crate::inventory::dra::DraView;
use crate::inventory::model::{
    Amount, Inventory, JobFit, Mig, MigProfile, ProductTotals, ResourceTotals, Sharing,
};
use crate::inventory::test_support::entry;

fn gpu_node(name: &str, product: &str, allocatable: &[(&str, &str)]) -> NodeInventory {
    let mut node = entry(name, true, 8, &[]);
    node.product = Some(product.to_owned());
    node.allocatable = allocatable
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
        .collect();
    node.capacity = node.allocatable.clone();
    node
}

fn pod(ns: &str, name: &str, node: Option<&str>, phase: &str, requests: &[(&str, u64)]) -> GpuPod {
    GpuPod {
        namespace: ns.into(),
        name: name.into(),
        node: node.map(str::to_owned),
        phase: phase.into(),
        unschedulable: node.is_none(),
        requests: requests
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        node_selector: BTreeMap::new(),
        claims: Vec::new(),
        ..Default::default()
    }
}

fn map(pairs: &[(&str, u64)]) -> crate::inventory::model::ResourceMap<u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

const KNOWN: NodeFacts<'static> = NodeFacts {
    labels: None,
    allocatable_known: true,
};
const ALL: DemandScope = DemandScope { all_nodes: true };

fn accounted(nodes: Vec<NodeInventory>, pods: &[GpuPod], scope: DemandScope) -> Inventory {
    let pods: Vec<&GpuPod> = pods.iter().collect();
    assemble(nodes, &pods, scope, &DraView::default(), |_| KNOWN)
}

#[test]
fn running_pods_are_allocated_finished_ones_and_other_nodes_are_not() {
    let nodes = vec![
        gpu_node("a", "H100", &[("nvidia.com/gpu", "8")]),
        gpu_node("b", "H100", &[("nvidia.com/gpu", "8")]),
    ];
    let pods = [
        pod("ml", "p1", Some("a"), "Running", &[("nvidia.com/gpu", 2)]),
        pod("ml", "p2", Some("a"), "Pending", &[("nvidia.com/gpu", 1)]),
        pod(
            "ml",
            "done",
            Some("a"),
            "Succeeded",
            &[("nvidia.com/gpu", 4)],
        ),
        pod(
            "ml",
            "failed",
            Some("b"),
            "Failed",
            &[("nvidia.com/gpu", 4)],
        ),
        pod(
            "web",
            "elsewhere",
            Some("cpu-node"),
            "Running",
            &[("nvidia.com/gpu", 1)],
        ),
    ];
    let inv = accounted(nodes, &pods, ALL);
    assert_eq!(inv.nodes[0].allocated, map(&[("nvidia.com/gpu", 3)]));
    assert_eq!(inv.nodes[0].free, map(&[("nvidia.com/gpu", 5)]));
    assert_eq!(inv.nodes[1].allocated, map(&[("nvidia.com/gpu", 0)]));
    assert_eq!(inv.free_gpus, 13);
    assert_eq!(
        inv.products,
        vec![ProductTotals {
            name: "H100".into(),
            nodes: 2,
            gpus: 16,
            free_gpus: 13,
            vendor: Some("nvidia"),
            occupancy: crate::inventory::model::Occupancy {
                whole_free: 13,
                partly_free: 0,
                fully_held: 3,
            },
            nodes_with_free_gpus: vec![
                JobFit {
                    at_least: 1,
                    nodes: 2
                },
                JobFit {
                    at_least: 2,
                    nodes: 2
                },
                JobFit {
                    at_least: 4,
                    nodes: 2
                },
                JobFit {
                    at_least: 8,
                    nodes: 1
                },
            ],
        }]
    );
    assert_eq!(
        inv.resources,
        vec![ResourceTotals {
            name: "nvidia.com/gpu".into(),
            capacity: 16,
            allocatable: 16,
            allocated: 3,
            free: 13
        }]
    );
    assert_eq!(
        inv.namespaces.len(),
        1,
        "only pods on the inventory's nodes count: {:?}",
        inv.namespaces
    );
    assert_eq!(
        inv.namespaces[0].allocated,
        map(&[("nvidia.com/gpu", 3)])
            .into_iter()
            .collect::<BTreeMap<_, _>>()
    );
}

#[test]
fn more_allocated_than_allocatable_is_overcommitted_never_negative() {
    let nodes = vec![gpu_node("a", "T4", &[("nvidia.com/gpu", "1")])];
    let pods = [
        pod("ml", "p1", Some("a"), "Running", &[("nvidia.com/gpu", 1)]),
        pod(
            "ml",
            "p2",
            Some("a"),
            "Running",
            &[("nvidia.com/gpu", 1), ("nvidia.com/mig-1g.10gb", 1)],
        ),
    ];
    let inv = accounted(nodes.clone(), &pods, ALL);
    let node = &inv.nodes[0];
    assert_eq!(
        node.free,
        map(&[("nvidia.com/gpu", 0), ("nvidia.com/mig-1g.10gb", 0)])
    );
    assert_eq!(node.issues.len(), 1);
    assert_eq!(node.issues[0].reason, "Overcommitted");
    assert!(
        node.issues[0].message.starts_with(
            "nvidia.com/gpu: 2 allocated to pods, 1 allocatable (pods: ml/p1, ml/p2); \
             nvidia.com/mig-1g.10gb: 1 allocated to pods, 0 allocatable (pods: ml/p2)"
        ),
        "{}",
        node.issues[0].message
    );
    let reversed: Vec<GpuPod> = pods.iter().rev().cloned().collect();
    assert_eq!(
        accounted(nodes.clone(), &reversed, ALL).nodes[0].issues,
        node.issues,
        "the message names the pods by name, whatever order they arrived in"
    );
    let pods: Vec<&GpuPod> = pods.iter().collect();
    let partial = assemble(nodes, &pods, ALL, &DraView::default(), |_| {
        NodeFacts::default()
    });
    assert!(
        partial.nodes[0].issues.is_empty(),
        "no allocatable block: unknown, not overcommitted"
    );
}

#[test]
fn shared_and_mig_resources_keep_their_names_and_are_not_whole_gpus() {
    let mut shared = gpu_node("ts", "T4-SHARED", &[("nvidia.com/gpu", "4")]);
    shared.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: false,
    });
    let mut renamed = gpu_node(
        "rn",
        "T4",
        &[("nvidia.com/gpu", "0"), ("nvidia.com/gpu.shared", "8")],
    );
    renamed.sharing = Some(Sharing {
        strategy: None,
        replicas: Some(4),
        renamed_resource: true,
    });
    let mut mig = gpu_node(
        "mig",
        "A100",
        &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "7")],
    );
    mig.mig = Some(Mig {
        strategy: Some("mixed".into()),
        devices: vec![MigProfile {
            profile: "1g.10gb".into(),
            count: 7,
            memory_mib: None,
            resource: Some("nvidia.com/mig-1g.10gb".into()),
        }],
        ..Default::default()
    });
    let pods = [
        pod("a", "slot", Some("ts"), "Running", &[("nvidia.com/gpu", 1)]),
        pod(
            "a",
            "shared",
            Some("rn"),
            "Running",
            &[("nvidia.com/gpu.shared", 3)],
        ),
        pod(
            "b",
            "slice",
            Some("mig"),
            "Running",
            &[("nvidia.com/mig-1g.10gb", 2)],
        ),
    ];
    let inv = accounted(vec![shared, renamed, mig], &pods, ALL);
    assert_eq!(
        inv.free_gpus, 0,
        "no whole GPU is free: slots and slices are not GPUs"
    );
    let free: BTreeMap<&str, u64> = inv
        .resources
        .iter()
        .map(|r| (r.name.as_str(), r.free))
        .collect();
    assert_eq!(
        free,
        BTreeMap::from([
            ("nvidia.com/gpu", 3),
            ("nvidia.com/gpu.shared", 5),
            ("nvidia.com/mig-1g.10gb", 5)
        ])
    );
}

#[test]
fn mig_strategy_single_counts_whole_gpus_only_where_mig_is_disabled() {
    let single = |name: &str, product: &str| {
        let mut node = gpu_node(name, product, &[("nvidia.com/gpu", "8")]);
        node.mig = Some(Mig {
            strategy: Some("single".into()),
            config: Some("all-disabled".into()),
            ..Default::default()
        });
        node
    };
    // GPU Feature Discovery writes `mig.strategy=single` on every node of a cluster set up that way; on a node
    // whose GPUs have MIG off the product keeps its plain name and nvidia.com/gpu are whole GPUs.
    let off = single("off", "NVIDIA-H100-80GB-HBM3");
    let on = single("on", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb");
    let inv = accounted(vec![off, on], &[], ALL);
    assert_eq!(
        inv.free_gpus, 8,
        "the MIG-disabled node's 8 GPUs, not the 8 MIG devices"
    );
}

#[test]
fn not_ready_and_cordoned_nodes_have_free_devices_but_no_free_gpus_to_offer() {
    let mut down = gpu_node("down", "H100", &[("nvidia.com/gpu", "8")]);
    down.ready = false;
    let mut cordoned = gpu_node("cordoned", "H100", &[("nvidia.com/gpu", "8")]);
    cordoned.unschedulable = true;
    let inv = accounted(vec![down, cordoned], &[], ALL);
    assert_eq!(inv.nodes[0].free, map(&[("nvidia.com/gpu", 8)]));
    assert_eq!((inv.free_gpus, inv.products[0].free_gpus), (0, 0));
}

#[test]
fn pending_pods_count_where_their_resource_is_offered() {
    let nodes = vec![gpu_node("a", "H100", &[("nvidia.com/gpu", "8")])];
    let pods = [
        pod("ml", "big", None, "Pending", &[("nvidia.com/gpu", 99)]),
        pod("ml", "big2", None, "Pending", &[("nvidia.com/gpu", 16)]),
        pod(
            "viz",
            "slice",
            None,
            "Pending",
            &[("nvidia.com/mig-1g.10gb", 1)],
        ),
        pod(
            "ml",
            "not-yet-tried",
            None,
            "Pending",
            &[("nvidia.com/gpu", 1)],
        )
        .with_unschedulable(false),
    ];
    let all = accounted(nodes.clone(), &pods, ALL);
    assert_eq!(all.pending_gpu_pods, 3);
    let ml = &all.namespaces[0];
    assert_eq!((ml.name.as_str(), ml.pending_pods), ("ml", 2));
    assert_eq!(
        ml.pending,
        map(&[("nvidia.com/gpu", 115)])
            .into_iter()
            .collect::<BTreeMap<_, _>>()
    );
    let pool = accounted(nodes, &pods, DemandScope { all_nodes: false });
    assert_eq!(
        pool.pending_gpu_pods, 2,
        "a pool without MIG does not answer for a MIG pod"
    );
}

#[test]
fn a_pool_answers_for_pending_pods_whose_node_selector_it_matches() {
    let nodes = vec![gpu_node("h100-1", "H100", &[("nvidia.com/gpu", "8")])];
    let mut for_pool = pod("ml", "pool", None, "Pending", &[("nvidia.com/gpu", 16)]);
    for_pool.node_selector = [("pool".to_owned(), "h100".to_owned())].into();
    let mut elsewhere = for_pool.clone();
    elsewhere.name = "elsewhere".into();
    elsewhere.node_selector = [("pool".to_owned(), "a10".to_owned())].into();
    let labels: crate::inventory::text_map::TextMap = [("pool", "h100")].into_iter().collect();
    let facts = NodeFacts {
        labels: Some(&labels),
        allocatable_known: true,
    };
    let inv = assemble(
        nodes,
        &[&for_pool, &elsewhere],
        DemandScope { all_nodes: false },
        &DraView::default(),
        |_| facts,
    );
    assert_eq!(inv.pending_gpu_pods, 1);
}

impl GpuPod {
    fn with_unschedulable(mut self, unschedulable: bool) -> Self {
        self.unschedulable = unschedulable;
        self
    }
}
