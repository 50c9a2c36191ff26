//! The idle GPU gauges: per namespace and resource, the held units that sat idle through the window, and
//! whether the activity is known. While it is not, the idle series are absent: withheld, not 0.

use super::families::{InventoryGauges, InventoryLabels, NamespaceResourceLabels};
use crate::inventory::model::{Inventory, UtilizationState};

fn idle_labels(inventory: &str, namespace: &str, resource: &str) -> NamespaceResourceLabels {
    NamespaceResourceLabels {
        inventory: inventory.to_owned(),
        namespace: namespace.to_owned(),
        resource: resource.to_owned(),
    }
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
}
