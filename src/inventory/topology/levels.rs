//! Which labels are topology levels for a scan, and a node's place at each: the built-in table, plus the
//! levels of the cluster's Kueue `Topology` objects and `--topology-label` keys (the *extra* levels).
//!
//! A scan scope refers to its levels as a `&'static` (scopes are `Copy`, and an entry made under one set of
//! levels must not be reused under another: the scope's key holds their address). Level sets are interned by
//! content for the process's life: a cluster has a handful of distinct Kueue Topologies and flags, so a few
//! small sets at most ever live, and an unchanged set keeps its address (no rescan).

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use super::label_table::{self, HOSTNAME, LabelRole, TOPOLOGY_LABELS};
use crate::inventory::model::NodeTopology;
use crate::inventory::text_map::{Text, TextMap};

/// The topology levels a scan reads: the built-in table and the extra keys, in the order given.
#[derive(Debug)]
pub struct TopologyLevels {
    /// No level at all is read (see [`TopologyLevels::none`]).
    off: bool,
    extra: Vec<&'static str>,
    /// Every level label, sorted by key, with what it is: a node's labels (sorted too) are read in one merge
    /// pass, not one lookup per known label.
    index: Vec<(&'static str, Slot)>,
}

/// What a level label is to a node's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// An NVLink label, by preference (0 first).
    Nvlink(usize),
    /// A network level, by its place in the order levels are listed.
    Network(usize),
}

/// Every level set made so far (see the module's docs): a handful at most.
fn interned() -> &'static Mutex<Vec<&'static TopologyLevels>> {
    static SETS: OnceLock<Mutex<Vec<&'static TopologyLevels>>> = OnceLock::new();
    SETS.get_or_init(Default::default)
}

impl PartialEq for TopologyLevels {
    fn eq(&self, other: &Self) -> bool {
        (self.off, &self.extra) == (other.off, &other.extra)
    }
}

impl Eq for TopologyLevels {}

/// The built-in table, so that scopes that name no levels read with it.
impl Default for &'static TopologyLevels {
    fn default() -> Self {
        TopologyLevels::built_in()
    }
}

impl PartialOrd for TopologyLevels {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TopologyLevels {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.off, &self.extra).cmp(&(other.off, &other.extra))
    }
}

impl TopologyLevels {
    /// The built-in table alone.
    pub fn built_in() -> &'static TopologyLevels {
        static BUILT_IN: OnceLock<TopologyLevels> = OnceLock::new();
        BUILT_IN.get_or_init(|| TopologyLevels::of(Vec::new()))
    }

    /// No level: every node's place is empty and no summary is made. What a scan costs without reading
    /// topology, on the same nodes (`make scan-cost` measures the difference); not a setting of the operator.
    pub fn none() -> &'static TopologyLevels {
        static NONE: OnceLock<TopologyLevels> = OnceLock::new();
        NONE.get_or_init(|| TopologyLevels {
            off: true,
            extra: Vec::new(),
            index: Vec::new(),
        })
    }

    /// The levels of the table and `extra`, indexed.
    fn of(extra: Vec<&'static str>) -> TopologyLevels {
        let mut levels = TopologyLevels {
            off: false,
            extra,
            index: Vec::new(),
        };
        let nvlink = TOPOLOGY_LABELS
            .iter()
            .filter(|l| l.role == LabelRole::Nvlink)
            .enumerate()
            .map(|(at, l)| (l.key, Slot::Nvlink(at)));
        let network: Vec<&'static str> = levels.network_keys().collect();
        let network = network
            .into_iter()
            .enumerate()
            .map(|(at, key)| (key, Slot::Network(at)));
        levels.index = nvlink.chain(network).collect();
        levels.index.sort_by(|a, b| a.0.cmp(b.0));
        levels
    }

    /// The built-in table and these extra label keys (Kueue's levels widest first, then the flag's), in
    /// that order. Keys the table knows, the hostname label, empty keys and repeats add nothing.
    pub fn with_extra<'k>(keys: impl IntoIterator<Item = &'k str>) -> &'static TopologyLevels {
        let mut extra: Vec<&str> = Vec::new();
        for key in keys {
            let key = key.trim();
            if key.is_empty() || key == HOSTNAME || label_table::known(key).is_some() {
                continue;
            }
            if !extra.contains(&key) {
                extra.push(key);
            }
        }
        if extra.is_empty() {
            return TopologyLevels::built_in();
        }
        let mut sets = interned().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(found) = sets.iter().find(|set| set.extra == extra) {
            return found;
        }
        let owned: Vec<&'static str> = extra
            .into_iter()
            .map(|key| &*Box::leak(key.to_owned().into_boxed_str()))
            .collect();
        let set: &'static TopologyLevels = Box::leak(Box::new(TopologyLevels::of(owned)));
        sets.push(set);
        set
    }

    /// The extra levels, in order.
    pub fn extra(&self) -> &[&'static str] {
        &self.extra
    }

    /// Every network level key, table levels first.
    pub fn network_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        TOPOLOGY_LABELS
            .iter()
            .filter(|l| l.role == LabelRole::Network)
            .map(|l| l.key)
            .chain(self.extra.iter().copied())
    }

    /// The node's place, from its labels: one merge of the node's sorted labels with the sorted index. An
    /// empty value is no place.
    pub fn read(&self, labels: &TextMap) -> NodeTopology {
        let mut nvlink: Option<(usize, &'static str, &Text)> = None;
        let mut network: Vec<(usize, &'static str, &Text)> = Vec::new();
        let (entries, index) = (labels.entries(), &self.index);
        let (mut l, mut i) = (0, 0);
        while l < entries.len() && i < index.len() {
            let (key, value) = &entries[l];
            match (**key).cmp(index[i].0) {
                std::cmp::Ordering::Less => l += 1,
                std::cmp::Ordering::Greater => i += 1,
                std::cmp::Ordering::Equal => {
                    if !value.trim().is_empty() {
                        match index[i].1 {
                            Slot::Nvlink(rank) if nvlink.is_none_or(|(best, _, _)| rank < best) => {
                                nvlink = Some((rank, index[i].0, value));
                            }
                            Slot::Nvlink(_) => {}
                            Slot::Network(order) => network.push((order, index[i].0, value)),
                        }
                    }
                    l += 1;
                    i += 1;
                }
            }
        }
        network.sort_unstable_by_key(|(order, _, _)| *order);
        NodeTopology {
            nvlink: nvlink.map(|(_, key, value)| (key, value.clone())),
            network: network
                .into_iter()
                .map(|(_, key, value)| (key, value.clone()))
                .collect(),
        }
    }
}

/// How many level names read from elsewhere (a published status) are kept for the process's life; past it,
/// a level read back is left out (a status with that many levels was not written by this operator).
const READ_BACK_LEVELS: usize = 256;

/// A level's name as a `&'static str`, for a level read from a published status: `nvlink`, a table key, or
/// an interned copy (see `READ_BACK_LEVELS`); `None` past the cap.
pub fn static_level(level: &str) -> Option<&'static str> {
    if level == crate::inventory::model::NVLINK {
        return Some(crate::inventory::model::NVLINK);
    }
    if let Some(known) = label_table::known(level) {
        return Some(known.key);
    }
    static NAMES: OnceLock<Mutex<BTreeSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(found) = names.get(level) {
        return Some(found);
    }
    if names.len() >= READ_BACK_LEVELS {
        return None;
    }
    let name: &'static str = Box::leak(level.to_owned().into_boxed_str());
    names.insert(name);
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{GPU_CLIQUE, NVLINK, physical_domain};

    fn labels(pairs: &[(&str, &str)]) -> TextMap {
        pairs.iter().copied().collect()
    }

    #[test]
    fn a_clique_is_the_nvlink_level_and_network_labels_their_own_levels() {
        let node = labels(&[
            (
                "nvidia.com/gpu.clique",
                "1a2b3c4d-0000-4000-8000-000000000001.32766",
            ),
            (
                "network.topology.nvidia.com/accelerator",
                "ignored-when-a-clique-is-there",
            ),
            ("cloud.google.com/gce-topology-block", "blk-0"),
            ("cloud.google.com/gce-topology-subblock", "sblk-3"),
            ("topology.kubernetes.io/zone", " "),
        ]);
        let place = TopologyLevels::built_in().read(&node);
        assert_eq!(
            place.domain(NVLINK),
            Some("1a2b3c4d-0000-4000-8000-000000000001.32766")
        );
        assert!(place.has_clique());
        assert_eq!(
            place.domain("cloud.google.com/gce-topology-subblock"),
            Some("sblk-3")
        );
        assert_eq!(
            place.domain("topology.kubernetes.io/zone"),
            None,
            "an empty value is no place"
        );
        assert_eq!(
            physical_domain(GPU_CLIQUE, "1a2b3c4d-0000-4000-8000-000000000001.32766"),
            "1a2b3c4d-0000-4000-8000-000000000001"
        );
    }

    #[test]
    fn extra_levels_are_interned_by_content_and_skip_known_keys_and_the_hostname() {
        let a = TopologyLevels::with_extra(["example.com/rack", HOSTNAME, "example.com/rack"]);
        let b =
            TopologyLevels::with_extra(["example.com/rack", "cloud.google.com/gce-topology-block"]);
        assert!(std::ptr::eq(a, b));
        assert_eq!(a.extra(), ["example.com/rack"]);
        assert!(std::ptr::eq(
            TopologyLevels::with_extra([HOSTNAME]),
            TopologyLevels::built_in()
        ));
        let place = a.read(&labels(&[("example.com/rack", "r7")]));
        assert_eq!(place.domain("example.com/rack"), Some("r7"));
        assert_eq!(
            TopologyLevels::built_in().read(&labels(&[("example.com/rack", "r7")])),
            NodeTopology::default()
        );
    }
}
