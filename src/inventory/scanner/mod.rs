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
use crate::inventory::dra::DraNode;
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

/// [`scan_node_in`], remembering on the node (for as long as this version of it lives) that it is no GPU
/// node in this scope when it has no DRA devices: the next scan of an unchanged CPU node costs a lookup. The
/// result is the same.
pub fn scan_node_remembered(
    node: &ClusterNode,
    scope: ScanScope,
    dra: Option<DraNode>,
) -> Option<NodeInventory> {
    if dra.is_none() && known_no_gpu(node, scope) {
        return None;
    }
    let key = scope.key();
    let without_dra = dra.is_none();
    let entry = scan_node_in(node, scope, dra);
    if entry.is_none() && without_dra {
        node.no_gpu_in.set(key);
    }
    entry
}

/// Whether an earlier scan found `node` (this version of it, without DRA devices) no GPU node in `scope`.
pub fn known_no_gpu(node: &ClusterNode, scope: ScanScope) -> bool {
    node.no_gpu_in.get() == Some(scope.key())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
