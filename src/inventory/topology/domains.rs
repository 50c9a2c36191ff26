//! A level's domains: the product's nodes grouped by their place at a level, with what each domain offers to
//! pods of K (the gang rule), and the order in which levels are tried.

use std::collections::{BTreeMap, HashMap};

use super::gang;
use super::label_table::HOSTNAME;
use crate::inventory::model::{NVLINK, NodeInventory};

/// One domain of a level, as the summary and `fit` count it.
#[derive(Debug, Default)]
pub struct Domain<'n> {
    /// Its nodes of the product.
    pub nodes: Vec<&'n NodeInventory>,
    /// What they offer to pods of the level's size.
    pub offered: u64,
    /// What they would offer were every GPU free: the domain's size for a job.
    pub size: u64,
}

/// The product's nodes grouped by their domain at `level` (`nvlink`, a label key, or the hostname label),
/// with what each domain offers to pods of `k` tolerating `tolerations`. Nodes without a place at the level are in no domain.
pub fn domains_at<'n>(
    nodes: &[&'n NodeInventory],
    level: &str,
    k: u64,
    tolerations: &[gang::Toleration],
) -> BTreeMap<&'n str, Domain<'n>> {
    let mut domains: BTreeMap<&'n str, Domain<'n>> = BTreeMap::new();
    for node in nodes {
        let Some(name) = domain_of(node, level) else {
            continue;
        };
        let domain = domains.entry(name).or_default();
        domain.nodes.push(node);
        domain.offered = domain
            .offered
            .saturating_add(gang::offer(node, k, tolerations));
        let whole_pods = node.count.checked_div(k).unwrap_or(0);
        domain.size = domain.size.saturating_add(whole_pods.saturating_mul(k));
    }
    domains
}

/// The node's domain at `level`: its name at the hostname level, else its place.
pub fn domain_of<'n>(node: &'n NodeInventory, level: &str) -> Option<&'n str> {
    if level == HOSTNAME {
        return Some(&node.name);
    }
    node.topology.domain(level)
}

/// The levels at which some of `nodes` have a place, in the order `fit` tries them: `nvlink`, then the
/// network levels from the narrowest (most domains) to the widest, the table's order on a tie.
pub fn levels_of<'n>(nodes: &[&'n NodeInventory]) -> Vec<&'n str> {
    let mut seen: Vec<(&'n str, std::collections::BTreeSet<&'n str>)> = Vec::new();
    for node in nodes {
        for (level, domain) in node.topology.places() {
            match seen.iter_mut().find(|(l, _)| *l == level) {
                Some((_, domains)) => {
                    domains.insert(domain);
                }
                None => seen.push((level, [domain].into())),
            }
        }
    }
    let order = |level: &str| -> (bool, std::cmp::Reverse<usize>) {
        let domains = seen
            .iter()
            .find(|(l, _)| *l == level)
            .map_or(0, |(_, d)| d.len());
        (level != NVLINK, std::cmp::Reverse(domains))
    };
    let mut levels: Vec<&'n str> = seen.iter().map(|(level, _)| *level).collect();
    // A stable sort: levels with as many domains keep the order nodes list them (the table's).
    levels.sort_by_key(|level| order(level));
    levels
}

/// One level's domains as the summary counts them, made in one pass over the nodes for every level at once.
#[derive(Debug)]
pub struct LevelTally<'n> {
    /// `nvlink` or the label key.
    pub level: &'n str,
    /// The domains, in no order.
    pub domains: Vec<DomainTally<'n>>,
}

/// One domain's counts; the members are kept only at the `nvlink` level (its problems name them).
#[derive(Debug)]
pub struct DomainTally<'n> {
    /// The domain.
    pub name: &'n str,
    /// Its nodes of the product.
    pub nodes: u32,
    /// What they offer to pods of K.
    pub offered: u64,
    /// What they would offer were every GPU free.
    pub size: u64,
    /// The members (at `nvlink` only).
    pub members: Vec<&'n NodeInventory>,
}

/// Every level's domains among `nodes` for pods of `k` (tolerating no taint but their own GPU resource's),
/// levels in `fit`'s order (see [`levels_of`]). Domains
/// are told apart by their interned value's address, levels by their name: no string is compared or hashed
/// per node (at 13,000 GPU nodes with four levels each, a map keyed by the text cost more than the scan).
pub fn tally<'n>(nodes: &[&'n NodeInventory], k: u64) -> Vec<LevelTally<'n>> {
    let mut levels: Vec<(LevelTally<'n>, HashMap<usize, usize>)> = Vec::new();
    for node in nodes {
        let offered = gang::offer(node, k, &[]);
        let size = node.count.checked_div(k).unwrap_or(0).saturating_mul(k);
        for (level, domain) in node.topology.interned_places() {
            let at = match levels
                .iter()
                .position(|(l, _)| std::ptr::eq(l.level, level) || l.level == level)
            {
                Some(at) => at,
                None => {
                    let tally = LevelTally {
                        level,
                        domains: Vec::new(),
                    };
                    levels.push((tally, HashMap::new()));
                    levels.len() - 1
                }
            };
            let (tally, index) = &mut levels[at];
            let key = domain.as_ptr() as usize;
            let slot = *index.entry(key).or_insert_with(|| {
                tally.domains.push(DomainTally {
                    name: domain,
                    nodes: 0,
                    offered: 0,
                    size: 0,
                    members: Vec::new(),
                });
                tally.domains.len() - 1
            });
            let entry = &mut tally.domains[slot];
            entry.nodes += 1;
            entry.offered = entry.offered.saturating_add(offered);
            entry.size = entry.size.saturating_add(size);
            if level == NVLINK {
                entry.members.push(node);
            }
        }
    }
    let mut levels: Vec<LevelTally<'n>> = levels.into_iter().map(|(tally, _)| tally).collect();
    // Stable: levels with as many domains keep the order nodes list them (the table's).
    levels.sort_by_key(|l| (l.level != NVLINK, std::cmp::Reverse(l.domains.len())));
    levels
}
