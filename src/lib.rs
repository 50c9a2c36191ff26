//! gpu-inventory-operator: keeps an inventory of a Kubernetes cluster's GPU nodes and says what is wrong
//! with them. See README.md for the big picture; `main.rs` only wires these modules together.

pub mod conditions;
pub mod crd;
pub mod guard;
pub mod node_dump;
pub mod node_status;
pub mod scanner;
