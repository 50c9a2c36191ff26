//! Every path into the operator library that the driver uses, in one place.

pub use gpu_inventory_operator::crd::{GpuInventory, GpuNodeEntry};
pub use gpu_inventory_operator::inventory::scanner::{ScanScope, scan_node, scan_node_in};
pub use gpu_inventory_operator::publish::crd::install_crd;
pub use gpu_inventory_operator::sources::dump::parse_node_dump;
