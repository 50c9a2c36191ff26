//! A published status read back into the model (the reverse of the other wire modules).

use std::collections::BTreeMap;

use crate::crd::{GpuInventoryStatus, GpuNodeEntry, NamespaceUsage, ProductSummary};
use crate::inventory::model::{
    Amount, Equivalent, Inventory, Issue, JobFit, Mig, MigProfile, NamespaceTotals, NodeInventory,
    Occupancy, ProductTotals, ResourceTotals, Sharing, Source, Vendor,
};
use crate::inventory::scanner::PRODUCT_FROM_DRA;
use crate::inventory::vendors as vendor;

/// What a published status says, read back into the model: for the events of a process that has no model
/// of its own yet (a start, a new leader), and for checks that compare a `scan`'s output with the operator's
/// metrics. It holds what the wire holds, except the DRA devices one by one and the holdings (the wire keeps
/// their counts). A reason, source or vendor this version does not know is left out: another version
/// published it.
pub fn published_inventory(status: &GpuInventoryStatus) -> Inventory {
    Inventory {
        total_gpu_nodes: status.total_gpu_nodes,
        ready_gpu_nodes: status.ready_gpu_nodes,
        total_gpus: status.total_gpus,
        free_gpus: status.free_gpus,
        occupancy: Occupancy {
            whole_free: status.whole_free_gpus,
            partly_free: status.partly_free_gpus,
            fully_held: status.fully_held_gpus,
        },
        pending_gpu_pods: status.pending_gpu_pods,
        resources: status
            .resources
            .iter()
            .map(|r| ResourceTotals {
                name: r.name.clone(),
                capacity: r.capacity,
                allocatable: r.allocatable,
                allocated: r.allocated,
                free: r.free,
            })
            .collect(),
        namespaces: status.namespaces.iter().map(published_namespace).collect(),
        products: status.products.iter().map(published_product).collect(),
        nodes: status
            .nodes
            .iter()
            .map(|n| std::sync::Arc::new(published_node(n)))
            .collect(),
        topology: status
            .topology
            .iter()
            .filter_map(super::topology::read_summary)
            .collect(),
        fragmentation: super::fragmentation::read_fragmentation(status.fragmentation.as_ref()),
        quotas: super::quotas::read_quotas(status),
        utilization: status
            .utilization
            .as_ref()
            .map(|u| super::utilization::read_utilization(u, &status.namespaces)),
        idle: status
            .nodes
            .iter()
            .filter_map(|n| {
                let list: Vec<_> = n
                    .idle
                    .iter()
                    .filter_map(super::utilization::read_idle_entry)
                    .collect();
                (!list.is_empty()).then(|| (n.name.clone(), list.into()))
            })
            .collect(),
    }
}

/// A namespace's totals as published.
fn published_namespace(n: &NamespaceUsage) -> NamespaceTotals {
    NamespaceTotals {
        name: n.name.clone(),
        allocated: n.allocated.clone(),
        pending_pods: n.pending_pods,
        pending: n.pending.clone(),
        gpu_equivalents_milli: n
            .gpu_equivalents
            .as_deref()
            .and_then(Equivalent::parse_decimal),
        gpu_equivalents_by_product: n
            .gpu_equivalents_by_product
            .iter()
            .filter_map(|(product, text)| Some((product.clone(), Equivalent::parse_decimal(text)?)))
            .collect(),
    }
}

/// A product's totals as published.
fn published_product(p: &ProductSummary) -> ProductTotals {
    ProductTotals {
        name: p.name.clone(),
        vendor: p.vendor.as_deref().and_then(vendor::by_name),
        nodes: p.nodes,
        gpus: p.gpus,
        free_gpus: p.free_gpus,
        occupancy: Occupancy {
            whole_free: p.whole_free_gpus,
            partly_free: p.partly_free_gpus,
            fully_held: p.fully_held_gpus,
        },
        nodes_with_free_gpus: p
            .nodes_with_free_gpus
            .iter()
            .map(|fit| JobFit {
                at_least: fit.at_least,
                nodes: fit.nodes,
            })
            .collect(),
    }
}

fn published_node(entry: &GpuNodeEntry) -> NodeInventory {
    let amounts = |list: &BTreeMap<String, String>| {
        list.iter()
            .map(|(name, q)| (name.clone(), Amount::parse(q.as_str())))
            .collect()
    };
    NodeInventory {
        name: entry.name.clone(),
        vendor: entry.vendor.as_deref().and_then(Vendor::from_name),
        // The entry does not carry them; events do not need them.
        device_resources: Vec::new(),
        ready: entry.ready,
        product: entry.product.clone(),
        product_from_dra: entry.derived_from.get("product").map(String::as_str)
            == Some(PRODUCT_FROM_DRA),
        count: entry.count,
        memory_mib: entry.memory_mib,
        workload_config: entry.workload_config.clone(),
        sharing: entry.sharing.as_ref().map(|s| Sharing {
            strategy: s.strategy.clone(),
            replicas: s.replicas,
            renamed_resource: s.renamed_resource,
        }),
        mig: entry.mig.as_ref().map(|m| Mig {
            strategy: m.strategy.clone(),
            config: m.config.clone(),
            config_state: m.config_state.clone(),
            count_meaning: m.count_meaning.clone(),
            devices: m
                .devices
                .iter()
                .map(|d| MigProfile {
                    profile: d.profile.clone(),
                    count: d.count,
                    memory_mib: d.memory_mib,
                    resource: d.resource.clone(),
                })
                .collect(),
        }),
        capacity: amounts(&entry.capacity),
        allocatable: amounts(&entry.allocatable),
        allocated: entry.allocated.clone().into_iter().collect(),
        free: entry.free.clone().into_iter().collect(),
        holdings: Vec::new(),
        // The entry carries the counts of neither (products[] carries the occupancy).
        shared_gpus: Vec::new(),
        occupancy: Default::default(),
        unschedulable: entry.unschedulable,
        sources: entry
            .sources
            .iter()
            .filter_map(|s| Source::ALL.into_iter().find(|k| k.as_str() == s))
            .collect(),
        derived_from: entry.derived_from.clone().into_iter().collect(),
        notes: entry.notes.clone(),
        issues: entry
            .issues
            .iter()
            .filter_map(|i| Some(Issue::new(i.reason.parse().ok()?, i.message.clone())))
            .collect(),
        devices: Vec::new(),
        dra_extended: entry.dra_extended_resources.clone(),
        still_fit: entry.still_fit.clone(),
        topology: super::topology::read_places(&entry.topology),
        // Not on the wire; the events do not read them.
        blocking_taints: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::NodeIssue;
    use crate::inventory::model::IssueReason;
    use crate::inventory::test_support::{entry, inventory};
    use crate::publish::content::wire::node_entry::{Detail, node_entry};

    #[test]
    fn a_published_status_reads_back_what_the_events_and_metrics_compare() {
        let mut node = entry("a", false, 8, &[IssueReason::NotReady]);
        node.product = Some("NVIDIA-H100-80GB-HBM3".into());
        node.allocated =
            crate::inventory::model::ResourceMap::from_iter([("nvidia.com/gpu".to_owned(), 2)]);
        let model = inventory(vec![node]);
        let mut status = crate::crd::GpuInventoryStatus {
            total_gpu_nodes: 1,
            total_gpus: 8,
            nodes: vec![node_entry(&model.nodes[0], &[], Detail::Counts)],
            ..Default::default()
        };
        status.nodes[0].issues.push(NodeIssue {
            reason: "FromANewerVersion".into(),
            message: "unknown here".into(),
            severity: "Degraded".into(),
            since: None,
        });
        status.products = vec![crate::crd::ProductSummary {
            name: "NVIDIA-H100-80GB-HBM3".into(),
            vendor: Some("nvidia".into()),
            nodes: 1,
            gpus: 8,
            free_gpus: 0,
            whole_free_gpus: 0,
            partly_free_gpus: 2,
            fully_held_gpus: 6,
            nodes_with_free_gpus: vec![crate::crd::FreeGpuNodes {
                at_least: 1,
                nodes: 0,
            }],
        }];
        let back = published_inventory(&status);
        assert_eq!(back.products[0].vendor, Some("nvidia"));
        assert_eq!(
            back.products[0].occupancy,
            Occupancy {
                whole_free: 0,
                partly_free: 2,
                fully_held: 6
            }
        );
        assert_eq!(
            back.products[0].nodes_with_free_gpus,
            [JobFit {
                at_least: 1,
                nodes: 0
            }]
        );
        assert_eq!(
            back.nodes[0].issues, model.nodes[0].issues,
            "unknown reasons are left out"
        );
        assert_eq!(back.nodes[0].allocated, model.nodes[0].allocated);
        assert_eq!(back.nodes[0].product, model.nodes[0].product);
        assert_eq!((back.total_gpu_nodes, back.total_gpus), (1, 8));
    }
}
