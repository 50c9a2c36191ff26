//! Hand-made models for the unit tests (compiled for tests only).

use k8s_openapi::api::core::v1::Node;

use crate::inventory::allocation::{DemandScope, GpuPod, NodeFacts};
use crate::inventory::assemble::assemble;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::DraView;
use crate::inventory::model::{
    Amount, Inventory, Issue, IssueReason, NodeInventory, SharedGpu, Sharing,
};

/// API nodes as the core reads them (the built-in health table): what the node watch and the dumps hand
/// the scan.
pub(crate) fn read<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Vec<ClusterNode> {
    nodes.into_iter().map(ClusterNode::of).collect()
}

/// A GPU node with `count` GPUs and one issue per reason (message `"<reason> details"`).
pub(crate) fn entry(name: &str, ready: bool, count: u64, reasons: &[IssueReason]) -> NodeInventory {
    NodeInventory {
        name: name.into(),
        ready,
        count,
        issues: reasons
            .iter()
            .map(|r| Issue::new(*r, format!("{r} details")))
            .collect(),
        ..Default::default()
    }
}

/// The inventory of `nodes`, totals computed as the assembler does.
pub(crate) fn inventory(nodes: Vec<NodeInventory>) -> Inventory {
    Inventory {
        total_gpu_nodes: nodes.len() as u32,
        ready_gpu_nodes: nodes.iter().filter(|n| n.ready).count() as u32,
        total_gpus: nodes.iter().map(|n| n.count).sum(),
        nodes: nodes.into_iter().map(std::sync::Arc::new).collect(),
        ..Default::default()
    }
}

/// A Ready GPU node of `count` GPUs of `product` (`memory_mib` each) advertising `allocatable` (capacity the
/// same).
pub(crate) fn gpu_node(
    name: &str,
    count: u64,
    product: &str,
    memory_mib: Option<u64>,
    allocatable: &[(&str, &str)],
) -> NodeInventory {
    let mut node = entry(name, true, count, &[]);
    node.product = Some(product.to_owned());
    node.memory_mib = memory_mib;
    node.allocatable = allocatable
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
        .collect();
    node.capacity = node.allocatable.clone();
    node
}

/// `node` shared by HAMi: the cards `ids` listed in its register, each of `memory_mib` split `slots` ways.
pub(crate) fn hami_node(
    mut node: NodeInventory,
    ids: &[&str],
    memory_mib: u64,
    slots: u64,
) -> NodeInventory {
    node.sharing = Some(Sharing {
        strategy: Some("HAMi".into()),
        replicas: Some(slots),
        renamed_resource: false,
    });
    node.shared_gpus = ids
        .iter()
        .map(|id| SharedGpu {
            id: (*id).into(),
            memory_mib: Some(memory_mib),
            slots: Some(slots),
            healthy: true,
            parts: Vec::new(),
        })
        .collect();
    node
}

/// A Running pod bound to `on`, asking for `requests`.
pub(crate) fn bound_pod(ns: &str, name: &str, on: &str, requests: &[(&str, u64)]) -> GpuPod {
    GpuPod {
        namespace: ns.into(),
        name: name.into(),
        node: Some(on.into()),
        phase: "Running".into(),
        requests: requests
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        ..Default::default()
    }
}

/// The inventory the assembler makes of `nodes` with `pods` on them (every node's allocatable known).
pub(crate) fn accounted(nodes: Vec<NodeInventory>, pods: &[GpuPod]) -> Inventory {
    let pods: Vec<&GpuPod> = pods.iter().collect();
    let facts = NodeFacts {
        labels: None,
        allocatable_known: true,
    };
    assemble(
        nodes,
        &pods,
        DemandScope { all_nodes: true },
        &DraView::default(),
        |_| facts,
    )
}
