//! `fit --plan`: when a request of `g` GPUs fits no node now, the cheapest set of running pods to move so that
//! it fits on one node, each moved pod placed somewhere else in what stays free (a move, not an eviction).
//!
//! The rules, in order of precedence:
//! - a pod that must not move never moves: a DaemonSet's or a static pod, or one its PodDisruptionBudget
//!   does not let go ([`PodTraits::immovable`]);
//! - a gang moves whole or not at all: the pods of one Job, JobSet, LeaderWorkerSet or Kueue Workload
//!   ([`PodTraits::gang`]), wherever they run; their GPUs on other nodes are free for the moved pods;
//! - the fewest GPUs displaced, then the lowest highest priority moved, then the fewest pods;
//! - each moved pod goes to the node whose free GPUs fit it most tightly (best fit, largest pods first), never
//!   to the target node, so that the move does not cut the free GPUs into smaller pieces than it must.
//!
//! Pure: the nodes' entries (their free GPUs and holdings) and each pod's traits in, a plan out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::inventory::model::{Holder, NodeInventory};
use crate::inventory::topology::gang::offer;

/// What the plan must know of a running pod beyond its holdings. Unknown pods are movable, of priority 0,
/// in no gang.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodTraits {
    /// `spec.priority`.
    pub priority: i32,
    /// Why it must not move (`DaemonSet`, `static pod`, `PodDisruptionBudget ns/name allows no disruption`).
    pub immovable: Option<String>,
    /// The gang it belongs to (`Job ns/name`, `JobSet ns/name`, ...), whose pods move together.
    pub gang: Option<String>,
}

/// One pod to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// Where it runs.
    pub from: String,
    /// Where it fits afterwards.
    pub to: String,
    /// The GPUs it holds (and frees on `from`).
    pub gpus: u64,
    /// Its gang, when it moves with one.
    pub gang: Option<String>,
}

/// A plan: the node the request starts on once the pods have moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The node that will have the request's GPUs free.
    pub node: String,
    /// The moves, gang by gang, the largest pods first.
    pub moves: Vec<Move>,
    /// GPUs of all moved pods.
    pub displaced_gpus: u64,
    /// The highest priority among the moved pods.
    pub highest_priority: i32,
}

/// A pod on a node, as the plan weighs it.
#[derive(Clone, Debug)]
struct Held<'n> {
    namespace: &'n str,
    pod: &'n str,
    node: usize,
    gpus: u64,
}

/// The pods that move together: one gang, or one pod.
#[derive(Clone, Debug)]
struct Unit<'n> {
    pods: Vec<Held<'n>>,
    gang: Option<String>,
    priority: i32,
    movable: bool,
}

/// At most this many units on one node are tried in every combination; past it, the cheapest first.
const EXHAUSTIVE_UNITS: usize = 12;

/// The cheapest plan for `gpus` whole GPUs on one node among `nodes` (one product's, or any), or `None`:
/// when a node has them free now (no plan is needed; `fit` says where), or when no set of movable pods makes
/// room. `traits(namespace, pod)` gives a pod's traits.
pub fn plan(
    nodes: &[Arc<NodeInventory>],
    gpus: u64,
    traits: impl Fn(&str, &str) -> PodTraits,
) -> Option<Plan> {
    let free: Vec<u64> = nodes.iter().map(|n| offer(n, 1, &[])).collect();
    if free.iter().any(|f| *f >= gpus) {
        return None;
    }
    let units = units(nodes, &traits);
    let mut on_node: HashMap<usize, Vec<usize>> = HashMap::new();
    for (i, unit) in units.iter().enumerate() {
        for node in unit.pods.iter().map(|p| p.node).collect::<BTreeSet<_>>() {
            on_node.entry(node).or_default().push(i);
        }
    }
    // Targets by what they lack, least first: a plan cannot displace less than its target lacks.
    let mut targets: Vec<(u64, usize)> = nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| n.count >= gpus && eligible(n) && free[*i] < gpus)
        .map(|(i, _)| (gpus - free[i], i))
        .collect();
    targets.sort();
    let mut best: Option<(Key, Plan)> = None;
    for (lacks, target) in targets {
        // A target lacking as much as the best plan displaces may still move pods of lower priority.
        if best.as_ref().is_some_and(|(key, _)| key.0 < lacks) {
            break;
        }
        let candidates: Vec<usize> = on_node.get(&target).cloned().unwrap_or_default();
        if let Some(found) = best_on(nodes, &free, &units, &candidates, target, lacks)
            && best.as_ref().is_none_or(|(key, _)| found.0 < *key)
        {
            best = Some(found);
        }
    }
    best.map(|(_, plan)| plan)
}

/// (GPUs displaced, highest priority moved, pods moved): smaller is cheaper.
type Key = (u64, i32, usize);

/// A node a request may start on: Ready and schedulable (taints are the caller's filter).
fn eligible(node: &NodeInventory) -> bool {
    node.ready && !node.unschedulable
}

/// Every pod's holding of whole GPUs, grouped into units (gangs whole, wherever their pods run).
fn units<'n>(
    nodes: &'n [Arc<NodeInventory>],
    traits: &impl Fn(&str, &str) -> PodTraits,
) -> Vec<Unit<'n>> {
    let mut by_gang: BTreeMap<String, Unit<'n>> = BTreeMap::new();
    let mut single = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        for holding in &node.holdings {
            let Holder::Pod { namespace, name } = &holding.holder else {
                continue;
            };
            if holding.equivalent.is_some_and(|e| e.milli < 1000) || holding.amount == 0 {
                continue; // a share of a GPU frees no whole GPU
            }
            let t = traits(namespace, name);
            let held = Held {
                namespace,
                pod: name,
                node: i,
                gpus: holding.amount,
            };
            let unit = match &t.gang {
                Some(gang) => by_gang.entry(gang.clone()).or_insert_with(|| Unit {
                    pods: Vec::new(),
                    gang: Some(gang.clone()),
                    priority: t.priority,
                    movable: true,
                }),
                None => {
                    single.push(Unit {
                        pods: Vec::new(),
                        gang: None,
                        priority: t.priority,
                        movable: true,
                    });
                    single.last_mut().expect("pushed")
                }
            };
            unit.pods.push(held);
            unit.priority = unit.priority.max(t.priority);
            unit.movable &= t.immovable.is_none();
        }
    }
    single.extend(by_gang.into_values());
    single
}

/// A set of units to move and where their pods go (index in the units' pods, node).
struct Choice {
    key: Key,
    units: Vec<usize>,
    places: Vec<(usize, usize)>,
}

/// The cheapest set of `candidates` (units with pods on `target`) freeing `lacks` GPUs there whose pods all
/// fit elsewhere, as a plan.
fn best_on(
    nodes: &[Arc<NodeInventory>],
    free: &[u64],
    units: &[Unit<'_>],
    candidates: &[usize],
    target: usize,
    lacks: u64,
) -> Option<(Key, Plan)> {
    let on_target = |u: usize| -> u64 {
        units[u]
            .pods
            .iter()
            .filter(|p| p.node == target)
            .map(|p| p.gpus)
            .sum()
    };
    let mut movable: Vec<usize> = candidates
        .iter()
        .copied()
        .filter(|u| units[*u].movable)
        .collect();
    movable.sort_by_key(|u| (units[*u].priority, on_target(*u)));
    let mut best: Option<Choice> = None;
    for subset in subsets(&movable) {
        if subset.iter().map(|u| on_target(*u)).sum::<u64>() < lacks {
            continue;
        }
        let pods: Vec<&Held<'_>> = subset.iter().flat_map(|u| &units[*u].pods).collect();
        let key = (
            pods.iter().map(|p| p.gpus).sum(),
            subset
                .iter()
                .map(|u| units[*u].priority)
                .max()
                .unwrap_or(i32::MIN),
            pods.len(),
        );
        if best.as_ref().is_some_and(|b| b.key <= key) {
            continue;
        }
        if let Some(places) = place(free, &pods, target) {
            best = Some(Choice {
                key,
                units: subset,
                places,
            });
        }
    }
    let choice = best?;
    let plan = Plan {
        node: nodes[target].name.clone(),
        moves: moves(nodes, units, &choice),
        displaced_gpus: choice.key.0,
        highest_priority: choice.key.1,
    };
    Some((choice.key, plan))
}

/// Every combination of `movable` (few units), or its cheapest prefixes (many).
fn subsets(movable: &[usize]) -> Box<dyn Iterator<Item = Vec<usize>> + '_> {
    if movable.len() <= EXHAUSTIVE_UNITS {
        Box::new((1u32..(1 << movable.len())).map(move |mask| {
            (0..movable.len())
                .filter(|b| mask & (1 << b) != 0)
                .map(|b| movable[b])
                .collect()
        }))
    } else {
        Box::new((1..=movable.len()).map(move |n| movable[..n].to_vec()))
    }
}

/// The moves of a choice, in its places' order.
fn moves(nodes: &[Arc<NodeInventory>], units: &[Unit<'_>], choice: &Choice) -> Vec<Move> {
    let pods: Vec<(&Held<'_>, &Option<String>)> = choice
        .units
        .iter()
        .flat_map(|u| units[*u].pods.iter().map(move |p| (p, &units[*u].gang)))
        .collect();
    choice
        .places
        .iter()
        .map(|(pod, to)| {
            let (pod, gang) = pods[*pod];
            Move {
                namespace: pod.namespace.to_owned(),
                pod: pod.pod.to_owned(),
                from: nodes[pod.node].name.clone(),
                to: nodes[*to].name.clone(),
                gpus: pod.gpus,
                gang: gang.clone(),
            }
        })
        .collect()
}

/// Where each of `pods` goes (index in `pods`, node), largest first, best fit, never `target`; `None` when
/// one does not fit. The pods' own GPUs on other nodes are free for them.
fn place(free: &[u64], pods: &[&Held<'_>], target: usize) -> Option<Vec<(usize, usize)>> {
    let mut left: HashMap<usize, u64> = HashMap::new();
    for pod in pods.iter().filter(|p| p.node != target) {
        *left.entry(pod.node).or_insert(free[pod.node]) += pod.gpus;
    }
    // Free pieces as (free, node), the moved pods' nodes with what they free.
    let mut pieces: BTreeSet<(u64, usize)> = free
        .iter()
        .enumerate()
        .filter(|(i, f)| *i != target && **f > 0 && !left.contains_key(i))
        .map(|(i, f)| (*f, i))
        .collect();
    pieces.extend(left.iter().map(|(i, f)| (*f, *i)));
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by_key(|i| std::cmp::Reverse(pods[*i].gpus));
    let mut places = Vec::with_capacity(pods.len());
    for i in order {
        let gpus = pods[i].gpus;
        let &(f, node) = pieces.range((gpus, 0)..).next()?;
        pieces.remove(&(f, node));
        if f > gpus {
            pieces.insert((f - gpus, node));
        }
        places.push((i, node));
    }
    places.sort_by_key(|(i, _)| (std::cmp::Reverse(pods[*i].gpus), *i));
    Some(places)
}
