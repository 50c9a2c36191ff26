//! Every path into the operator library that the driver uses, in one place, so the library's reorganization
//! is a one-file change here. Each import names its path after the reorganization in the comment above it.

// After the reorganization: `crd::{GpuInventory, GpuNodeEntry}` (unchanged).
pub use gpu_inventory_operator::crd::{GpuInventory, GpuNodeEntry};
// After the reorganization: `publish::crd::install_crd`.
pub use gpu_inventory_operator::crd_install::install_crd;
// After the reorganization: `sources::dump::parse_node_dump`.
pub use gpu_inventory_operator::node_dump::parse_node_dump;
// After the reorganization: `inventory::scanner::scan_node`.
pub use gpu_inventory_operator::scanner::scan_node;
