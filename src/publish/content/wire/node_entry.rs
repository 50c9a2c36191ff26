//! A node's entry (`GpuNodeEntry`), the one shape every output lists a node in: the GpuNode's status, the
//! aggregate's `nodes[]`, the ConfigMap's keys and `scan`. Reason strings, claim names, taint texts and
//! quantities are spelled here.

use std::collections::BTreeMap;

use crate::crd::{
    DraDeviceEntry, GpuNodeEntry, GpuSharing, HolderEntry, MigDevice, MigInfo, NodeIssue,
};
use crate::inventory::model::{
    Amount, Device, Equivalent, Holder, Holding, IdleHolding, Issue, Mig, NodeInventory,
    ResourceMap, Sharing,
};
use crate::inventory::vendors as vendor;

/// How much of a node an entry carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    /// Counts only: the GpuInventory's `nodes[]` and the ConfigMap (thousands of nodes' devices would not
    /// fit one object, and their topology places grew the ConfigMap by half at 600 GPU nodes; the idle
    /// holdings are summed per namespace in `namespaces[].idle`).
    Counts,
    /// With the DRA devices one by one, the topology places and the idle holdings: the node's GpuNode and
    /// `scan`.
    Devices,
}

/// A node's entry, with its idle holdings (`Inventory::idle_of`, which `Detail::Counts` leaves out).
pub fn node_entry(node: &NodeInventory, idle: &[IdleHolding], detail: Detail) -> GpuNodeEntry {
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
        allocated: map_of(&node.allocated),
        free: map_of(&node.free),
        unschedulable: node.unschedulable,
        sources: node.sources.iter().map(|s| s.as_str().to_owned()).collect(),
        derived_from: map_of(&node.derived_from),
        notes: node.notes.clone(),
        issues: node.issues.iter().map(issue).collect(),
        devices: match detail {
            Detail::Counts => Vec::new(),
            Detail::Devices => node.devices.iter().map(device).collect(),
        },
        dra_extended_resources: node.dra_extended.clone(),
        still_fit: node.still_fit.clone(),
        topology: match detail {
            Detail::Counts => BTreeMap::new(),
            Detail::Devices => super::topology::places(&node.topology),
        },
        idle: match detail {
            Detail::Counts => Vec::new(),
            Detail::Devices => idle.iter().map(super::utilization::idle_entry).collect(),
        },
        gpu_equivalents: match detail {
            Detail::Counts => None,
            Detail::Devices => held_equivalents(node).map(Equivalent::decimal),
        },
        holders: match detail {
            Detail::Counts => Vec::new(),
            Detail::Devices => node.holdings.iter().filter_map(holder).collect(),
        },
    }
}

/// What the node's holdings add up to, in thousandths of a GPU (a device two claims share is counted once:
/// each claim holds its part of it).
fn held_equivalents(node: &NodeInventory) -> Option<u64> {
    node.holdings
        .iter()
        .filter_map(|h| h.equivalent)
        .map(|e| e.milli)
        .reduce(u64::saturating_add)
}

/// A holding with its GPU-equivalent, as the node's GpuNode lists it.
fn holder(holding: &Holding) -> Option<HolderEntry> {
    let part = holding.equivalent?;
    let (kind, namespace, name) = match &holding.holder {
        Holder::Pod { namespace, name } => ("Pod", namespace, name),
        Holder::Claim(claim) => ("ResourceClaim", &claim.namespace, &claim.name),
    };
    Some(HolderEntry {
        kind: kind.to_owned(),
        namespace: namespace.clone(),
        name: name.clone(),
        resource: holding.resource.clone(),
        amount: holding.amount,
        gpu_equivalents: Equivalent::decimal(part.milli),
        basis: part.basis.to_string(),
    })
}

/// A model map as the wire's `BTreeMap` (same order: both are sorted by name).
fn map_of<V: Clone>(map: &ResourceMap<V>) -> BTreeMap<String, V> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn amounts(list: &ResourceMap<Amount>) -> BTreeMap<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{ClaimRef, DeviceKind, DeviceTaint, Holder, IssueReason};
    use crate::inventory::test_support::entry;

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
        node.capacity = crate::inventory::model::ResourceMap::from_iter([(
            "nvidia.com/gpu".to_owned(),
            Amount::parse("1k"),
        )]);
        let idle = [IdleHolding {
            holder: Holder::Claim(ClaimRef {
                namespace: "ml".into(),
                name: "train".into(),
            }),
            resource: "gpu.nvidia.com/gpu".into(),
            amount: 1,
            equivalent_milli: Some(1000),
            idle_since: "2026-12-06T03:00:00Z".parse().expect("a time"),
        }];
        let counts = node_entry(&node, &idle, Detail::Counts);
        assert_eq!(counts.issues[0].reason, "NotReady");
        assert!(counts.devices.is_empty(), "counts carry no devices");
        assert!(counts.idle.is_empty(), "counts carry no idle holdings");
        assert_eq!(
            counts.capacity["nvidia.com/gpu"], "1k",
            "as the node said it"
        );
        let wide = node_entry(&node, &idle, Detail::Devices);
        assert_eq!(wide.devices[0].allocated_to, ["ml/train"]);
        assert_eq!(wide.idle, [super::super::utilization::idle_entry(&idle[0])]);
        assert_eq!(
            wide.devices[0].taints,
            ["gpu.nvidia.com/xid=79:NoSchedule", "maintenance:NoExecute"]
        );
    }
}
