//! What a scan reads ([`ScanInput`]), built up by its methods, and what its nodes are ([`NodeUniverse`]).

use std::sync::Arc;

use crate::inventory::allocation::GpuPod;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::DraInput;
use crate::inventory::health::HealthTable;
use crate::inventory::memory::ScanMemory;
use crate::inventory::quotas::KueueInput;
use crate::inventory::selector::LabelSelector;
use crate::inventory::topology::TopologyLevels;
use crate::inventory::utilization::Round;
use crate::inventory::vendors::vendor_table::VendorTables;

/// What the nodes handed to a scan are: the whole cluster, or a subset (the operator watches only
/// `--node-label-selector` nodes). Only an inventory of the whole cluster answers for every pending GPU pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NodeUniverse {
    /// Every node of the cluster.
    #[default]
    Cluster,
    /// Some of them.
    Subset,
}

/// What a scan reads: nodes, and optionally pods, DRA objects, a selector and what the nodes are.
#[derive(Debug, Default)]
pub struct ScanInput<'a> {
    pub(super) nodes: Vec<&'a ClusterNode>,
    pub(super) pods: Vec<&'a GpuPod>,
    /// The caches' `Arc`s of `nodes` and `pods`, in the same order, when the scan was given them.
    pub(super) shared: Option<Shared<'a>>,
    pub(super) dra: DraInput<'a>,
    pub(super) selector: Option<&'a LabelSelector>,
    pub(super) universe: NodeUniverse,
    pub(super) memory: Option<&'a mut ScanMemory>,
    pub(super) health: &'a HealthTable,
    /// The vendor tables the scan reads with (the built-in ones), handed to the scanner in its scope.
    pub(super) vendors: VendorTables,
    /// The topology levels nodes' places are read at (the built-in table unless given).
    pub(super) topology: &'a TopologyLevels,
    /// Kueue's objects, when read: the scan then checks their quotas against the GPUs.
    pub(super) kueue: Option<KueueInput<'a>>,
    /// The selector that picked the nodes handed in, when they are a subset (`--node-label-selector`).
    pub(super) watched: Option<&'a LabelSelector>,
    /// The held GPUs' activity, when read: the scan then says which holdings sit idle.
    pub(super) utilization: Option<&'a Arc<Round>>,
}

impl<'a> ScanInput<'a> {
    /// These nodes (all of the cluster's, unless [`ScanInput::universe`] says otherwise), no pods, no DRA
    /// objects, every node selected.
    pub fn nodes(nodes: impl IntoIterator<Item = &'a ClusterNode>) -> ScanInput<'a> {
        ScanInput {
            nodes: nodes.into_iter().collect(),
            ..Default::default()
        }
    }

    /// These nodes and pods as the caches hold them. Their identity lets a scan with a memory reuse a
    /// node's entry made from the very same node and pods (see [`crate::inventory::memory`]); the result
    /// is the same as [`ScanInput::nodes`] with [`ScanInput::pods`].
    pub fn shared(nodes: &'a [Arc<ClusterNode>], pods: &'a [Arc<GpuPod>]) -> ScanInput<'a> {
        ScanInput {
            nodes: nodes.iter().map(AsRef::as_ref).collect(),
            pods: pods.iter().map(AsRef::as_ref).collect(),
            shared: Some(Shared { nodes, pods }),
            ..Default::default()
        }
    }

    /// The pods whose holdings and demand are accounted.
    pub fn pods(mut self, pods: impl IntoIterator<Item = &'a GpuPod>) -> ScanInput<'a> {
        self.pods = pods.into_iter().collect();
        self.shared = None;
        self
    }

    /// The DRA sources' objects: nodes publishing GPU devices are GPU nodes, and their devices are counted
    /// and allocated by the DRA rules (see [`dra`]).
    pub fn dra(mut self, dra: DraInput<'a>) -> ScanInput<'a> {
        self.dra = dra;
        self
    }

    /// Scans only the nodes `selector` picks.
    pub fn selector(mut self, selector: &'a LabelSelector) -> ScanInput<'a> {
        self.selector = Some(selector);
        self
    }

    /// Reuses what earlier scans kept in `memory`, and keeps this scan's there (see
    /// [`crate::inventory::memory`]); the result is the same without it.
    pub fn memory(mut self, memory: &'a mut ScanMemory) -> ScanInput<'a> {
        self.memory = Some(memory);
        self
    }

    /// Which node conditions are GPU health (the built-in table otherwise).
    pub fn health(mut self, table: &'a HealthTable) -> ScanInput<'a> {
        self.health = table;
        self
    }

    /// Reads nodes' places at these topology levels (the built-in table otherwise).
    pub fn topology(mut self, levels: &'a TopologyLevels) -> ScanInput<'a> {
        self.topology = levels;
        self
    }

    /// Kueue's objects: the inventory gets a quota report ([`crate::inventory::quotas`]).
    pub fn kueue(mut self, kueue: KueueInput<'a>) -> ScanInput<'a> {
        self.kueue = Some(kueue);
        self
    }

    /// The held GPUs' activity ([`crate::inventory::utilization`]): the inventory gets a utilization report
    /// and the nodes their idle holdings.
    pub fn utilization(mut self, round: &'a Arc<Round>) -> ScanInput<'a> {
        self.utilization = Some(round);
        self
    }

    /// The nodes handed in are those `selector` picks (the operator's `--node-label-selector`): a Kueue
    /// flavor whose `nodeLabels` imply it is judged in full ([`crate::inventory::quotas::QuotaScope`]).
    pub fn watched_by(mut self, selector: &'a LabelSelector) -> ScanInput<'a> {
        self.watched = Some(selector);
        self
    }

    /// What the nodes are (see [`NodeUniverse`]).
    pub fn universe(mut self, universe: NodeUniverse) -> ScanInput<'a> {
        self.universe = universe;
        self
    }
}

/// The caches' `Arc`s of a scan's nodes and pods ([`ScanInput::shared`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Shared<'a> {
    pub(super) nodes: &'a [Arc<ClusterNode>],
    pub(super) pods: &'a [Arc<GpuPod>],
}
