//! Every path into the operator library that the kit and the bench driver use, in one place (the soak's
//! comparison with a fresh scan imports its own).

pub use gpu_inventory_operator::cmd::cli::{
    Cli as OperatorCli, Command as OperatorCommand, RunArgs,
};
pub use gpu_inventory_operator::cmd::plugin::FIRST_LIST_TIMEOUT;
pub use gpu_inventory_operator::crd::{
    DEFAULT_CLUSTER_PROPERTY, GpuInventory, GpuNodeEntry, cluster_property_resource,
};
pub use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
pub use gpu_inventory_operator::inventory::health::HealthTable;
pub use gpu_inventory_operator::inventory::scanner::{ScanScope, scan_node};
pub use gpu_inventory_operator::runtime::backoff;
pub use gpu_inventory_operator::sources::slim::{SlimNode, SlimPod};

use gpu_inventory_operator::inventory::allocation::allocate_node;
use gpu_inventory_operator::inventory::scanner::scan_node_in;
use gpu_inventory_operator::publish::content::wire::{Detail, node_entry};
use k8s_openapi::api::core::v1::Node;

/// The entry the operator writes for `node` when no pod holds anything on it: the scanner's entry with the
/// allocation accounted (nothing allocated, every allocatable resource free), as the status lists it. The
/// bench's nodes run no pods (the allocation scenario has its own truth).
pub fn idle_entry(node: &Node, scope: ScanScope) -> Option<GpuNodeEntry> {
    let mut entry = scan_node_in(&ClusterNode::of(node), scope, None)?;
    allocate_node(&entry, &[], true).apply(&mut entry);
    Some(node_entry(&entry, &[], Detail::Counts))
}
pub use gpu_inventory_operator::crd::GpuNode;
pub use gpu_inventory_operator::publish::crd::install_crd;
pub use gpu_inventory_operator::sources::dump::parse_node_dump;
