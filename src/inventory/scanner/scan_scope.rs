//! What the scan of one node needs to know about the other nodes in scope (which labellers run there), and
//! the tables it reads with: the health table and the vendor tables, handed in by the scan's caller.

use crate::inventory::cluster_node::ClusterNode;
pub use crate::inventory::cluster_node::ScopeKey;
use crate::inventory::health::HealthTable;
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::Vendor;
use crate::inventory::topology::TopologyLevels;
use crate::inventory::vendors::vendor_table::VendorTables;

/// What the scan of one node needs to know about the others in scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanScope<'t> {
    /// Some node in scope carries a GPU Feature Discovery label, so GFD is installed: a GPU node it has not
    /// labelled (and no other source names) is `GpuLabelsMissing`. Without GFD anywhere, nobody is.
    pub(crate) gfd_installed: bool,
    /// Per vendor (by `Vendor::slot`, but NVIDIA, which is `gfd_installed`): some node in scope carries
    /// that vendor's labels, so its labeller runs. One vendor's labeller says nothing of another's nodes.
    pub(crate) vendor_labels: [bool; Vendor::SLOTS],
    /// Which node conditions are GPU health, and who sets them.
    pub(crate) health: &'t HealthTable,
    /// The vendor tables that read the nodes.
    pub(crate) vendors: VendorTables,
    /// The topology levels a node's place is read at.
    pub(crate) topology: &'t TopologyLevels,
}

impl<'t> ScanScope<'t> {
    /// Whether some node in scope carries `vendor`'s labels.
    pub(crate) fn labelled(&self, vendor: Vendor) -> bool {
        match vendor {
            Vendor::Nvidia => self.gfd_installed,
            other => other.slot().is_some_and(|i| self.vendor_labels[i]),
        }
    }
}

impl<'t> ScanScope<'t> {
    /// The scope of these nodes: the first of the scan's two passes (a scan with a memory reads each node
    /// version's labels for it once: `inventory::memory`). The built-in health and vendor tables read them.
    pub fn of<'a>(nodes: impl IntoIterator<Item = &'a ClusterNode>) -> ScanScope<'t> {
        ScanScope::of_nodes(nodes, ScanScope::default())
    }

    /// The scope of these nodes, read with the tables of `tables` (its health and vendor tables).
    pub(crate) fn of_nodes<'a>(
        nodes: impl IntoIterator<Item = &'a ClusterNode>,
        tables: ScanScope<'t>,
    ) -> ScanScope<'t> {
        let empty = tables.tables_only();
        let signals = nodes
            .into_iter()
            .fold(0, |signals, node| signals | empty.signals_of(node));
        empty.with_signals(signals)
    }

    /// The scope's tables, and no node's signals yet.
    pub(crate) fn tables_only(self) -> ScanScope<'t> {
        ScanScope {
            health: self.health,
            vendors: self.vendors,
            topology: self.topology,
            ..ScanScope::default()
        }
    }

    /// What `node`'s labels add to a scope read with these vendor tables, as [`ScanScope::signals`] encodes
    /// it: as the node's maker read them when with the same tables, else read now.
    pub(crate) fn signals_of(&self, node: &ClusterNode) -> u64 {
        match node.scope_signals {
            Some((tables, signals)) if tables == self.vendors.address() => signals,
            _ => self.read_signals(node),
        }
    }

    /// What `node`'s labels add to a scope read with these vendor tables, read now.
    pub(crate) fn read_signals(&self, node: &ClusterNode) -> u64 {
        let reader = LabelReader::new(Some(&node.labels));
        let mut own = ScanScope::default();
        for table in self.vendors.iter() {
            let seen = table.labeller_seen(&reader);
            match table.vendor() {
                Vendor::Nvidia => own.gfd_installed = seen,
                vendor => {
                    if let Some(i) = vendor.slot() {
                        own.vendor_labels[i] = seen;
                    }
                }
            }
        }
        own.signals()
    }

    /// The scope's label signals as bits: GPU Feature Discovery, then each vendor in `Vendor::ALL` order.
    fn signals(&self) -> u64 {
        let vendors = self
            .vendor_labels
            .iter()
            .enumerate()
            .fold(0, |bits, (i, labelled)| {
                bits | (u64::from(*labelled) << (i + 1))
            });
        u64::from(self.gfd_installed) | vendors
    }

    /// The scope with these [`ScanScope::signals`] added.
    pub(crate) fn with_signals(mut self, signals: u64) -> ScanScope<'t> {
        self.gfd_installed |= signals & 1 != 0;
        for (i, labelled) in self.vendor_labels.iter_mut().enumerate() {
            *labelled |= signals & (1 << (i + 1)) != 0;
        }
        self
    }

    /// Everything a node's entry depends on besides the node itself, as a value to compare: the label
    /// signals, which health table and which topology levels (by their fingerprints: what they hold beyond
    /// the built-in tables) and which vendor tables (by address: they are `'static` program data).
    pub(crate) fn key(&self) -> ScopeKey {
        (
            self.signals(),
            self.health.fingerprint(),
            self.vendors.address(),
            self.topology.fingerprint(),
        )
    }

    /// The scope, reading health conditions with `table` (the defaults otherwise).
    pub fn with_health(mut self, table: &'t HealthTable) -> ScanScope<'t> {
        self.health = table;
        self
    }
}
