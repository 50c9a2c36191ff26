//! Which labels are topology levels for a scan, and a node's place at each: the built-in table, plus the
//! levels of the cluster's Kueue `Topology` objects and `--topology-label` keys (the *extra* levels).
//!
//! A set of levels is a plain value, made by whoever reads the Topologies and flags and handed to the scan.
//! An entry made under one set must not be reused under another, so a scan scope's key names the set by its
//! fingerprint (what it adds to the table): two sets of the same levels read alike, whoever made them.

use std::sync::{Arc, LazyLock};

use super::label_table::{self, HOSTNAME, LabelRole, TOPOLOGY_LABELS};
use crate::inventory::health::fingerprint_of;
use crate::inventory::model::NodeTopology;
use crate::inventory::text_map::{Text, TextMap};

/// The topology levels a scan reads: the built-in table and the extra keys, in the order given.
#[derive(Debug)]
pub struct TopologyLevels {
    /// No level at all is read (see [`TopologyLevels::none`]).
    off: bool,
    extra: Vec<Text>,
    /// Every level label, sorted by key, with what it is: a node's labels (sorted too) are read in one merge
    /// pass, not one lookup per known label.
    index: Vec<(Text, Slot)>,
    /// What the set adds to the table, as a value: 0 for the table alone (see the module's docs).
    fingerprint: u64,
}

/// What a level label is to a node's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// An NVLink label, by preference (0 first): the table's key.
    Nvlink(usize, &'static str),
    /// A network level, by its place in the order levels are listed.
    Network(usize),
}

/// The built-in table: program data, made once.
static BUILT_IN: LazyLock<Arc<TopologyLevels>> =
    LazyLock::new(|| Arc::new(TopologyLevels::default()));

/// No level (see [`TopologyLevels::none`]): program data, made once.
static NONE: LazyLock<TopologyLevels> = LazyLock::new(|| TopologyLevels {
    off: true,
    extra: Vec::new(),
    index: Vec::new(),
    fingerprint: 2,
});

impl PartialEq for TopologyLevels {
    fn eq(&self, other: &Self) -> bool {
        (self.off, &self.extra) == (other.off, &other.extra)
    }
}

impl Eq for TopologyLevels {}

/// The built-in table, to own.
impl Default for TopologyLevels {
    fn default() -> Self {
        TopologyLevels::of(Vec::new(), 0)
    }
}

/// The built-in table, so that scopes that name no levels read with it.
impl Default for &TopologyLevels {
    fn default() -> Self {
        TopologyLevels::built_in()
    }
}

impl TopologyLevels {
    /// The built-in table alone.
    pub fn built_in() -> &'static TopologyLevels {
        &BUILT_IN
    }

    /// The built-in table alone, to hold.
    pub fn built_in_shared() -> Arc<TopologyLevels> {
        BUILT_IN.clone()
    }

    /// No level: every node's place is empty and no summary is made. What a scan costs without reading
    /// topology, on the same nodes (`make scan-cost` measures the difference); not a setting of the operator.
    pub fn none() -> &'static TopologyLevels {
        &NONE
    }

    /// The levels of the table and `extra`, indexed.
    fn of(extra: Vec<Text>, fingerprint: u64) -> TopologyLevels {
        let mut levels = TopologyLevels {
            off: false,
            extra,
            index: Vec::new(),
            fingerprint,
        };
        let nvlink = TOPOLOGY_LABELS
            .iter()
            .filter(|l| l.role == LabelRole::Nvlink)
            .enumerate()
            .map(|(at, l)| (Text::from(l.key), Slot::Nvlink(at, l.key)));
        let network: Vec<Text> = levels.network_keys().collect();
        let network = network
            .into_iter()
            .enumerate()
            .map(|(at, key)| (key, Slot::Network(at)));
        levels.index = nvlink.chain(network).collect();
        levels.index.sort_by_cached_key(|(key, _)| key.to_string());
        levels
    }

    /// The built-in table and these extra label keys (Kueue's levels widest first, then the flag's), in
    /// that order. Keys the table knows, the hostname label, empty keys and repeats add nothing.
    pub fn with_extra<'k>(keys: impl IntoIterator<Item = &'k str>) -> Arc<TopologyLevels> {
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
            return TopologyLevels::built_in_shared();
        }
        // Odd, so never the table's 0 or `none`'s 2. Keys hold no newline (label keys cannot).
        let fingerprint = fingerprint_of(&extra.join("\n")) | 1;
        let extra = extra.into_iter().map(Text::from).collect();
        Arc::new(TopologyLevels::of(extra, fingerprint))
    }

    /// The set as a value to compare (see the module's docs).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The extra levels, in order.
    pub fn extra(&self) -> &[Text] {
        &self.extra
    }

    /// Every network level key, table levels first.
    pub fn network_keys(&self) -> impl Iterator<Item = Text> + '_ {
        TOPOLOGY_LABELS
            .iter()
            .filter(|l| l.role == LabelRole::Network)
            .map(|l| Text::from(l.key))
            .chain(self.extra.iter().cloned())
    }

    /// The node's place, from its labels: one merge of the node's sorted labels with the sorted index. An
    /// empty value is no place.
    pub fn read(&self, labels: &TextMap) -> NodeTopology {
        let mut nvlink: Option<(usize, &'static str, &Text)> = None;
        let mut network: Vec<(usize, &Text, &Text)> = Vec::new();
        let (entries, index) = (labels.entries(), &self.index);
        let (mut l, mut i) = (0, 0);
        while l < entries.len() && i < index.len() {
            let (key, value) = &entries[l];
            match (**key).cmp(&*index[i].0) {
                std::cmp::Ordering::Less => l += 1,
                std::cmp::Ordering::Greater => i += 1,
                std::cmp::Ordering::Equal => {
                    if !value.trim().is_empty() {
                        match index[i].1 {
                            Slot::Nvlink(rank, key)
                                if nvlink.is_none_or(|(best, _, _)| rank < best) =>
                            {
                                nvlink = Some((rank, key, value));
                            }
                            Slot::Nvlink(..) => {}
                            Slot::Network(order) => network.push((order, &index[i].0, value)),
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
                .map(|(_, key, value)| (key.clone(), value.clone()))
                .collect(),
        }
    }
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
    fn extra_levels_are_keyed_by_content_and_skip_known_keys_and_the_hostname() {
        let a = TopologyLevels::with_extra(["example.com/rack", HOSTNAME, "example.com/rack"]);
        let b =
            TopologyLevels::with_extra(["example.com/rack", "cloud.google.com/gce-topology-block"]);
        assert_eq!(a, b);
        assert_eq!(
            a.fingerprint(),
            b.fingerprint(),
            "the same levels read alike"
        );
        assert_ne!(a.fingerprint(), TopologyLevels::built_in().fingerprint());
        assert_eq!(a.extra(), [Text::from("example.com/rack")]);
        assert!(Arc::ptr_eq(
            &TopologyLevels::with_extra([HOSTNAME]),
            &TopologyLevels::built_in_shared()
        ));
        let place = a.read(&labels(&[("example.com/rack", "r7")]));
        assert_eq!(place.domain("example.com/rack"), Some("r7"));
        assert_eq!(
            TopologyLevels::built_in().read(&labels(&[("example.com/rack", "r7")])),
            NodeTopology::default()
        );
    }
}
