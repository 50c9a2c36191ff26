//! Why `fit --plan` found no plan: what the search met on the nodes the request could start on, said as
//! the rules that stopped it (pods that must not move, by rule; how far the movable pods reach; budgets
//! that turned sets down; pods that found no room elsewhere), not as one generic line.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::plan_types::{Immovable, Unit};

/// What stopped every set of moves, gathered while the plan searched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stops {
    /// The GPUs asked for.
    gpus: u64,
    /// Pods on the candidate nodes that must not move, by rule.
    pinned: BTreeMap<Pin, usize>,
    /// The most GPUs one candidate node has free once every pod that may move from it has moved.
    reach: u64,
    /// Budgets that turned down a set of moves freeing enough, with how many of their pods may move.
    budgets: BTreeMap<String, u32>,
    /// Some set freeing enough within the budgets found no room elsewhere for its pods.
    no_room: bool,
    /// The gangs in such sets: they must find room whole.
    whole_gangs: BTreeSet<String>,
}

/// A rule that keeps a pod in place, as the why counts pods under it (a DaemonSet's name is left out: the
/// count is of DaemonSet pods).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Pin {
    DaemonSet,
    Static,
    NoDisruption(String),
    OutsideNamespace(String),
    GangBeyond(String),
    /// The pod may move, but its gang has one that may not.
    Gang(String),
}

impl Stops {
    pub(super) fn new(gpus: u64) -> Stops {
        Stops {
            gpus,
            ..Default::default()
        }
    }

    /// Counts the pods on `target` of the `pinned` units (each unit has a pod that must not move).
    pub(super) fn pinned_on_target(&mut self, units: &[Unit<'_>], pinned: &[usize], target: usize) {
        for unit in pinned.iter().map(|u| &units[*u]) {
            for pod in unit.pods.iter().filter(|p| p.node == target) {
                let pin = match (&pod.immovable, &unit.gang) {
                    (Some(Immovable::DaemonSet(_)), _) => Pin::DaemonSet,
                    (Some(Immovable::Static), _) => Pin::Static,
                    (Some(Immovable::NoDisruption(budget)), _) => Pin::NoDisruption(budget.clone()),
                    (Some(Immovable::OutsideNamespace(ns)), _) => Pin::OutsideNamespace(ns.clone()),
                    (Some(Immovable::GangBeyond(gang)), _) => Pin::GangBeyond(gang.clone()),
                    (None, Some(gang)) => Pin::Gang(gang.clone()),
                    (None, None) => continue, // a unit of one pod is pinned by that pod
                };
                *self.pinned.entry(pin).or_default() += 1;
            }
        }
    }

    /// A candidate node would have `free` GPUs free once every pod that may move from it has moved.
    pub(super) fn reached(&mut self, free: u64) {
        self.reach = self.reach.max(free);
    }

    /// A set freeing enough moves more pods than these budgets allow (each with what it allows).
    pub(super) fn over_budget(&mut self, over: Vec<(&str, u32)>) {
        for (budget, allowed) in over {
            self.budgets.insert(budget.to_owned(), allowed);
        }
    }

    /// A set freeing enough within the budgets found no room elsewhere; `gangs` are its gangs.
    pub(super) fn no_room<'g>(&mut self, gangs: impl Iterator<Item = &'g str>) {
        self.no_room = true;
        self.whole_gangs.extend(gangs.map(str::to_owned));
    }

    /// The pods on the candidate nodes that must not move.
    pub fn pinned_pods(&self) -> usize {
        self.pinned.values().sum()
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl fmt::Display for Stops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.pinned.is_empty() {
            let rules: Vec<String> = self
                .pinned
                .iter()
                .map(|(pin, n)| match pin {
                    Pin::DaemonSet => plural(*n, "DaemonSet pod", "DaemonSet pods"),
                    Pin::Static => plural(*n, "static pod", "static pods"),
                    Pin::NoDisruption(budget) => format!(
                        "{n} under PodDisruptionBudget {budget}, which allows no disruption"
                    ),
                    Pin::OutsideNamespace(ns) => format!("{n} outside namespace {ns} (-n)"),
                    Pin::GangBeyond(gang) => format!(
                        "{n} of gang {gang}, which has GPU pods on nodes this plan does not weigh"
                    ),
                    Pin::Gang(gang) => {
                        format!("{n} of gang {gang}, which has a pod that cannot move")
                    }
                })
                .collect();
            parts.push(format!(
                "{} on the candidate nodes cannot move: {}",
                plural(self.pinned_pods(), "pod", "pods"),
                rules.join(", ")
            ));
        }
        if self.reach < self.gpus {
            parts.push(format!(
                "moving every pod that may move frees at most {} GPUs on one node",
                self.reach
            ));
        }
        for (budget, allowed) in &self.budgets {
            parts.push(format!(
                "PodDisruptionBudget {budget} lets only {} move at once",
                plural(*allowed as usize, "of its pods", "of its pods")
            ));
        }
        if self.no_room {
            let gangs = match self.whole_gangs.is_empty() {
                true => String::new(),
                false => {
                    let gangs: Vec<&str> = self.whole_gangs.iter().map(String::as_str).collect();
                    format!(" (a gang moves whole: {})", gangs.join(", "))
                }
            };
            parts.push(format!(
                "the pods that would make room find none elsewhere{gangs}"
            ));
        }
        write!(
            f,
            "no set of running pods, moved to where they fit, frees {} GPUs on one node",
            self.gpus
        )?;
        if !parts.is_empty() {
            write!(f, ": {}", parts.join("; "))?;
        }
        Ok(())
    }
}
