//! The assembler: the one scan of a set of nodes. Each leaf returns values (the node scanner a node's entry,
//! the DRA accounting the devices, the allocation the holdings and the demand, the totals their sums), and
//! only this module puts them together into an [`Inventory`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::inventory::allocation::{self, DemandScope, GpuPod, NodeFacts};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra;
use crate::inventory::fragmentation;
use crate::inventory::memory::{MadeFrom, ScanMemory};
use crate::inventory::model::{Inventory, NodeInventory, QuotaReport};
use crate::inventory::quotas::{self, KueueInput, NodeView, QuotaMemo, QuotaScope};
use crate::inventory::scanner::{self, ScanScope};
use crate::inventory::selector::LabelMatcher;
use crate::inventory::topology;
use crate::inventory::totals;
use crate::inventory::utilization::{self, Round};

/// Scans the nodes the selector picks, in two passes: whether GPU Feature Discovery runs anywhere among them,
/// then each node with its DRA devices (nodes that are not GPU nodes are left out), its pods' and claims'
/// holdings put on it at once. Then the totals and the demand are summed. With a memory and the caches'
/// `Arc`s ([`ScanInput::shared`]), a GPU node whose entry was made from the very same node, pods and scope is
/// not scanned again: the memory hands out that entry.
pub fn scan(mut input: ScanInput<'_>) -> Inventory {
    let mut memory = input.memory.take();
    let mut dra = dra::resolve(&input.dra);
    let selected = select(&input);
    let tables = ScanScope {
        health: input.health,
        vendors: input.vendors,
        topology: input.topology,
        ..ScanScope::default()
    };
    let scope = ScanScope::of_nodes(selected.iter().map(|s| s.node), tables);
    let mut holders = Holders::of(&input.pods, input.shared.map(|shared| shared.pods));
    let mut scanned = scan_selected(&selected, scope, &mut dra, &holders, memory.as_deref_mut());
    // What the entries do not tell, for the GPU nodes only (the others have no entry to ask for it).
    let facts_of: HashMap<&str, NodeFacts<'_>> = scanned
        .iter()
        .map(|s| {
            let facts = NodeFacts {
                labels: Some(&s.at.node.labels),
                allocatable_known: s.at.node.allocatable.is_some(),
            };
            (name_of(s.at.node), facts)
        })
        .collect();
    let facts = |name: &str| facts_of.get(name).copied().unwrap_or_default();
    scanned.sort_by(|a, b| a.name().cmp(b.name()));
    let placing = Placing { scope, dra: &dra };
    let (nodes, made_from_nodes) = place_all(
        scanned,
        &placing,
        &mut holders,
        &facts,
        memory.as_deref_mut(),
    );
    let demand = DemandScope {
        all_nodes: input.universe == NodeUniverse::Cluster
            && input.selector.is_none_or(|s| s.selects_all()),
    };
    let marks = memory.as_deref_mut().map(|m| &mut m.clique_marks);
    let mut inventory = sum_up(nodes, &input.pods, demand, &dra, facts, marks);
    if let Some(kueue) = &input.kueue {
        let scope = quota_scope(&input);
        let memo = memory.as_deref_mut().map(|m| &mut m.quotas);
        inventory.quotas = Some(quota_report(
            &inventory,
            &made_from_nodes,
            kueue,
            &scope,
            memo,
        ));
    }
    if let Some(activity) = input.utilization {
        put_idle(&mut inventory, activity, memory.as_deref_mut());
    }
    if let Some(memory) = memory {
        memory.forget_unused();
    }
    inventory
}

/// The nodes the selector picks, each with its cache's `Arc` when the scan has them.
fn select<'a>(input: &ScanInput<'a>) -> Vec<Selected<'a>> {
    let matcher = input.selector.map(LabelMatcher::new);
    input
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, node)| matcher.as_ref().is_none_or(|m| m.matches(&node.labels)))
        .map(|(i, node)| Selected {
            node,
            arc: input.shared.map(|shared| &shared.nodes[i]),
        })
        .collect()
}

/// Each selected node in input order (the first of a repeated name gets the node's DRA devices): the GPU
/// nodes' entries, an earlier scan's where the memory kept one made from the very same node, pods and
/// scope, else built now; a node the memory knows to be no GPU node in this scope is not read again.
fn scan_selected<'a>(
    selected: &[Selected<'a>],
    scope: ScanScope<'a>,
    dra: &mut dra::DraView,
    holders: &Holders<'a>,
    mut memory: Option<&mut ScanMemory>,
) -> Vec<Scanned<'a>> {
    let key = scope.key();
    let mut scanned: Vec<Scanned<'_>> = Vec::new();
    for at in selected {
        let name = name_of(at.node);
        let devices = dra.nodes.remove(name);
        let without_dra = devices.is_none();
        if without_dra
            && (memory.as_deref_mut().zip(at.arc)).is_some_and(|(m, arc)| m.known_no_gpu(arc, key))
        {
            continue;
        }
        // Only an entry that nothing but its node and its pods shaped can be reused.
        let holding = devices
            .is_none()
            .then(|| holders.identity(name, dra))
            .flatten();
        let kept = (memory.as_deref_mut().zip(at.arc).zip(holding.as_deref()))
            .and_then(|((m, arc), holding)| m.made_from(name, arc, key, holding));
        let entry = match kept {
            Some(kept) => Entry::Kept(kept),
            None => match scanner::scan_node_in(at.node, scope, devices) {
                Some(fresh) => Entry::Fresh(Box::new(fresh)),
                None => {
                    if let Some((m, arc)) =
                        memory.as_deref_mut().zip(at.arc).filter(|_| without_dra)
                    {
                        m.remember_no_gpu(arc, key);
                    }
                    continue;
                }
            },
        };
        scanned.push(Scanned {
            at: *at,
            holding,
            entry,
        });
    }
    scanned
}

/// What placing the holdings on fresh entries reads besides the entries.
struct Placing<'a> {
    scope: ScanScope<'a>,
    dra: &'a dra::DraView,
}

/// The complete entries, sorted by name, one per name, and the node each was made from (the quota rules
/// read their labels): a fresh entry gets its holdings here, a kept one has them.
fn place_all<'a, 'n>(
    scanned: Vec<Scanned<'a>>,
    placing: &Placing<'_>,
    holders: &mut Holders<'a>,
    facts: &impl Fn(&str) -> NodeFacts<'n>,
    mut memory: Option<&mut ScanMemory>,
) -> (Vec<Arc<NodeInventory>>, Vec<Selected<'a>>) {
    let mut nodes = Vec::with_capacity(scanned.len());
    let mut made_from_nodes: Vec<Selected<'_>> = Vec::with_capacity(scanned.len());
    let mut scanned = scanned.into_iter().peekable();
    while let Some(mut kept) = scanned.next() {
        // Names are unique in a real cluster; a hand-made dump may repeat one. The entry kept is the least
        // by content (before holdings), so it does not depend on the input order.
        while let Some(other) = scanned.next_if(|e| e.name() == kept.name()) {
            let (a, b) = (kept.fresh(placing.scope), other.fresh(placing.scope));
            kept = if format!("{:?}", b.entry) < format!("{:?}", a.entry) {
                b
            } else {
                a
            };
        }
        made_from_nodes.push(kept.at);
        nodes.push(match kept.entry {
            Entry::Kept(entry) => entry,
            Entry::Fresh(entry) => {
                let made_from = kept.at.arc.zip(kept.holding).map(|(node, pods)| MadeFrom {
                    node: node.clone(),
                    holders: pods.into_iter().cloned().collect(),
                    scope: placing.scope.key(),
                });
                holders.place(*entry, facts, placing.dra, memory.as_deref_mut(), made_from)
            }
        });
    }
    (nodes, made_from_nodes)
}

/// Joins the held GPUs with their activity: the report, and beside the entries each node's idle holdings.
/// With a memory, only the nodes that changed since its last scan under this activity are joined, and an
/// unchanged node keeps the very list it had (see [`utilization::IdleMemo`]).
fn put_idle(inventory: &mut Inventory, activity: &Arc<Round>, memory: Option<&mut ScanMemory>) {
    let assessment = match memory {
        Some(memory) => memory.idle.put_idle(&inventory.nodes, activity),
        None => utilization::assess(&inventory.nodes, activity),
    };
    inventory.utilization = Some(assessment.report);
    inventory.idle = assessment.by_node;
}

/// The inventory's GPU nodes, with their labels, against Kueue's objects. `made_from[i]` is the node entry
/// `i` was made from (the assembler keeps the entries' order).
fn quota_report(
    inventory: &Inventory,
    made_from: &[Selected<'_>],
    kueue: &KueueInput<'_>,
    scope: &QuotaScope<'_>,
    memo: Option<&mut QuotaMemo>,
) -> QuotaReport {
    let views: Vec<NodeView<'_>> = inventory
        .nodes
        .iter()
        .zip(made_from)
        .map(|(entry, at)| {
            debug_assert_eq!(
                entry.name.as_str(),
                &*at.node.name,
                "entries keep their order"
            );
            NodeView {
                entry,
                labels: &at.node.labels,
                node: at.arc,
            }
        })
        .collect();
    quotas::assess(&views, kueue, scope, memo)
}

/// Which nodes the scan holds, for the quota rules: the inventory's selector and, on a subset, the one that
/// picked it.
fn quota_scope<'a>(input: &ScanInput<'a>) -> QuotaScope<'a> {
    let selector = input.selector.filter(|s| !s.selects_all());
    match (input.universe, input.watched) {
        (NodeUniverse::Cluster, _) => match selector {
            None => QuotaScope::Cluster,
            Some(s) => QuotaScope::Selected(vec![s]),
        },
        (NodeUniverse::Subset, Some(watched)) => {
            QuotaScope::Selected(selector.into_iter().chain([watched]).collect())
        }
        (NodeUniverse::Subset, None) => QuotaScope::Partial,
    }
}

fn name_of(node: &ClusterNode) -> &str {
    &node.name
}

/// A node the selector picked, and its cache's `Arc` when the scan has them.
#[derive(Clone, Copy)]
struct Selected<'a> {
    node: &'a ClusterNode,
    arc: Option<&'a Arc<ClusterNode>>,
}

/// A GPU node's entry: built by this scan (holdings still to place), or an earlier scan's, complete.
///
/// A fresh entry is boxed although it is moved into its `Arc` once: a pass under churn builds a few entries
/// and reuses the rest, and the scan's list holds, sorts and grows one of these per GPU node. Inline, each
/// would be an entry's size (688 B), and the list 1.4-1.9 KB a GPU node at its peak while it grows and
/// sorts; boxed it is 48 B.
#[derive(Debug)]
enum Entry {
    Fresh(Box<NodeInventory>),
    Kept(Arc<NodeInventory>),
}

/// A scanned GPU node: where it came from, the pods holding on it when only they and the node shape its
/// entry (see [`Holders::identity`]), and its entry.
struct Scanned<'a> {
    at: Selected<'a>,
    holding: Option<Vec<&'a Arc<GpuPod>>>,
    entry: Entry,
}

impl Scanned<'_> {
    fn name(&self) -> &str {
        match &self.entry {
            Entry::Fresh(entry) => &entry.name,
            Entry::Kept(entry) => &entry.name,
        }
    }

    /// The same node with an entry built by this scan, to compare with another of its name. A kept entry
    /// came from a node without DRA devices, so it is scanned again without them.
    fn fresh(self, scope: ScanScope) -> Self {
        if matches!(self.entry, Entry::Fresh(_)) {
            return self;
        }
        match scanner::scan_node_in(self.at.node, scope, None) {
            Some(entry) => Scanned {
                entry: Entry::Fresh(Box::new(entry)),
                ..self
            },
            None => self,
        }
    }
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
    let mut holders = Holders::of(pods, None);
    let nodes = nodes
        .into_iter()
        .map(|node| holders.place(node, &facts, dra, None, None))
        .collect();
    sum_up(nodes, pods, scope, dra, facts, None)
}

/// The pods that hold something on each node (by index in `pods`, by node name), until their node's entry
/// takes them.
struct Holders<'p> {
    pods: &'p [&'p GpuPod],
    arcs: Option<&'p [Arc<GpuPod>]>,
    on_node: HashMap<&'p str, Vec<usize>>,
}

impl<'p> Holders<'p> {
    /// `arcs`: the caches' `Arc`s of `pods`, in the same order, if the scan has them.
    fn of(pods: &'p [&'p GpuPod], arcs: Option<&'p [Arc<GpuPod>]>) -> Self {
        let mut on_node: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, pod) in pods.iter().enumerate() {
            if let Some(node) = pod.node.as_deref()
                && pod.holds_on(node)
            {
                on_node.entry(node).or_default().push(i);
            }
        }
        Holders {
            pods,
            arcs,
            on_node,
        }
    }

    /// The `Arc`s of the pods holding on `node`, when the scan has them and no DRA claim meets any of their
    /// requests (then the node's allocation depends on the node and these pods alone).
    fn identity(&self, node: &str, dra: &dra::DraView) -> Option<Vec<&'p Arc<GpuPod>>> {
        let arcs = self.arcs?;
        let on_node = self
            .on_node
            .get(node)
            .map(Vec::as_slice)
            .unwrap_or_default();
        on_node
            .iter()
            .map(|&i| (!allocation::requests_met_by_claims(self.pods[i], dra)).then_some(&arcs[i]))
            .collect()
    }

    /// Puts the holdings of `node`'s pods on it; the entry is shared through the memory as soon as it is
    /// complete (when a memory is given, with what it was made from when known), so the fresh copy of an
    /// unchanged node is dropped before the next one is made.
    fn place<'n>(
        &mut self,
        mut node: NodeInventory,
        facts: &impl Fn(&str) -> NodeFacts<'n>,
        dra: &dra::DraView,
        memory: Option<&mut ScanMemory>,
        made_from: Option<MadeFrom>,
    ) -> Arc<NodeInventory> {
        let on_node = self.on_node.remove(node.name.as_str()).unwrap_or_default();
        let holders: Vec<&GpuPod> = on_node.iter().map(|&i| self.pods[i]).collect();
        let known = facts(&node.name).allocatable_known;
        allocation::allocate_node_with(&node, &holders, known, dra).apply(&mut node);
        match memory {
            Some(memory) => memory.intern_made_from(node, made_from),
            None => Arc::new(node),
        }
    }
}

/// The inventory of complete entries: the totals and the demand summed. `marks`: the kept
/// `NvlinkCliqueMissing` entries, when the scan has a memory.
fn sum_up<'n>(
    mut nodes: Vec<Arc<NodeInventory>>,
    pods: &[&GpuPod],
    scope: DemandScope,
    dra: &dra::DraView,
    facts: impl Fn(&str) -> NodeFacts<'n>,
    marks: Option<&mut topology::nvlink_health::CliqueMarks>,
) -> Inventory {
    let groups = topology::gang::product_groups(&nodes);
    // A fleet without topology labels pays nothing for topology.
    let products: &[(String, Vec<usize>)] = if nodes.iter().any(|n| !n.topology.is_empty()) {
        &groups
    } else {
        &[]
    };
    topology::nvlink_health::mark_clique_missing(&mut nodes, products, marks);
    let blocked = fragmentation::blocked_pods(pods, &nodes, &groups, &facts);
    let demand = allocation::demand(pods, &nodes, scope, dra, &facts);
    let topology = topology::summary::summarize(&nodes, products);
    Inventory {
        fragmentation: fragmentation::measure(&nodes, &groups, blocked, &topology),
        topology,
        total_gpu_nodes: u32::try_from(nodes.len()).unwrap_or(u32::MAX),
        ready_gpu_nodes: u32::try_from(nodes.iter().filter(|n| n.ready).count())
            .unwrap_or(u32::MAX),
        total_gpus: nodes.iter().map(|n| n.count).fold(0, u64::saturating_add),
        free_gpus: nodes
            .iter()
            .map(|n| allocation::free_whole_gpus(n))
            .fold(0, u64::saturating_add),
        occupancy: nodes.iter().fold(Default::default(), |mut sum, n| {
            sum.add(n.occupancy);
            sum
        }),
        pending_gpu_pods: demand.pending_pods,
        resources: totals::resources(&nodes),
        products: totals::products(&nodes),
        namespaces: totals::namespaces(&nodes, &demand),
        nodes,
        quotas: None,
        utilization: None,
        idle: Default::default(),
    }
}

mod input;
#[cfg(test)]
mod reuse_tests;

pub use input::{NodeUniverse, ScanInput};
