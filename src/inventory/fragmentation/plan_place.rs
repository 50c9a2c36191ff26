//! Where `fit --plan`'s moved pods go (best fit, largest first) and which sets of units the search tries
//! (every combination of a few, the cheapest prefixes of many): the plan's two bounded loops.

use std::collections::{BTreeSet, HashMap};

use super::plan_types::Held;

/// At most this many units on one node are tried in every combination; past it, the cheapest first.
const EXHAUSTIVE_UNITS: usize = 12;

/// Every combination of `movable` (few units), or its cheapest prefixes (many).
pub(super) fn subsets(movable: &[usize]) -> Box<dyn Iterator<Item = Vec<usize>> + '_> {
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

/// Where each of `pods` goes (index in `pods`, node), largest first, best fit, never `target`; `None` when
/// one does not fit. The pods' own GPUs on other nodes are free for them.
pub(super) fn place(
    free: &[u64],
    pods: &[&Held<'_>],
    target: usize,
) -> Option<Vec<(usize, usize)>> {
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
