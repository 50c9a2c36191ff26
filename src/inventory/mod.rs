//! The pure core: cluster objects in, the inventory and the writes that publish it out.
//!
//! Nothing here does I/O or reads the clock (times are passed in), so every rule is unit-tested without an
//! API server, and the operator and the one-shot `scan` agree by construction.

pub mod allocation;
pub mod conditions;
pub mod configmap;
pub mod dra;
pub mod events;
pub mod plan;
pub mod scanner;
pub mod selector;
pub mod shared_scan;
pub mod size_budget;
pub mod status;
pub mod vendor;

#[cfg(test)]
pub(crate) mod test_support;
