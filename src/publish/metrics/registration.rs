//! Registering the inventories' families into the process's registry: each feature's module registers its
//! own, in the order the families have always been registered (the `/metrics` output keeps its order). Kept
//! apart from `families`, which every module names, so that no two files name each other.

use prometheus_client::registry::Registry;

use super::families::InventoryGauges;
use super::{export, fragmentation, quotas, topology, utilization};

impl InventoryGauges {
    /// Registers every family (the same series as before: names, help and units are the dashboard's).
    pub fn register(&self, registry: &mut Registry) {
        export::register(self, registry);
        topology::register(self, registry);
        fragmentation::register(self, registry);
        quotas::register(self, registry);
        utilization::register(self, registry);
    }
}
