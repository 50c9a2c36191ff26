//! `fit --plan` for a gang: a job of P pods of K GPUs that must run within one domain of a level (an NVLink
//! partition, a network block; with no level, anywhere on the product's nodes). When no domain offers P pods
//! now (the gang rule, `topology::gang::offer`), the cheapest set of running pods to move so that one does,
//! each moved pod placed on free GPUs the gang will not use (a move, not an eviction). The rules are the
//! single-node plan's (`plan.rs`): pods that must not move never do, gangs move whole, PodDisruptionBudgets
//! are counted across the whole plan, the fewest GPUs displaced, then the lowest priority, then the fewest
//! pods; moved pods go where they fit most tightly, largest first.
//!
//! The search, per domain that could hold P pods at all:
//! 1. per node, for each number `j` of extra pods it could take, the cheapest set of its movable units that
//!    frees room for them (every combination of up to [`EXHAUSTIVE_UNITS`] units; the cheapest prefixes of
//!    more, lowest priority first);
//! 2. the cheapest way to take the domain's missing pods from those per-node options (a knapsack over the
//!    domain's nodes, O(nodes x missing pods x options));
//! 3. the chosen moves checked together: the budgets across the plan, then a placement of every moved pod;
//!    on a failure the unit at fault is left out and the domain searched again, at most [`ROUNDS`] times.
//!
//! Then the cheapest domain. Not optimal: a gang spanning two nodes of the domain is costed on each (the plan
//! counts it once), the priority is weighed greedily within the knapsack, the gang takes every free pod slot
//! of the domain rather than leaving one to a moved pod, and a failed check leaves a unit out rather than
//! trying every other set. It can miss a plan that moves pods between nodes of the domain, and cost up to
//! the GPUs of the units left out more than the best. Time: the indexes are made once (the units by node,
//! the free pieces sorted); per domain and round, linear in its nodes times the missing pods.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::gang_index::{Index, Pieces, index};
pub use super::gang_why::GangStops;
use super::plan_types::{Move, PodTraits};
use crate::inventory::model::NodeInventory;
use crate::inventory::topology::domains::domain_of;
use crate::inventory::topology::gang::{Toleration, offer, untolerated_taint};

/// At most this many movable units on one node are tried in every combination; past it, the cheapest first.
pub const EXHAUSTIVE_UNITS: usize = 10;

/// At most this many searches of one domain, each leaving out the units the one before failed on.
pub const ROUNDS: usize = 8;

/// The gang: `pods` pods of `gpus_per_pod` GPUs within one domain of `level` (`None`: any nodes).
#[derive(Clone, Debug)]
pub struct GangJob<'a> {
    /// Its pods (P).
    pub pods: u64,
    /// Each pod's GPUs (K).
    pub gpus_per_pod: u64,
    /// The level (`nvlink`, a label key); `None`: any nodes of the product.
    pub level: Option<&'a str>,
    /// What the gang's pods tolerate (see `topology::gang`).
    pub tolerations: &'a [Toleration],
}

/// A gang's plan: the domain it starts in once the pods have moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GangPlan {
    /// The domain (`None`: the job asked for no level).
    pub domain: Option<String>,
    /// The nodes the gang's pods will run on (the hosts), in the domain's order.
    pub nodes: Vec<String>,
    /// The moves, the largest pods first.
    pub moves: Vec<Move>,
    /// GPUs of all moved pods.
    pub displaced_gpus: u64,
    /// The highest priority among the moved pods.
    pub highest_priority: i32,
}

/// Why there is no gang plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GangNoPlan {
    /// A domain (named; `None` with no level) offers the pods now: no plan is needed.
    FitsNow(Option<String>),
    /// No domain holds that many pods even with every GPU free: the most one holds.
    TooSmall {
        /// The most pods of K one domain holds.
        largest_pods: u64,
    },
    /// The rules stopped every set of moves: which, and how often.
    Stopped(Box<GangStops>),
}

/// (GPUs displaced, highest priority moved, pods moved): smaller is cheaper.
pub(super) type Key = (u64, i32, usize);

/// The fleet as the gang sees it: per node what it has free for the gang, and the domains of its nodes.
pub(super) struct Fleet<'a> {
    pub(super) nodes: &'a [Arc<NodeInventory>],
    pub(super) k: u64,
    pub(super) pods: u64,
    /// Free whole GPUs of the nodes the gang may run on (0 elsewhere).
    pub(super) job_free: Vec<u64>,
    /// The domains, by name, each with its nodes the gang may run on.
    pub(super) domains: Vec<(Option<&'a str>, Vec<usize>)>,
}

impl<'a> Fleet<'a> {
    fn new(nodes: &'a [Arc<NodeInventory>], job: &GangJob<'_>) -> Fleet<'a> {
        let host: Vec<bool> = nodes
            .iter()
            .map(|n| n.ready && !n.unschedulable && untolerated_taint(n, job.tolerations).is_none())
            .collect();
        let job_free = nodes.iter().map(|n| offer(n, 1, job.tolerations)).collect();
        let mut by_name: BTreeMap<Option<&'a str>, Vec<usize>> = BTreeMap::new();
        for (i, node) in nodes.iter().enumerate().filter(|(i, _)| host[*i]) {
            let name = match job.level {
                Some(level) => match domain_of(node, level) {
                    Some(name) => Some(name),
                    None => continue,
                },
                None => None,
            };
            by_name.entry(name).or_default().push(i);
        }
        Fleet {
            nodes,
            k: job.gpus_per_pod.max(1),
            pods: job.pods,
            job_free,
            domains: by_name.into_iter().collect(),
        }
    }

    /// The domains that could hold the gang once pods move, or why no plan is needed or none can help.
    fn candidates(&self) -> Result<Vec<usize>, GangNoPlan> {
        let mut largest = 0;
        let mut candidates = Vec::new();
        for (d, (name, at)) in self.domains.iter().enumerate() {
            let now: u64 = at.iter().map(|i| self.job_free[*i] / self.k).sum();
            if now >= self.pods {
                return Err(GangNoPlan::FitsNow(name.map(str::to_owned)));
            }
            let size: u64 = at.iter().map(|i| self.nodes[*i].count / self.k).sum();
            largest = largest.max(size);
            if size >= self.pods {
                candidates.push(d);
            }
        }
        match candidates.is_empty() {
            true => Err(GangNoPlan::TooSmall {
                largest_pods: largest,
            }),
            false => Ok(candidates),
        }
    }
}

/// Whether moving pods could help the gang among `nodes` (else why not), before any pod's traits are read.
pub fn gang_needed(nodes: &[Arc<NodeInventory>], job: &GangJob<'_>) -> Result<(), GangNoPlan> {
    Fleet::new(nodes, job).candidates().map(|_| ())
}

/// The cheapest plan for the gang among `nodes` (one product's), or why there is none.
/// `traits(namespace, pod)` gives a pod's traits.
pub fn gang_plan(
    nodes: &[Arc<NodeInventory>],
    job: &GangJob<'_>,
    traits: impl Fn(&str, &str) -> PodTraits,
) -> Result<GangPlan, GangNoPlan> {
    let fleet = Fleet::new(nodes, job);
    let candidates = fleet.candidates()?;
    let index = index(nodes, &traits);
    let mut pieces = Pieces::new(nodes.iter().map(|n| offer(n, 1, &[])).collect());
    let mut stops = GangStops::new(job.pods, fleet.k, job.level);
    let mut best: Option<(Key, GangPlan)> = None;
    for d in candidates {
        let search = DomainSearch {
            fleet: &fleet,
            index: &index,
            domain: d,
        };
        if let Some(found) = search.run(&mut pieces, &mut stops)
            && best.as_ref().is_none_or(|(key, _)| found.0 < *key)
        {
            best = Some(found);
        }
    }
    best.map(|(_, plan)| plan)
        .ok_or_else(|| GangNoPlan::Stopped(Box::new(stops)))
}

/// One per-node option: room for `slots` more pods by moving `units`.
pub(super) struct Opt {
    pub(super) slots: u64,
    pub(super) key: Key,
    pub(super) units: Vec<usize>,
}

/// The search of one domain (`gang_search.rs`).
pub(super) struct DomainSearch<'s, 'a, 'n> {
    pub(super) fleet: &'s Fleet<'a>,
    pub(super) index: &'s Index<'n>,
    pub(super) domain: usize,
}
