//! The node scanner: one Node object (and its DRA devices) in, its [`NodeInventory`] out, or nothing when it
//! is no GPU node.
//!
//! Pure and deterministic: no I/O, no clock. One path reads every node ([`scan_node_in`], `read_node`): the
//! vendor tables the scan hands in (`ScanScope`; `vendors::built_in()` by default, each a `VendorTable`) sense and identify the node's vendor, that
//! vendor's table reads it, and one diagnosis (`diagnose`) words what is wrong in the table's words (the
//! reading rules are in docs/reading-nodes.md); [`crate::inventory::assemble`] runs it over a set of nodes.

mod diagnose;
mod dra_devices;
mod read_node;
mod scan_scope;

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::NodeInventory;
pub(crate) use dra_devices::PRODUCT_FROM_DRA;
pub use read_node::scan_node_in;
pub use scan_scope::{ScanScope, ScopeKey};

/// The node's entry when it is a GPU node, else `None`, with the node as its own scope (GPU Feature Discovery
/// counts as installed only when this node carries its labels). [`crate::inventory::scan`] scans a set of
/// nodes.
pub fn scan_node(node: &ClusterNode) -> Option<NodeInventory> {
    scan_node_in(node, ScanScope::of([node]), None)
}

/// What `node`'s labels add to a scan's scope, read with the built-in vendor tables, with those tables'
/// address: what a node's maker keeps on it (`ClusterNode::scope_signals`).
pub fn read_scope_signals(node: &ClusterNode) -> (usize, u64) {
    let scope = ScanScope::default();
    (scope.vendors.address(), scope.read_signals(node))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
