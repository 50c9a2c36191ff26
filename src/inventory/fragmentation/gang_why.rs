//! Why the gang plan (`gang_plan.rs`) found no plan: what its search met in the domains that could hold the
//! gang, said as the rules that stopped it (pods that must not move, by rule; how far the movable pods
//! reach; budgets that turned moves down; pods that found no room elsewhere).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::plan_types::{Immovable, Unit};

/// What stopped every set of moves in every domain that could hold the gang.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GangStops {
    /// The gang: pods, GPUs per pod, and the level its domain is of (`None`: any nodes).
    pods: u64,
    gpus_per_pod: u64,
    level: Option<String>,
    /// Pods on the candidate domains' nodes that must not move, by the rule's words.
    pinned: BTreeMap<String, usize>,
    /// The most pods one candidate domain offers once every pod that may move from it has moved.
    reach: u64,
    /// Budgets that turned a set of moves down, with how many of their pods may move.
    budgets: BTreeMap<String, u32>,
    /// Some set of moves found no room elsewhere for its pods; the gangs among them.
    no_room: bool,
    whole_gangs: BTreeSet<String>,
}

impl GangStops {
    pub(super) fn new(pods: u64, gpus_per_pod: u64, level: Option<&str>) -> GangStops {
        GangStops {
            pods,
            gpus_per_pod,
            level: level.map(str::to_owned),
            ..Default::default()
        }
    }

    /// Counts the pods on `node` of `unit`, which must not move.
    pub(super) fn pinned(&mut self, unit: &Unit<'_>, node: usize) {
        for pod in unit.pods.iter().filter(|p| p.node == node) {
            let words = match (&pod.immovable, &unit.gang) {
                (Some(Immovable::DaemonSet(_)), _) => "DaemonSet pods".to_owned(),
                (Some(Immovable::Static), _) => "static pods".to_owned(),
                (Some(Immovable::NoDisruption(budget)), _) => {
                    format!("under PodDisruptionBudget {budget}, which allows no disruption")
                }
                (Some(Immovable::OutsideNamespace(ns)), _) => {
                    format!("outside namespace {ns} (-n)")
                }
                (Some(Immovable::GangBeyond(gang)), _) => {
                    format!("of gang {gang}, which has GPU pods on nodes this plan does not weigh")
                }
                (None, Some(gang)) => format!("of gang {gang}, which has a pod that cannot move"),
                (None, None) => continue,
            };
            *self.pinned.entry(words).or_default() += 1;
        }
    }

    /// A candidate domain would offer `pods` pods once every pod that may move from it has moved.
    pub(super) fn reached(&mut self, pods: u64) {
        self.reach = self.reach.max(pods);
    }

    /// A set of moves needed more of `budget`'s pods than the `allowed` it lets move.
    pub(super) fn over_budget(&mut self, budget: &str, allowed: u32) {
        self.budgets.insert(budget.to_owned(), allowed);
    }

    /// A set of moves found no room elsewhere for a pod of `gang`'s (or of no gang).
    pub(super) fn no_room(&mut self, gang: Option<&str>) {
        self.no_room = true;
        self.whole_gangs.extend(gang.map(str::to_owned));
    }
}

impl fmt::Display for GangStops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.pinned.is_empty() {
            let total: usize = self.pinned.values().sum();
            let rules: Vec<String> = self
                .pinned
                .iter()
                .map(|(words, n)| format!("{n} {words}"))
                .collect();
            parts.push(format!(
                "{total} pod(s) on the candidate domains' nodes cannot move: {}",
                rules.join(", ")
            ));
        }
        if self.reach < self.pods {
            parts.push(format!(
                "moving every pod that may move makes room for at most {} pods of {} GPUs in one domain",
                self.reach, self.gpus_per_pod
            ));
        }
        for (budget, allowed) in &self.budgets {
            parts.push(format!(
                "PodDisruptionBudget {budget} lets only {allowed} of its pods move at once"
            ));
        }
        if self.no_room {
            let gangs: Vec<&str> = self.whole_gangs.iter().map(String::as_str).collect();
            let gangs = match gangs.is_empty() {
                true => String::new(),
                false => format!(" (a gang moves whole: {})", gangs.join(", ")),
            };
            parts.push(format!(
                "the pods that would make room find none elsewhere{gangs}"
            ));
        }
        let scope = match &self.level {
            Some(level) => format!("in one {level} domain"),
            None => "on the product's nodes".to_owned(),
        };
        write!(
            f,
            "no set of running pods, moved to where they fit, frees room for {} pods of {} GPUs {scope}",
            self.pods, self.gpus_per_pod
        )?;
        if !parts.is_empty() {
            write!(f, ": {}", parts.join("; "))?;
        }
        Ok(())
    }
}
