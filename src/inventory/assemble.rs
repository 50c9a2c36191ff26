//! The assembler: the one scan of a set of nodes. Each leaf returns values (the node scanner a node's entry,
//! the DRA accounting the devices, the allocation the holdings and the demand, the totals their sums), and
//! only this module puts them together into an [`Inventory`].

use std::collections::HashMap;
use std::sync::Arc;

use kube::core::Selector;

use crate::inventory::allocation::{self, DemandScope, GpuPod, NodeFacts};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::{self, DraInput};
use crate::inventory::health::HealthTable;
use crate::inventory::interner::NodeInterner;
use crate::inventory::model::{Inventory, NodeInventory};
use crate::inventory::scanner::{self, ScanScope};
use crate::inventory::selector::LabelMatcher;
use crate::inventory::totals;

/// What the nodes handed to a scan are: the whole cluster, or a subset (the operator watches only
/// `--node-label-selector` nodes). Only an inventory of the whole cluster answers for every pending GPU pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeUniverse {
    /// Every node of the cluster.
    #[default]
    Cluster,
    /// Some of them.
    Subset,
}

/// What a scan reads: nodes, and optionally pods, DRA objects, a selector and what the nodes are.
#[derive(Clone, Debug, Default)]
pub struct ScanInput<'a> {
    nodes: Vec<&'a ClusterNode>,
    pods: Vec<&'a GpuPod>,
    dra: DraInput<'a>,
    selector: Option<&'a Selector>,
    universe: NodeUniverse,
    interner: Option<&'a NodeInterner>,
    health: &'static HealthTable,
}

impl<'a> ScanInput<'a> {
    /// These nodes (all of the cluster's, unless [`ScanInput::universe`] says otherwise), no pods, no DRA
    /// objects, every node selected.
    pub fn nodes(nodes: impl IntoIterator<Item = &'a ClusterNode>) -> ScanInput<'a> {
        ScanInput {
            nodes: nodes.into_iter().collect(),
            ..Default::default()
        }
    }

    /// The pods whose holdings and demand are accounted.
    pub fn pods(mut self, pods: impl IntoIterator<Item = &'a GpuPod>) -> ScanInput<'a> {
        self.pods = pods.into_iter().collect();
        self
    }

    /// The DRA sources' objects: nodes publishing GPU devices are GPU nodes, and their devices are counted
    /// and allocated by the DRA rules (see [`dra`]).
    pub fn dra(mut self, dra: DraInput<'a>) -> ScanInput<'a> {
        self.dra = dra;
        self
    }

    /// Scans only the nodes `selector` picks.
    pub fn selector(mut self, selector: &'a Selector) -> ScanInput<'a> {
        self.selector = Some(selector);
        self
    }

    /// Shares entries equal to earlier scans' through `interner` (see [`crate::inventory::interner`]); the
    /// result is the same without it.
    pub fn interner(mut self, interner: &'a NodeInterner) -> ScanInput<'a> {
        self.interner = Some(interner);
        self
    }

    /// Which node conditions are GPU health (the built-in table otherwise).
    pub fn health(mut self, table: &'static HealthTable) -> ScanInput<'a> {
        self.health = table;
        self
    }

    /// What the nodes are (see [`NodeUniverse`]).
    pub fn universe(mut self, universe: NodeUniverse) -> ScanInput<'a> {
        self.universe = universe;
        self
    }
}

/// Scans the nodes the selector picks, in two passes: whether GPU Feature Discovery runs anywhere among them,
/// then each node with its DRA devices (nodes that are not GPU nodes are left out), its pods' and claims'
/// holdings put on it at once. Then the totals and the demand are summed.
pub fn scan(input: ScanInput<'_>) -> Inventory {
    let mut dra = dra::resolve(&input.dra);
    let matcher = input.selector.map(LabelMatcher::new);
    let selected: Vec<&ClusterNode> = input
        .nodes
        .into_iter()
        .filter(|node| matcher.as_ref().is_none_or(|m| m.matches(&node.labels)))
        .collect();
    let scope = ScanScope::of(selected.iter().copied()).with_health(input.health);
    let facts: HashMap<&str, NodeFacts<'_>> = selected
        .iter()
        .map(|n| {
            let facts = NodeFacts {
                labels: Some(&n.labels),
                allocatable_known: n.allocatable.is_some(),
            };
            (name_of(n), facts)
        })
        .collect();
    let facts = |name: &str| facts.get(name).copied().unwrap_or_default();
    // Each node in input order (the first of a repeated name gets the node's DRA devices); only GPU nodes
    // give an entry, and only those are sorted by name.
    let mut scanned: Vec<NodeInventory> = selected
        .iter()
        .filter_map(|node| {
            scanner::scan_node_remembered(node, scope, dra.nodes.remove(name_of(node)))
        })
        .collect();
    scanned.sort_by(|a, b| a.name.cmp(&b.name));
    let mut holders = Holders::of(&input.pods);
    let mut nodes = Vec::with_capacity(scanned.len());
    let mut scanned = scanned.into_iter().peekable();
    while let Some(mut kept) = scanned.next() {
        // Names are unique in a real cluster; a hand-made dump may repeat one. The entry kept is the least
        // by content, so it does not depend on the input order.
        while let Some(other) = scanned.next_if(|e| e.name == kept.name) {
            if format!("{other:?}") < format!("{kept:?}") {
                kept = other;
            }
        }
        nodes.push(holders.place(kept, &facts, &dra, input.interner));
    }
    let scope = DemandScope {
        all_nodes: input.universe == NodeUniverse::Cluster
            && input.selector.is_none_or(|s| s.selects_all()),
    };
    let inventory = sum_up(nodes, &input.pods, scope, &dra, facts);
    if let Some(interner) = input.interner {
        interner.forget_unused();
    }
    inventory
}

fn name_of(node: &ClusterNode) -> &str {
    &node.name
}

/// The inventory of scanned GPU nodes (sorted by name, their DRA devices in them): the pods' and claims'
/// holdings go on the nodes, then the totals and the demand are summed. `facts(node)` tells what the entries
/// do not (see [`NodeFacts`]).
pub fn assemble<'n>(
    nodes: Vec<NodeInventory>,
    pods: &[&GpuPod],
    scope: DemandScope,
    dra: &dra::DraView,
    facts: impl Fn(&str) -> NodeFacts<'n>,
) -> Inventory {
    let mut holders = Holders::of(pods);
    let nodes = nodes
        .into_iter()
        .map(|node| holders.place(node, &facts, dra, None))
        .collect();
    sum_up(nodes, pods, scope, dra, facts)
}

/// The pods that hold something on each node, by node name, until their node's entry takes them.
struct Holders<'p>(HashMap<&'p str, Vec<&'p GpuPod>>);

impl<'p> Holders<'p> {
    fn of(pods: &[&'p GpuPod]) -> Self {
        let mut on_node: HashMap<&str, Vec<&GpuPod>> = HashMap::new();
        for pod in pods {
            if let Some(node) = pod.node.as_deref()
                && pod.holds_on(node)
            {
                on_node.entry(node).or_default().push(pod);
            }
        }
        Holders(on_node)
    }

    /// Puts the holdings of `node`'s pods on it; the entry is interned as soon as it is complete (when an
    /// interner is given), so the fresh copy of an unchanged node is dropped before the next one is made.
    fn place<'n>(
        &mut self,
        mut node: NodeInventory,
        facts: &impl Fn(&str) -> NodeFacts<'n>,
        dra: &dra::DraView,
        interner: Option<&NodeInterner>,
    ) -> Arc<NodeInventory> {
        let holders = self.0.remove(node.name.as_str()).unwrap_or_default();
        let known = facts(&node.name).allocatable_known;
        allocation::allocate_node_with(&node, &holders, known, dra).apply(&mut node);
        match interner {
            Some(interner) => interner.intern(node),
            None => Arc::new(node),
        }
    }
}

/// The inventory of complete entries: the totals and the demand summed.
fn sum_up<'n>(
    nodes: Vec<Arc<NodeInventory>>,
    pods: &[&GpuPod],
    scope: DemandScope,
    dra: &dra::DraView,
    facts: impl Fn(&str) -> NodeFacts<'n>,
) -> Inventory {
    let demand = allocation::demand(pods, &nodes, scope, dra, facts);
    Inventory {
        total_gpu_nodes: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
        ready_gpu_nodes: u32::try_from(nodes.iter().filter(|n| n.ready).count())
            .unwrap_or(u32::MAX),
        total_gpus: nodes.iter().map(|n| n.count).fold(0, u64::saturating_add),
        free_gpus: nodes
            .iter()
            .map(|n| allocation::free_whole_gpus(n))
            .fold(0, u64::saturating_add),
        pending_gpu_pods: demand.pending_pods,
        resources: totals::resources(&nodes),
        products: totals::products(&nodes),
        namespaces: totals::namespaces(&nodes, &demand),
        nodes,
    }
}
