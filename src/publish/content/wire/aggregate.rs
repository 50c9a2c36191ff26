//! The aggregate's parts: a GpuInventory status's conditions, its sums per resource, product and namespace,
//! its problem nodes and its free devices per vendor.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::crd::{FreeGpuNodes, NamespaceUsage, ProblemNode, ProductSummary, ResourceSummary};
use crate::inventory::conditions::{InventoryCondition, inventory_conditions};
use crate::inventory::model::{
    Equivalent, Inventory, NamespaceTotals, NodeInventory, ProductTotals, ResourceTotals,
    UtilizationReport,
};

/// The inventory's conditions for spec generation `generation`, `lastTransitionTime` left at the epoch for
/// the plan to stamp.
pub fn conditions(inventory: &Inventory, generation: Option<i64>) -> Vec<Condition> {
    inventory_conditions(inventory)
        .into_iter()
        .map(|c| condition(c, generation))
        .collect()
}

fn condition(condition: InventoryCondition, generation: Option<i64>) -> Condition {
    Condition {
        type_: condition.type_.to_owned(),
        status: if condition.status { "True" } else { "False" }.to_owned(),
        reason: condition.reason.to_owned(),
        message: condition.message,
        observed_generation: generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// A resource's sums.
pub fn resource(totals: &ResourceTotals) -> ResourceSummary {
    ResourceSummary {
        name: totals.name.clone(),
        capacity: totals.capacity,
        allocatable: totals.allocatable,
        allocated: totals.allocated,
        free: totals.free,
    }
}

/// A product's sums, with where N-GPU jobs can start.
pub fn product(totals: &ProductTotals) -> ProductSummary {
    ProductSummary {
        name: totals.name.clone(),
        nodes: totals.nodes,
        gpus: totals.gpus,
        free_gpus: totals.free_gpus,
        vendor: totals.vendor.map(str::to_owned),
        whole_free_gpus: totals.occupancy.whole_free,
        partly_free_gpus: totals.occupancy.partly_free,
        fully_held_gpus: totals.occupancy.fully_held,
        nodes_with_free_gpus: totals
            .nodes_with_free_gpus
            .iter()
            .map(|fit| FreeGpuNodes {
                at_least: fit.at_least,
                nodes: fit.nodes,
            })
            .collect(),
    }
}

/// A namespace's holdings and demand, and its idle units when the activity is read.
pub fn namespace(
    totals: &NamespaceTotals,
    utilization: Option<&UtilizationReport>,
) -> NamespaceUsage {
    let idle_equivalents = super::utilization::idle_equivalents(utilization, &totals.name);
    NamespaceUsage {
        name: totals.name.clone(),
        allocated: totals.allocated.clone(),
        pending_pods: totals.pending_pods,
        pending: totals.pending.clone(),
        gpu_equivalents: totals.gpu_equivalents_milli.map(Equivalent::decimal),
        gpu_equivalents_by_product: totals
            .gpu_equivalents_by_product
            .iter()
            .map(|(product, milli)| (product.clone(), Equivalent::decimal(*milli)))
            .collect(),
        idle: utilization
            .and_then(|u| u.namespaces.get(&totals.name))
            .cloned()
            .unwrap_or_default(),
        idle_gpu_equivalents: idle_equivalents.0,
        idle_gpu_equivalents_by_product: idle_equivalents.1,
    }
}

/// A node with issues, as the aggregate lists it.
pub fn problem_node(node: &NodeInventory) -> ProblemNode {
    ProblemNode {
        name: node.name.clone(),
        reasons: node
            .issues
            .iter()
            .map(|i| i.reason.as_str().to_owned())
            .collect(),
    }
}

/// `amd=8,nvidia=4`: whole devices free per vendor, by vendor name (`unknown` for nodes no rule attributes);
/// `None` without GPU nodes.
pub fn free_by_vendor(inventory: &Inventory) -> Option<String> {
    let parts: Vec<String> = crate::inventory::totals::free_by_vendor(&inventory.nodes)
        .into_iter()
        .map(|(vendor, free)| format!("{}={free}", vendor.unwrap_or("unknown")))
        .collect();
    (!parts.is_empty()).then(|| parts.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::test_support::inventory;

    #[test]
    fn conditions_carry_the_generation_and_wait_for_their_times() {
        let c = conditions(&inventory(vec![]), Some(3));
        assert_eq!(
            (
                c[0].type_.as_str(),
                c[0].status.as_str(),
                c[0].reason.as_str()
            ),
            ("Ready", "False", "NoGpuNodes")
        );
        assert!(c.iter().all(|c| c.observed_generation == Some(3)));
        assert!(
            c.iter()
                .all(|c| c.last_transition_time == Time(Timestamp::UNIX_EPOCH))
        );
    }
}
