//! The gang plan's search of one domain (`gang_plan.rs` says the steps and their bounds): per-node options,
//! the knapsack that takes the missing pods from them, and the joint check of budgets and placement.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::gang_index::Pieces;
use super::gang_plan::{DomainSearch, EXHAUSTIVE_UNITS, GangPlan, GangStops, Key, Opt, ROUNDS};

/// The key of moving nothing.
const NOTHING: Key = (0, i32::MIN, 0);

fn add(a: Key, b: Key) -> Key {
    (a.0 + b.0, a.1.max(b.1), a.2 + b.2)
}

impl DomainSearch<'_, '_, '_> {
    fn nodes(&self) -> &[usize] {
        &self.fleet.domains[self.domain].1
    }

    /// The cheapest plan in this domain, or `None` (what stopped it goes into `stops`).
    pub(super) fn run(
        &self,
        pieces: &mut Pieces,
        stops: &mut GangStops,
    ) -> Option<(Key, GangPlan)> {
        let k = self.fleet.k;
        let now: u64 = self
            .nodes()
            .iter()
            .map(|i| self.fleet.job_free[*i] / k)
            .sum();
        let missing = self.fleet.pods - now;
        self.note(stops);
        let mut banned: HashSet<usize> = HashSet::new();
        for _ in 0..ROUNDS {
            let options: Vec<Vec<Opt>> = self
                .nodes()
                .iter()
                .map(|i| self.options(*i, &banned))
                .collect();
            let chosen = cheapest(&options, missing)?;
            match self.check(&chosen, pieces, stops) {
                Ok(found) => return Some(found),
                Err(ban) if ban.is_empty() => return None,
                Err(ban) => banned.extend(ban),
            }
        }
        None
    }

    /// Counts the pods that must not move on the domain's nodes, and how many pods the domain offers once
    /// every pod that may move has moved.
    fn note(&self, stops: &mut GangStops) {
        let k = self.fleet.k;
        let mut reach = 0;
        for &i in self.nodes() {
            let mut free = self.fleet.job_free[i];
            for &(u, gpus) in &self.index.on_node[i] {
                match self.index.units[u].immovable {
                    Some(_) => stops.pinned(&self.index.units[u], i),
                    None => free += gpus,
                }
            }
            reach += free.min(self.fleet.nodes[i].count) / k;
        }
        stops.reached(reach);
    }

    /// Node `i`'s options: for each number of extra pods it could take, the cheapest set of its movable
    /// units (not `banned`) freeing room for them.
    fn options(&self, i: usize, banned: &HashSet<usize>) -> Vec<Opt> {
        let (k, free) = (self.fleet.k, self.fleet.job_free[i]);
        let (now, most) = (free / k, self.fleet.nodes[i].count / k);
        if most <= now {
            return Vec::new();
        }
        let units = &self.index.units;
        let mut movable: Vec<(usize, u64)> = self.index.on_node[i]
            .iter()
            .filter(|(u, _)| units[*u].immovable.is_none() && !banned.contains(u))
            .copied()
            .collect();
        movable.sort_by_key(|(u, gpus)| (units[*u].priority, *gpus, *u));
        let sets: Vec<Vec<(usize, u64)>> = match movable.len() <= EXHAUSTIVE_UNITS {
            true => (1u32..(1 << movable.len()))
                .map(|mask| {
                    let at = (0..movable.len()).filter(|b| mask & (1 << b) != 0);
                    at.map(|b| movable[b]).collect()
                })
                .collect(),
            false => (1..=movable.len()).map(|n| movable[..n].to_vec()).collect(),
        };
        let costed: Vec<(u64, Key, Vec<usize>)> = sets
            .into_iter()
            .map(|set| {
                let freed = set.iter().map(|(_, g)| g).sum();
                let key = set.iter().fold(NOTHING, |key, (u, _)| {
                    add(
                        key,
                        (
                            self.index.total[*u],
                            units[*u].priority,
                            units[*u].pods.len(),
                        ),
                    )
                });
                (freed, key, set.into_iter().map(|(u, _)| u).collect())
            })
            .collect();
        let mut out = Vec::new();
        for slots in 1..=most - now {
            let need = (now + slots) * k - free;
            let best = costed
                .iter()
                .filter(|(f, _, _)| *f >= need)
                .min_by_key(|c| c.1);
            let Some((_, key, units)) = best else { break };
            out.push(Opt {
                slots,
                key: *key,
                units: units.clone(),
            });
        }
        out
    }
}

/// The cheapest choice of at most one option per node whose slots add up to `missing`: the units to move.
/// A knapsack over the nodes, states capped at `missing`.
fn cheapest(options: &[Vec<Opt>], missing: u64) -> Option<BTreeSet<usize>> {
    let m = usize::try_from(missing).ok()?;
    let mut best: Vec<Option<Key>> = vec![None; m + 1];
    best[0] = Some(NOTHING);
    // Per node with options, per state: (the option taken + 1, the state before), 0 for none.
    let mut back: Vec<(usize, Vec<(u16, u32)>)> = Vec::new();
    for (node, opts) in options.iter().enumerate().filter(|(_, o)| !o.is_empty()) {
        let mut next = best.clone();
        let mut taken = vec![(0u16, 0u32); m + 1];
        for (s, key) in best.iter().enumerate() {
            let Some(key) = key else { continue };
            for (o, opt) in opts.iter().enumerate() {
                let t = (s + usize::try_from(opt.slots).unwrap_or(m)).min(m);
                let sum = add(*key, opt.key);
                if next[t].is_none_or(|n| sum < n) {
                    next[t] = Some(sum);
                    taken[t] = (o as u16 + 1, s as u32);
                }
            }
        }
        back.push((node, taken));
        best = next;
    }
    best[m]?;
    let mut units = BTreeSet::new();
    let mut s = m;
    for (node, taken) in back.iter().rev() {
        let (o, from) = taken[s];
        if o > 0 {
            units.extend(&options[*node][o as usize - 1].units);
            s = from as usize;
        }
    }
    Some(units)
}

/// A moved pod and its unit.
type Moving<'u, 'n> = (&'u super::plan_types::Held<'n>, usize);

impl DomainSearch<'_, '_, '_> {
    /// The plan moving `chosen`, once its budgets hold and its pods find room; else the units to leave out
    /// next round (none: give the domain up).
    fn check(
        &self,
        chosen: &BTreeSet<usize>,
        pieces: &mut Pieces,
        stops: &mut GangStops,
    ) -> Result<(Key, GangPlan), Vec<usize>> {
        let units = &self.index.units;
        if let Some(ban) = self.over_budget(chosen, stops) {
            return Err(ban);
        }
        let mut freed: HashMap<usize, u64> = HashMap::new();
        for pod in chosen.iter().flat_map(|u| &units[*u].pods) {
            *freed.entry(pod.node).or_default() += pod.gpus;
        }
        let k = self.fleet.k;
        let mut left = self.fleet.pods;
        let (mut changed, mut hosts) = (Vec::new(), Vec::new());
        for &i in self.nodes() {
            let back = freed.remove(&i).unwrap_or(0);
            let slots = ((self.fleet.job_free[i] + back) / k).min(left);
            left -= slots;
            if slots > 0 {
                hosts.push(i);
            }
            if slots > 0 || back > 0 {
                changed.push((i, (pieces.free(i) + back).saturating_sub(slots * k)));
            }
        }
        if left > 0 {
            return Err(Vec::new()); // the options promised more room than the moves free
        }
        changed.extend(
            freed
                .into_iter()
                .map(|(i, back)| (i, pieces.free(i) + back)),
        );
        let pods: Vec<Moving<'_, '_>> = chosen
            .iter()
            .flat_map(|u| units[*u].pods.iter().map(move |p| (p, *u)))
            .collect();
        let asked: Vec<(u64, usize)> = pods.iter().map(|(p, _)| (p.gpus, p.node)).collect();
        match pieces.place(&changed, &asked) {
            Err(at) => {
                let unit = pods[at].1;
                stops.no_room(units[unit].gang.as_deref());
                Err(vec![unit])
            }
            Ok(places) => Ok(self.plan(chosen, &pods, &places, &hosts)),
        }
    }

    /// The units to leave out when `chosen` moves more pods of a budget than it allows: past what it
    /// allows, the costliest.
    fn over_budget(&self, chosen: &BTreeSet<usize>, stops: &mut GangStops) -> Option<Vec<usize>> {
        let units = &self.index.units;
        let mut by_budget: BTreeMap<&str, (u32, Vec<usize>)> = BTreeMap::new();
        for &u in chosen {
            for (budget, allowed) in &units[u].budgets {
                by_budget
                    .entry(budget)
                    .or_insert((*allowed, Vec::new()))
                    .1
                    .push(u);
            }
        }
        let mut ban = Vec::new();
        for (budget, (allowed, mut covered)) in by_budget {
            if covered.len() <= allowed as usize {
                continue;
            }
            stops.over_budget(budget, allowed);
            covered.sort_by_key(|u| (self.index.total[*u], units[*u].priority, *u));
            ban.extend(covered.into_iter().skip(allowed as usize));
        }
        (!ban.is_empty()).then_some(ban)
    }

    /// The plan: its key, and the moves in `places`' order, the largest pods first.
    fn plan(
        &self,
        chosen: &BTreeSet<usize>,
        pods: &[Moving<'_, '_>],
        places: &[(usize, usize)],
        hosts: &[usize],
    ) -> (Key, GangPlan) {
        let (units, nodes) = (&self.index.units, self.fleet.nodes);
        let key = chosen.iter().fold(NOTHING, |key, u| {
            add(
                key,
                (
                    self.index.total[*u],
                    units[*u].priority,
                    units[*u].pods.len(),
                ),
            )
        });
        let mut places = places.to_vec();
        places.sort_by_key(|(at, _)| (std::cmp::Reverse(pods[*at].0.gpus), *at));
        let moves = places
            .iter()
            .map(|(at, to)| {
                let (pod, unit) = pods[*at];
                pod.moved_to(nodes, *to, units[unit].gang.clone())
            })
            .collect();
        let plan = GangPlan {
            domain: self.fleet.domains[self.domain].0.map(str::to_owned),
            nodes: hosts.iter().map(|i| nodes[*i].name.clone()).collect(),
            moves,
            displaced_gpus: key.0,
            highest_priority: key.1,
        };
        (key, plan)
    }
}
