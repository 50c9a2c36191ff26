//! The idle GPU gauges: per namespace and resource, the held units that sat idle through the window; per
//! namespace and product, their GPU-equivalents (the chargeback gauge beside the held one); and whether the
//! activity is known. While it is not, the idle series are absent: withheld, not 0.

use prometheus_client::registry::Registry;

use super::families::{
    InventoryGauges, InventoryLabels, NamespaceProductLabels, NamespaceResourceLabels,
};
use crate::inventory::model::{Inventory, UtilizationState};

fn product_labels(inventory: &str, namespace: &str, product: &str) -> NamespaceProductLabels {
    NamespaceProductLabels {
        inventory: inventory.to_owned(),
        namespace: namespace.to_owned(),
        product: product.to_owned(),
    }
}

fn idle_labels(inventory: &str, namespace: &str, resource: &str) -> NamespaceResourceLabels {
    NamespaceResourceLabels {
        inventory: inventory.to_owned(),
        namespace: namespace.to_owned(),
        resource: resource.to_owned(),
    }
}

/// Registers the idle GPU families.
pub(super) fn register(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
            "idle_gpus",
            "Units of a resource a namespace's pods and claims hold that sat idle through the utilization \
             window (status.namespaces[].idle); absent while the activity is unknown",
            gauges.idle_gpus.clone(),
        );
    registry.register(
            "namespace_gpu_equivalents_idle",
            "Physical GPUs of a product a namespace's pods and claims hold that sat idle through the utilization \
             window, by the sharing schemes' rules (status.namespaces[].idleGpuEquivalents; sum_over_time gives \
             idle GPU-hours); absent while the activity is unknown",
            gauges.namespace_gpu_equivalents_idle.clone(),
        );
    registry.register(
            "utilization_known",
            "1 while the last query of the GPUs' activity answered in full (status.utilization.state Current), \
             0 while the idle figures are withheld",
            gauges.utilization_known.clone(),
        );
}

/// Sets the idle series of `status` (none where the activity is not read).
pub(super) fn export_idle(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let Some(report) = &status.utilization else {
        return;
    };
    let known = report.state == UtilizationState::Current;
    metrics
        .utilization_known
        .get_or_create(&InventoryLabels {
            inventory: inventory.to_owned(),
        })
        .set(i64::from(known));
    for (namespace, idle) in &report.namespaces {
        for (resource, units) in idle {
            metrics
                .idle_gpus
                .get_or_create(&idle_labels(inventory, namespace, resource))
                .set(i64::try_from(*units).unwrap_or(i64::MAX));
        }
    }
    for (namespace, by_product) in &report.namespace_equivalents {
        for (product, milli) in by_product {
            metrics
                .namespace_gpu_equivalents_idle
                .get_or_create(&product_labels(inventory, namespace, product))
                .set(*milli as f64 / 1000.0);
        }
    }
}

/// Removes the idle series `status` set.
pub(super) fn remove_idle(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let Some(report) = &status.utilization else {
        return;
    };
    metrics.utilization_known.remove(&InventoryLabels {
        inventory: inventory.to_owned(),
    });
    for (namespace, idle) in &report.namespaces {
        for resource in idle.keys() {
            metrics
                .idle_gpus
                .remove(&idle_labels(inventory, namespace, resource));
        }
    }
    for (namespace, by_product) in &report.namespace_equivalents {
        for product in by_product.keys() {
            metrics
                .namespace_gpu_equivalents_idle
                .remove(&product_labels(inventory, namespace, product));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::super::export::export_inventory;
    use super::super::families::InventoryGauges;
    use crate::inventory::model::{Inventory, UtilizationReport, UtilizationState};
    use crate::runtime::metrics::Metrics;

    fn with_idle(equivalents: &[(&str, &str, u64)]) -> Arc<Inventory> {
        let mut namespace_equivalents: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
        for (namespace, product, milli) in equivalents {
            namespace_equivalents
                .entry((*namespace).to_owned())
                .or_default()
                .insert((*product).to_owned(), *milli);
        }
        Arc::new(Inventory {
            utilization: Some(UtilizationReport {
                state: UtilizationState::Current,
                namespace_equivalents,
                ..UtilizationReport::default()
            }),
            ..Inventory::default()
        })
    }

    /// The idle GPU-equivalents per namespace and product, beside the held ones; a series that goes to nothing
    /// leaves, and none is exported while the activity is unknown.
    #[test]
    fn idle_gpu_equivalents_are_one_series_per_namespace_and_product_while_there_are_any() {
        let g = InventoryGauges::default();
        let m = Metrics::with_families(|r| g.register(r));
        let idle = with_idle(&[("team-a", "Tesla-T4", 250), ("team-b", "NVIDIA-A100", 1250)]);
        export_inventory(&m, &g, "cluster", &idle);
        let text = m.encode();
        for line in [
            "gpu_inventory_namespace_gpu_equivalents_idle{inventory=\"cluster\",namespace=\"team-a\",product=\"Tesla-T4\"} 0.25",
            "gpu_inventory_namespace_gpu_equivalents_idle{inventory=\"cluster\",namespace=\"team-b\",product=\"NVIDIA-A100\"} 1.25",
        ] {
            assert!(text.contains(line), "{line} missing in:\n{text}");
        }
        export_inventory(
            &m,
            &g,
            "cluster",
            &with_idle(&[("team-a", "Tesla-T4", 250)]),
        );
        let text = m.encode();
        assert!(!text.contains("namespace=\"team-b\""), "{text}");
        let unknown = Arc::new(Inventory {
            utilization: Some(UtilizationReport::default()),
            ..Inventory::default()
        });
        export_inventory(&m, &g, "cluster", &unknown);
        assert!(
            !m.encode()
                .contains("gpu_inventory_namespace_gpu_equivalents_idle{"),
            "withheld while unknown"
        );
    }
}
