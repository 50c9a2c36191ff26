//! The fleet as data: groups of nodes (one NVLink domain or network block each where the fleet has topology,
//! else one product each), each node a row of cells (`cells`), and a job's plan laid over them. What
//! `-o json|yaml` prints and what `draw` draws. Pure: an inventory in, a map out.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::cells::{Cell, node_cells};
use crate::cmd::fit_plan::PlanJson;
use crate::inventory::Inventory;
use crate::inventory::fleet::UNKNOWN_PRODUCT;
use crate::inventory::model::{NodeInventory, UtilizationState};
use crate::inventory::topology::domains::levels_of;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::totals::same_product_key;

/// How the nodes are grouped (`--group-by`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Grouping {
    /// The NVLink domain where nodes have one, else the narrowest network block, else the product.
    #[default]
    Auto,
    /// One group per product.
    Product,
    /// One group per domain of this level (`nvlink` or a node label key) and product.
    Level(String),
}

/// The zone is a topology level, but a zone holds whole data centres: no picture of GPUs is grouped by it
/// unless asked (`--group-by topology.kubernetes.io/zone`).
const ZONE: &str = "topology.kubernetes.io/zone";

/// How many GPUs are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Counts {
    pub(crate) held: u64,
    pub(crate) idle: u64,
    pub(crate) leaving: u64,
    pub(crate) shared: u64,
    pub(crate) arriving: u64,
    pub(crate) free: u64,
    pub(crate) unhealthy: u64,
    pub(crate) unusable: u64,
}

impl Counts {
    /// The GPUs in `state`.
    pub(crate) fn of(&self, state: Cell) -> u64 {
        match state {
            Cell::Held => self.held,
            Cell::Idle => self.idle,
            Cell::Leaving => self.leaving,
            Cell::Shared => self.shared,
            Cell::Arriving => self.arriving,
            Cell::Free => self.free,
            Cell::Unhealthy => self.unhealthy,
            Cell::Unusable => self.unusable,
        }
    }

    fn add(&mut self, state: Cell, n: u64) {
        let slot = match state {
            Cell::Held => &mut self.held,
            Cell::Idle => &mut self.idle,
            Cell::Leaving => &mut self.leaving,
            Cell::Shared => &mut self.shared,
            Cell::Arriving => &mut self.arriving,
            Cell::Free => &mut self.free,
            Cell::Unhealthy => &mut self.unhealthy,
            Cell::Unusable => &mut self.unusable,
        };
        *slot = slot.saturating_add(n);
    }

    fn add_all(&mut self, other: &Counts) {
        for state in Cell::ALL {
            self.add(state, other.of(state));
        }
    }
}

/// Whether the idle cells can show: `shown` where the last Prometheus query answered in full, `notRead`
/// where no `--prometheus-url` was given, `unknown` where the query failed (no GPU is then drawn idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum IdleShown {
    Shown,
    NotRead,
    Unknown,
}

/// One GPU node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MapNode {
    pub(crate) name: String,
    pub(crate) cells: Vec<Cell>,
    /// Why no new pod lands on it (`NotReady`, `cordoned`, `tainted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unusable: Option<&'static str>,
    /// The job starts here: now (it fits), or once the plan's pods have moved.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) job: bool,
}

/// One group: a domain's nodes of one product, or a product's nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Group {
    /// The level's domain (`None`: the product's nodes, or those with no place at the level).
    pub(crate) domain: Option<String>,
    pub(crate) product: String,
    pub(crate) gpus: u64,
    pub(crate) counts: Counts,
    pub(crate) nodes: Vec<MapNode>,
}

/// A job of whole GPUs on one node (`--gpus`), and the plan that makes room for it (`--plan`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Job {
    pub(crate) gpus: u64,
    pub(crate) fits: bool,
    /// The nodes where it starts now.
    pub(crate) nodes: Vec<String>,
    /// `fit --plan`'s plan, when it does not fit and one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) plan: Option<PlanJson>,
}

/// The whole picture.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Map {
    /// `nvlink`, a node label key, or `product`.
    pub(crate) grouped_by: String,
    pub(crate) idle: IdleShown,
    pub(crate) nodes: u64,
    pub(crate) gpus: u64,
    pub(crate) counts: Counts,
    pub(crate) groups: Vec<Group>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) job: Option<Job>,
}

/// The map of `inventory`'s GPU nodes grouped as `grouping` says, with `job` laid over it.
pub(crate) fn picture(inventory: &Inventory, grouping: &Grouping, job: Option<Job>) -> Map {
    let level = level_of(&inventory.nodes, grouping);
    let idle = match inventory.utilization.as_ref().map(|u| u.state) {
        None => IdleShown::NotRead,
        Some(UtilizationState::Current) => IdleShown::Shown,
        Some(UtilizationState::Unknown) => IdleShown::Unknown,
    };
    let mut map = Map {
        grouped_by: level.clone().unwrap_or_else(|| "product".to_owned()),
        idle,
        nodes: inventory.nodes.len() as u64,
        gpus: 0,
        counts: Counts::default(),
        groups: groups(inventory, level.as_deref(), idle == IdleShown::Shown),
        job: None,
    };
    if let Some(job) = job {
        lay_over(&mut map, &job);
        map.job = Some(job);
    }
    count(&mut map);
    map
}

/// The level the nodes are grouped by, `None` for the product.
fn level_of(nodes: &[std::sync::Arc<NodeInventory>], grouping: &Grouping) -> Option<String> {
    match grouping {
        Grouping::Product => None,
        Grouping::Level(level) => Some(level.clone()),
        Grouping::Auto => {
            let nodes: Vec<&NodeInventory> = nodes.iter().map(AsRef::as_ref).collect();
            // `nvlink` first, then the network levels from the narrowest: the first whose domains group
            // something (a level of one node per domain is the node list again).
            levels_of(&nodes)
                .into_iter()
                .filter(|level| *level != ZONE && *level != HOSTNAME)
                .find(|level| groups_nodes(&nodes, level))
                .map(str::to_owned)
        }
    }
}

/// Whether some domain of `level` holds two nodes or more.
fn groups_nodes(nodes: &[&NodeInventory], level: &str) -> bool {
    let mut seen: HashMap<&str, u32> = HashMap::new();
    nodes.iter().any(|node| {
        node.topology.domain(level).is_some_and(|domain| {
            let n = seen.entry(domain).or_default();
            *n += 1;
            *n > 1
        })
    })
}

/// The groups, the domains' in name order, then the nodes with no place at the level, per product; idle
/// cells only where the idle figures are known (`idle`), as the legend says.
fn groups(inventory: &Inventory, level: Option<&str>, idle: bool) -> Vec<Group> {
    let mut groups: BTreeMap<(bool, String, String), Group> = BTreeMap::new();
    for node in &inventory.nodes {
        let product = node.product.as_deref().unwrap_or(UNKNOWN_PRODUCT);
        let domain = level.and_then(|l| node.topology.domain(l));
        let key = (
            domain.is_none(),
            domain.unwrap_or_default().to_owned(),
            same_product_key(product),
        );
        let group = groups.entry(key).or_insert_with(|| Group {
            domain: domain.map(str::to_owned),
            product: product.to_owned(),
            gpus: 0,
            counts: Counts::default(),
            nodes: Vec::new(),
        });
        let idle = if idle {
            inventory.idle_of(&node.name)
        } else {
            &[]
        };
        let (cells, unusable) = node_cells(node, idle);
        group.nodes.push(MapNode {
            name: node.name.clone(),
            cells,
            unusable,
            job: false,
        });
    }
    groups.into_values().collect()
}

/// Marks the job's nodes, and the plan's moves: `gpus` held cells of each moved pod's node become
/// `Leaving`, as many free cells where it goes `Arriving`.
fn lay_over(map: &mut Map, job: &Job) {
    let at: HashMap<String, (usize, usize)> = map
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| {
            let nodes = group.nodes.iter().enumerate();
            nodes.map(move |(n, node)| (node.name.clone(), (g, n)))
        })
        .collect();
    let mark = |map: &mut Map, name: &str| {
        if let Some((g, n)) = at.get(name) {
            map.groups[*g].nodes[*n].job = true;
        }
    };
    for name in &job.nodes {
        mark(map, name);
    }
    let Some(plan) = &job.plan else { return };
    if let Some(target) = &plan.node {
        mark(map, target);
    }
    // A pod leaves whole GPUs; one leaving a node that is out (a gang's member) leaves `x` cells.
    for step in &plan.moves {
        if let Some((g, n)) = at.get(&step.from) {
            let from = &mut map.groups[*g].nodes[*n].cells;
            change(
                from,
                step.gpus,
                &[Cell::Held, Cell::Idle, Cell::Unusable],
                Cell::Leaving,
            );
        }
    }
    // A gang's pod may go where another leaves: free cells first, then the ones just left.
    for step in &plan.moves {
        if let Some((g, n)) = at.get(&step.to) {
            let to = &mut map.groups[*g].nodes[*n].cells;
            change(to, step.gpus, &[Cell::Free, Cell::Leaving], Cell::Arriving);
        }
    }
    for group in &mut map.groups {
        for node in &mut group.nodes {
            node.cells.sort();
        }
    }
}

/// Up to `n` of `cells` in the states `from` (in that order of preference) become `to`.
fn change(cells: &mut [Cell], n: u64, from: &[Cell], to: Cell) {
    let mut left = n;
    for state in from {
        for cell in cells.iter_mut().filter(|c| **c == *state) {
            if left == 0 {
                return;
            }
            *cell = to;
            left -= 1;
        }
    }
}

/// The groups' and the map's GPUs and counts, from the cells.
fn count(map: &mut Map) {
    map.counts = Counts::default();
    map.gpus = 0;
    for group in &mut map.groups {
        group.counts = Counts::default();
        for cell in group.nodes.iter().flat_map(|n| &n.cells) {
            group.counts.add(*cell, 1);
        }
        group.gpus = group.nodes.iter().map(|n| n.cells.len() as u64).sum();
        map.counts.add_all(&group.counts);
        map.gpus = map.gpus.saturating_add(group.gpus);
    }
}
