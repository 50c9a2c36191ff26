//! Every path into the operator library that the driver uses, in one place.

pub use gpu_inventory_operator::crd::{GpuInventory, GpuNodeEntry};
pub use gpu_inventory_operator::inventory::scanner::{ScanScope, scan_node};

use gpu_inventory_operator::inventory::allocation::account_node;
use gpu_inventory_operator::inventory::scanner::scan_node_in;
use k8s_openapi::api::core::v1::Node;

/// The entry the operator writes for `node` when no pod holds anything on it: the scanner's entry with the
/// allocation accounted (nothing allocated, every allocatable resource free). The bench's nodes run no pods
/// (the allocation scenario has its own truth).
pub fn idle_entry(node: &Node, scope: ScanScope) -> Option<GpuNodeEntry> {
    let mut entry = scan_node_in(node, scope)?;
    account_node(&mut entry, &[], true);
    Some(entry)
}
pub use gpu_inventory_operator::publish::crd::install_crd;
pub use gpu_inventory_operator::sources::dump::parse_node_dump;
