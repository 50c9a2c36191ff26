//! The topology gauges: per product and level, its domains, degraded domains and the largest offer, and
//! the free GPUs of the level's largest domains. Bounded as `status.topology[]` is: a few series per product
//! and level (at most `LARGEST_DOMAINS` domains), whatever the fleet; a domain that leaves the largest is
//! removed with the previous export, as every other series is.

use prometheus_client::registry::Registry;

use super::families::{DomainLabels, InventoryGauges, TopologyLabels};
use crate::inventory::model::{DomainFree, Inventory, TopologySummary};

fn summary_labels(inventory: &str, summary: &TopologySummary) -> TopologyLabels {
    TopologyLabels {
        inventory: inventory.to_owned(),
        product: summary.product.clone(),
        level: summary.level.to_string(),
    }
}

fn domain_labels(inventory: &str, summary: &TopologySummary, domain: &DomainFree) -> DomainLabels {
    DomainLabels {
        inventory: inventory.to_owned(),
        product: summary.product.clone(),
        level: summary.level.to_string(),
        domain: domain.name.clone(),
    }
}

/// Registers the topology families.
pub(super) fn register(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
            "topology_domains",
            "Domains of a topology level (nvlink: NVLink partitions; else a node label key) holding GPU nodes of \
             the product (status.topology[].domains)",
            gauges.topology_domains.clone(),
        );
    registry.register(
        "topology_degraded_domains",
        "Domains of the level with a problem: NVLink partitions whose members cannot all take part \
             (NvlinkDomainDegraded; status.topology[].degradedDomains)",
        gauges.topology_degraded_domains.clone(),
    );
    registry.register(
        "topology_largest_free_gpus",
        "The most GPUs one domain of the level offers to pods of the product's GPUs per node \
             (status.topology[].largestFreeGpus)",
        gauges.topology_largest_free_gpus.clone(),
    );
    registry.register(
            "topology_domain_free_gpus",
            "GPUs a domain offers to pods of the product's GPUs per node, for the level's largest domains only \
             (at most 5 per product and level: status.topology[].largestDomains)",
            gauges.topology_domain_free_gpus.clone(),
        );
}

/// Sets the topology series of `status`.
pub(super) fn export_topology(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    for summary in &status.topology {
        let labels = summary_labels(inventory, summary);
        metrics
            .topology_domains
            .get_or_create(&labels)
            .set(i64::from(summary.domains));
        metrics
            .topology_degraded_domains
            .get_or_create(&labels)
            .set(i64::from(summary.degraded_domains));
        metrics
            .topology_largest_free_gpus
            .get_or_create(&labels)
            .set(i64::try_from(summary.largest_free_gpus).unwrap_or(i64::MAX));
        for domain in &summary.largest_domains {
            metrics
                .topology_domain_free_gpus
                .get_or_create(&domain_labels(inventory, summary, domain))
                .set(i64::try_from(domain.free_gpus).unwrap_or(i64::MAX));
        }
    }
}

/// Removes the topology series `status` set.
pub(super) fn remove_topology(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    for summary in &status.topology {
        let labels = summary_labels(inventory, summary);
        metrics.topology_domains.remove(&labels);
        metrics.topology_degraded_domains.remove(&labels);
        metrics.topology_largest_free_gpus.remove(&labels);
        for domain in &summary.largest_domains {
            metrics
                .topology_domain_free_gpus
                .remove(&domain_labels(inventory, summary, domain));
        }
    }
}
