//! The model as the CRDs' wire types: the only place `GpuNodeEntry` and its parts are made from the core's
//! values, and where a published status is read back into the model.
//!
//! - `node_entry`: a node's entry (reasons, claims, taints and quantities spelled);
//! - `cluster_summary`: a cluster's GPU summary as the ClusterProperty's value, both ways;
//! - `fragmentation`: how the free GPUs are spread and the pods blocked by it, both ways;
//! - `aggregate`: a GpuInventory status's conditions, sums and problem nodes;
//! - `read_back`: a published status read back into the model;
//! - `quota`: Kueue's quotas and the workloads that cannot fit, both ways;
//! - `topology`: a node's places and the inventory's topology levels, both ways;
//! - `utilization`: the idle holdings and the utilization report, both ways.

mod aggregate;
mod fleet;
mod fragmentation;
mod node_entry;
mod quotas;
mod read_back;
mod topology;
mod utilization;

pub use aggregate::{conditions, free_by_vendor, namespace, problem_node, product, resource};
pub use fleet::{read_summary_value, summary_value};
pub use fragmentation::{fragmentation, read_fragmentation};
pub use node_entry::{Detail, device, issue, node_entry};
pub use quotas::{WORKLOAD_ISSUES_LIMIT, quota_entry, read_quotas, workload_issues};
pub use read_back::published_inventory;
pub use topology::{places, read_places, read_summary, summary as topology_summary};
pub use utilization::{idle_entry, read_idle_entry, read_utilization, utilization_status};
