//! The metrics publisher: each inventory's gauges on `/metrics` (GPU nodes, GPUs, per-node info, issues,
//! allocation, topology, Kueue quotas, idle GPUs).
//! Series of nodes and inventories that are gone are removed, so dashboards never show ghosts.
//!
//! - `families`: the metric families and their label sets;
//! - `registration`: registering them into the process's registry, each module its own;
//! - `export`: setting an inventory's series from its model;
//! - `removal`: removing the series of what is gone;
//! - `label_sets`: the label sets both build the same way;
//! - `node_diff`: which nodes' series an export touches (those whose entry changed);
//! - `quotas`: the Kueue quota series (per flavor and resource), set and removed;
//! - `fragmentation`: the largest free piece and the ladder's usable GPUs per product, the blocked pods;
//! - `topology`: the topology series (per product and level, and the largest domains), set and removed;
//! - `utilization`: the idle GPU series (per namespace and resource) and whether they are known.

mod export;
mod families;
mod fragmentation;
mod label_sets;
mod node_diff;
mod quotas;
mod registration;
mod removal;
mod topology;
mod utilization;

pub use export::export_inventory;
pub use families::*;
pub(crate) use removal::retain_inventories;

#[cfg(test)]
mod tests;
