//! The topology gauges: per product and level, its domains, degraded domains and the largest offer, and
//! the free GPUs of the level's largest domains. Bounded as `status.topology[]` is: a few series per product
//! and level (at most `LARGEST_DOMAINS` domains), whatever the fleet; a domain that leaves the largest is
//! removed with the previous export, as every other series is.

use super::families::{DomainLabels, InventoryGauges, TopologyLabels};
use crate::inventory::model::{DomainFree, Inventory, TopologySummary};

fn summary_labels(inventory: &str, summary: &TopologySummary) -> TopologyLabels {
    TopologyLabels {
        inventory: inventory.to_owned(),
        product: summary.product.clone(),
        level: summary.level.to_owned(),
    }
}

fn domain_labels(inventory: &str, summary: &TopologySummary, domain: &DomainFree) -> DomainLabels {
    DomainLabels {
        inventory: inventory.to_owned(),
        product: summary.product.clone(),
        level: summary.level.to_owned(),
        domain: domain.name.clone(),
    }
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
