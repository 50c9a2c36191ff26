//! The model as the CRDs' wire types: the only place `GpuNodeEntry` and its parts are made from the core's
//! values. Reason strings, claim names and taint texts are spelled here.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::crd::{
    DraDeviceEntry, FreeGpuNodes, GpuInventoryStatus, GpuNodeEntry, GpuSharing, MigDevice, MigInfo,
    NamespaceUsage, NodeIssue, ProblemNode, ProductSummary, ResourceSummary,
};
use crate::inventory::conditions::{InventoryCondition, inventory_conditions};
use crate::inventory::model::{
    Amount, Device, Inventory, Issue, JobFit, Mig, MigProfile, NamespaceTotals, NodeInventory,
    ProductTotals, ResourceTotals, Sharing, Source, Vendor,
};
use crate::inventory::scanner::PRODUCT_FROM_DRA;
use crate::inventory::vendors as vendor;

/// How much of a node an entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Counts only: the GpuInventory's `nodes[]` and the ConfigMap (thousands of nodes' devices would not
    /// fit one object).
    Counts,
    /// With the DRA devices one by one: the node's GpuNode and `scan`.
    Devices,
}

/// A node's entry.
pub fn node_entry(node: &NodeInventory, detail: Detail) -> GpuNodeEntry {
    GpuNodeEntry {
        name: node.name.clone(),
        ready: node.ready,
        vendor: vendor::vendor_of(node).map(str::to_owned),
        product: node.product.clone(),
        count: node.count,
        memory_mib: node.memory_mib,
        workload_config: node.workload_config.clone(),
        sharing: node.sharing.as_ref().map(sharing),
        mig: node.mig.as_ref().map(mig),
        capacity: amounts(&node.capacity),
        allocatable: amounts(&node.allocatable),
        allocated: node.allocated.clone(),
        free: node.free.clone(),
        unschedulable: node.unschedulable,
        sources: node.sources.iter().map(|s| s.as_str().to_owned()).collect(),
        derived_from: node.derived_from.clone(),
        notes: node.notes.clone(),
        issues: node.issues.iter().map(issue).collect(),
        devices: match detail {
            Detail::Counts => Vec::new(),
            Detail::Devices => node.devices.iter().map(device).collect(),
        },
        dra_extended_resources: node.dra_extended.clone(),
        still_fit: node.still_fit.clone(),
    }
}

fn amounts(list: &BTreeMap<String, Amount>) -> BTreeMap<String, String> {
    list.iter()
        .map(|(name, q)| (name.clone(), q.text().to_owned()))
        .collect()
}

/// An issue: its reason as the API spells it.
pub fn issue(issue: &Issue) -> NodeIssue {
    NodeIssue {
        reason: issue.reason.as_str().to_owned(),
        message: issue.message.clone(),
        severity: issue.severity().as_str().to_owned(),
        since: issue.since.clone(),
    }
}

/// A DRA device: claims as `namespace/name`, taints as `key=value:effect`.
pub fn device(device: &Device) -> DraDeviceEntry {
    DraDeviceEntry {
        driver: device.driver.clone(),
        pool: device.pool.clone(),
        name: device.name.clone(),
        resource: device.resource.clone(),
        product: device.product.clone(),
        memory_mib: device.memory_mib,
        allocated_to: device.claims.iter().map(ToString::to_string).collect(),
        free: device.free,
        taints: device.taints.iter().map(ToString::to_string).collect(),
        pool_incomplete: device.pool_incomplete,
        capacity: quantities(device.shared.as_ref().map(|s| &s.total)),
        consumed_capacity: quantities(device.shared.as_ref().map(|s| &s.consumed)),
    }
}

/// Capacities as quantities (empty for `None`).
fn quantities(values: Option<&BTreeMap<String, i128>>) -> BTreeMap<String, String> {
    values
        .into_iter()
        .flatten()
        .map(|(name, v)| (name.clone(), quantity_text(*v)))
        .collect()
}

/// A capacity as a quantity: the largest binary suffix that divides it (`85899345920` -> `80Gi`), else the
/// plain number.
fn quantity_text(value: i128) -> String {
    const SUFFIXES: [(&str, i128); 4] = [
        ("Ti", 1 << 40),
        ("Gi", 1 << 30),
        ("Mi", 1 << 20),
        ("Ki", 1 << 10),
    ];
    SUFFIXES
        .iter()
        .find(|(_, unit)| value != 0 && value % unit == 0)
        .map(|(suffix, unit)| format!("{}{suffix}", value / unit))
        .unwrap_or_else(|| value.to_string())
}

fn sharing(sharing: &Sharing) -> GpuSharing {
    GpuSharing {
        strategy: sharing.strategy.clone(),
        replicas: sharing.replicas,
        renamed_resource: sharing.renamed_resource,
    }
}

fn mig(mig: &Mig) -> MigInfo {
    MigInfo {
        strategy: mig.strategy.clone(),
        config: mig.config.clone(),
        config_state: mig.config_state.clone(),
        count_meaning: mig.count_meaning.clone(),
        devices: mig
            .devices
            .iter()
            .map(|d| MigDevice {
                profile: d.profile.clone(),
                count: d.count,
                memory_mib: d.memory_mib,
                resource: d.resource.clone(),
            })
            .collect(),
    }
}

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

/// A namespace's holdings and demand.
pub fn namespace(totals: &NamespaceTotals) -> NamespaceUsage {
    NamespaceUsage {
        name: totals.name.clone(),
        allocated: totals.allocated.clone(),
        pending_pods: totals.pending_pods,
        pending: totals.pending.clone(),
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
        namespaces: status
            .namespaces
            .iter()
            .map(|n| NamespaceTotals {
                name: n.name.clone(),
                allocated: n.allocated.clone(),
                pending_pods: n.pending_pods,
                pending: n.pending.clone(),
            })
            .collect(),
        products: status
            .products
            .iter()
            .map(|p| ProductTotals {
                name: p.name.clone(),
                vendor: p.vendor.as_deref().and_then(vendor::by_name),
                nodes: p.nodes,
                gpus: p.gpus,
                free_gpus: p.free_gpus,
                nodes_with_free_gpus: p
                    .nodes_with_free_gpus
                    .iter()
                    .map(|fit| JobFit {
                        at_least: fit.at_least,
                        nodes: fit.nodes,
                    })
                    .collect(),
            })
            .collect(),
        nodes: status
            .nodes
            .iter()
            .map(|n| std::sync::Arc::new(published_node(n)))
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
        allocated: entry.allocated.clone(),
        free: entry.free.clone(),
        holdings: Vec::new(),
        unschedulable: entry.unschedulable,
        sources: entry
            .sources
            .iter()
            .filter_map(|s| Source::ALL.into_iter().find(|k| k.as_str() == s))
            .collect(),
        derived_from: entry.derived_from.clone(),
        notes: entry.notes.clone(),
        issues: entry
            .issues
            .iter()
            .filter_map(|i| Some(Issue::new(i.reason.parse().ok()?, i.message.clone())))
            .collect(),
        devices: Vec::new(),
        dra_extended: entry.dra_extended_resources.clone(),
        still_fit: entry.still_fit.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{ClaimRef, DeviceKind, DeviceTaint, IssueReason};
    use crate::inventory::test_support::{entry, inventory};

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

    #[test]
    fn capacities_read_as_quantities() {
        assert_eq!(quantity_text(80 << 30), "80Gi");
        assert_eq!(quantity_text(9856 << 20), "9856Mi");
        assert_eq!(quantity_text(1500), "1500");
        assert_eq!(quantity_text(0), "0");
    }

    #[test]
    fn the_edge_spells_reasons_claims_and_taints() {
        let mut node = entry("a", false, 1, &[IssueReason::NotReady]);
        node.devices = vec![Device {
            driver: "gpu.nvidia.com".into(),
            name: "gpu-0".into(),
            kind: DeviceKind::Whole,
            claims: vec![ClaimRef {
                namespace: "ml".into(),
                name: "train".into(),
            }],
            taints: vec![
                DeviceTaint {
                    key: "gpu.nvidia.com/xid".into(),
                    value: "79".into(),
                    effect: "NoSchedule".into(),
                    rule: None,
                },
                DeviceTaint {
                    key: "maintenance".into(),
                    value: String::new(),
                    effect: "NoExecute".into(),
                    rule: None,
                },
            ],
            ..Default::default()
        }];
        node.capacity = [("nvidia.com/gpu".to_owned(), Amount::parse("1k"))].into();
        let counts = node_entry(&node, Detail::Counts);
        assert_eq!(counts.issues[0].reason, "NotReady");
        assert!(counts.devices.is_empty(), "counts carry no devices");
        assert_eq!(
            counts.capacity["nvidia.com/gpu"], "1k",
            "as the node said it"
        );
        let wide = node_entry(&node, Detail::Devices);
        assert_eq!(wide.devices[0].allocated_to, ["ml/train"]);
        assert_eq!(
            wide.devices[0].taints,
            ["gpu.nvidia.com/xid=79:NoSchedule", "maintenance:NoExecute"]
        );
    }

    #[test]
    fn a_published_status_reads_back_what_the_events_and_metrics_compare() {
        let mut node = entry("a", false, 8, &[IssueReason::NotReady]);
        node.product = Some("NVIDIA-H100-80GB-HBM3".into());
        node.allocated = [("nvidia.com/gpu".to_owned(), 2)].into();
        let model = inventory(vec![node]);
        let mut status = crate::crd::GpuInventoryStatus {
            total_gpu_nodes: 1,
            total_gpus: 8,
            nodes: vec![node_entry(&model.nodes[0], Detail::Counts)],
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
            nodes_with_free_gpus: vec![crate::crd::FreeGpuNodes {
                at_least: 1,
                nodes: 0,
            }],
        }];
        let back = published_inventory(&status);
        assert_eq!(back.products[0].vendor, Some("nvidia"));
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
