//! The label sets of the per-node, per-resource and per-product series, built the same way where a series is
//! set and where it is removed (so a removal always names the series that was set).

use super::families::{JobFitLabels, NodeInfoLabels, NodeResourceLabels};
use crate::inventory::model::{Inventory, JobFit, NodeInventory, ProductTotals};

/// Every (product, job size) of the inventory.
pub(super) fn job_fits(status: &Inventory) -> impl Iterator<Item = (&ProductTotals, &JobFit)> {
    status
        .products
        .iter()
        .flat_map(|p| p.nodes_with_free_gpus.iter().map(move |fit| (p, fit)))
}

pub(super) fn job_fit_labels(
    inventory: &str,
    product: &ProductTotals,
    fit: &JobFit,
) -> JobFitLabels {
    JobFitLabels {
        inventory: inventory.to_owned(),
        product: product.name.clone(),
        vendor: product.vendor.unwrap_or_default().to_owned(),
        at_least: fit.at_least.to_string(),
    }
}

pub(super) fn node_resource(inventory: &str, node: &str, resource: &str) -> NodeResourceLabels {
    NodeResourceLabels {
        inventory: inventory.to_owned(),
        node: node.to_owned(),
        resource: resource.to_owned(),
    }
}

pub(super) fn info_labels(inventory: &str, node: &NodeInventory) -> NodeInfoLabels {
    NodeInfoLabels {
        inventory: inventory.to_owned(),
        node: node.name.clone(),
        vendor: crate::inventory::vendors::vendor_of(node)
            .unwrap_or_default()
            .to_owned(),
        product: node.product.clone().unwrap_or_default(),
        workload_config: node.workload_config.clone().unwrap_or_default(),
        ready: node.ready.to_string(),
    }
}
