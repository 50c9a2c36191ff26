//! `fit --plan`: when a request of `g` GPUs fits no node now, the cheapest set of running pods to move so that
//! it fits on one node, each moved pod placed somewhere else in what stays free (a move, not an eviction).
//!
//! The rules, in order of precedence:
//! - a pod that must not move never moves: a DaemonSet's or a static pod, or one a PodDisruptionBudget
//!   allowing no disruption covers ([`PodTraits::immovable`]);
//! - a PodDisruptionBudget allowing `k` disruptions lets at most `k` of its pods move in one plan
//!   ([`PodTraits::budgets`]);
//! - a gang moves whole or not at all: the pods of one Job, JobSet, LeaderWorkerSet group or Kueue pod group
//!   ([`PodTraits::gang`]), wherever they run; their GPUs on other nodes are free for the moved pods;
//! - the fewest GPUs displaced, then the lowest highest priority moved, then the fewest pods;
//! - each moved pod goes to the node whose free GPUs fit it most tightly (best fit, largest pods first), never
//!   to the target node, so that the move does not cut the free GPUs into smaller pieces than it must.
//!
//! When no plan exists, [`Stops`] says which of the rules stopped it (`plan_why.rs`).
//!
//! Pure: the nodes' entries (their free GPUs and holdings) and each pod's traits in, a plan out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::plan_place::{Pieces, subsets};
use super::plan_types::{Held, Unit};
pub use super::plan_types::{Immovable, Move, Plan, PodTraits};
pub use super::plan_why::Stops;
use crate::inventory::model::{Holder, NodeInventory};
use crate::inventory::topology::gang::offer;

/// Why there is no plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NoPlan {
    /// A node has the GPUs free now: no plan is needed (`fit` says where).
    FitsNow,
    /// No Ready, schedulable node has that many GPUs at all: moving pods cannot help.
    NoNode,
    /// The rules stopped every set of moves: which, and how often.
    Stopped(Stops),
}

/// The cheapest plan for `gpus` whole GPUs on one node among `nodes` (one product's, or any), or why there
/// is none. `traits(namespace, pod)` gives a pod's traits.
pub fn plan(
    nodes: &[Arc<NodeInventory>],
    gpus: u64,
    traits: impl Fn(&str, &str) -> PodTraits,
) -> Result<Plan, NoPlan> {
    needed(nodes, gpus)?;
    let free: Vec<u64> = nodes.iter().map(|n| offer(n, 1, &[])).collect();
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
    let pieces = Pieces::of(&free);
    // No plan moves pods of lower priority than the lowest a movable pod has: a plan displacing only what
    // its target lacks, at that priority, in one pod, cannot be beaten by a target lacking as much or more.
    let lowest = units
        .iter()
        .filter(|u| u.immovable.is_none())
        .map(|u| u.priority)
        .min()
        .unwrap_or(i32::MIN);
    let mut stops = Stops::new(gpus);
    let mut best: Option<(Key, Plan)> = None;
    for (lacks, target) in targets {
        // A target lacking as much as the best plan displaces may still move pods of lower priority.
        if best
            .as_ref()
            .is_some_and(|(key, _)| key.0 < lacks || *key <= (lacks, lowest, 1))
        {
            break;
        }
        let candidates: Vec<usize> = on_node.get(&target).cloned().unwrap_or_default();
        let search = Search {
            nodes,
            pieces: &pieces,
            units: &units,
            target,
            lacks,
        };
        if let Some(found) = search.best(&candidates, &mut stops)
            && best.as_ref().is_none_or(|(key, _)| found.0 < *key)
        {
            best = Some(found);
        }
    }
    best.map(|(_, plan)| plan).ok_or(NoPlan::Stopped(stops))
}

/// Whether moving pods could help a request of `gpus` on one of `nodes` (else why not), before any pod's
/// traits are read: not when a node has them free now, nor when no node that could start it has as many.
pub fn needed(nodes: &[Arc<NodeInventory>], gpus: u64) -> Result<(), NoPlan> {
    if nodes.iter().any(|n| offer(n, 1, &[]) >= gpus) {
        return Err(NoPlan::FitsNow);
    }
    if !nodes.iter().any(|n| n.count >= gpus && eligible(n)) {
        return Err(NoPlan::NoNode);
    }
    Ok(())
}

/// (GPUs displaced, highest priority moved, pods moved): smaller is cheaper.
type Key = (u64, i32, usize);

/// A node a request may start on: Ready and schedulable (taints are the caller's filter).
fn eligible(node: &NodeInventory) -> bool {
    node.ready && !node.unschedulable
}

/// Every pod's holding of whole GPUs, grouped into units (gangs whole, wherever their pods run).
pub(super) fn units<'n>(
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
            let empty = |gang: Option<String>| Unit {
                pods: Vec::new(),
                gang,
                priority: t.priority,
                immovable: None,
                budgets: Vec::new(),
            };
            let unit = match &t.gang {
                Some(gang) => by_gang
                    .entry(gang.clone())
                    .or_insert_with(|| empty(Some(gang.clone()))),
                None => {
                    single.push(empty(None));
                    single.last_mut().expect("pushed")
                }
            };
            unit.pods.push(Held {
                namespace,
                pod: name,
                node: i,
                gpus: holding.amount,
                owner: t.owner.clone(),
                priority: t.priority,
                immovable: t.immovable.clone(),
            });
            unit.priority = unit.priority.max(t.priority);
            if unit.immovable.is_none() {
                unit.immovable = t.immovable;
            }
            unit.budgets.extend(t.budgets);
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

/// The search for the cheapest moves that free `lacks` GPUs on `target`.
struct Search<'a, 'n> {
    nodes: &'a [Arc<NodeInventory>],
    pieces: &'a Pieces<'a>,
    units: &'a [Unit<'n>],
    target: usize,
    lacks: u64,
}

impl Search<'_, '_> {
    /// The GPUs unit `u` holds on the target.
    fn on_target(&self, u: usize) -> u64 {
        let pods = self.units[u].pods.iter().filter(|p| p.node == self.target);
        pods.map(|p| p.gpus).sum()
    }

    /// The cheapest set of `candidates` (units with pods on the target) freeing what it lacks whose pods all
    /// fit elsewhere, as a plan; what stopped the others goes into `stops`.
    fn best(&self, candidates: &[usize], stops: &mut Stops) -> Option<(Key, Plan)> {
        let (mut movable, pinned): (Vec<usize>, Vec<usize>) = candidates
            .iter()
            .partition(|u| self.units[**u].immovable.is_none());
        stops.pinned_on_target(self.units, &pinned, self.target);
        let reach: u64 = movable.iter().map(|u| self.on_target(*u)).sum();
        stops.reached(self.pieces.free(self.target) + reach);
        movable.sort_by_key(|u| (self.units[*u].priority, self.on_target(*u)));
        let mut best: Option<Choice> = None;
        for subset in subsets(&movable) {
            if subset.iter().map(|u| self.on_target(*u)).sum::<u64>() < self.lacks {
                continue;
            }
            let pods: Vec<&Held<'_>> = subset.iter().flat_map(|u| &self.units[*u].pods).collect();
            let key = (
                pods.iter().map(|p| p.gpus).sum(),
                subset
                    .iter()
                    .map(|u| self.units[*u].priority)
                    .max()
                    .unwrap_or(i32::MIN),
                pods.len(),
            );
            if best.as_ref().is_some_and(|b| b.key <= key) {
                continue;
            }
            let over = over_budget(self.units, &subset);
            if !over.is_empty() {
                stops.over_budget(over);
                continue;
            }
            match self.pieces.place(&pods, self.target) {
                Some(places) => {
                    best = Some(Choice {
                        key,
                        units: subset,
                        places,
                    })
                }
                None => stops.no_room(subset.iter().filter_map(|u| self.units[*u].gang.as_deref())),
            }
        }
        let choice = best?;
        let plan = Plan {
            node: self.nodes[self.target].name.clone(),
            moves: moves(self.nodes, self.units, &choice),
            displaced_gpus: choice.key.0,
            highest_priority: choice.key.1,
        };
        Some((choice.key, plan))
    }
}

/// The budgets (and what each allows) that moving every unit of `subset` would exceed.
fn over_budget<'u>(units: &'u [Unit<'_>], subset: &[usize]) -> Vec<(&'u str, u32)> {
    let mut moving: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    for (budget, allowed) in subset.iter().flat_map(|u| &units[*u].budgets) {
        moving.entry(budget).or_insert((0, *allowed)).0 += 1;
    }
    moving
        .into_iter()
        .filter(|(_, (moved, allowed))| moved > allowed)
        .map(|(budget, (_, allowed))| (budget, allowed))
        .collect()
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
            pod.moved_to(nodes, *to, gang.clone())
        })
        .collect()
}
