//! The entry of a node whose accelerators another vendor than NVIDIA makes: what its vendor module read,
//! its DRA devices, and the issues every vendor shares (the same reasons for the same problems).

use std::collections::BTreeMap;

use crate::inventory::cluster_node::{ClusterNode, Condition};

use super::diagnose::{
    Evidence, gpu_sum, issue, not_ready_message, nothing_advertised, resources_missing,
    unschedulable, withdrawn_resources,
};
use super::dra_devices;
use super::labels::LabelReader;
use crate::inventory::dra::DraNode;
use crate::inventory::health::{HealthReading, HealthTable};
use crate::inventory::model::{Issue, IssueReason, NodeInventory, Source, Vendor};
use crate::inventory::vendors::{NodeResources, Reading};

/// What the entry needs beyond the reading.
pub(super) struct Facts<'a> {
    /// Who makes the node's accelerators.
    pub(super) vendor: Vendor,
    /// Other vendors whose resources the node also advertises.
    pub(super) also: Vec<Vendor>,
    /// The node's Ready condition.
    pub(super) ready_condition: Option<&'a Condition>,
    /// The object has a `status.allocatable` block (a partial dump may not).
    pub(super) allocatable_known: bool,
    /// The object shows conditions (a trimmed dump may not: readiness unknown, not NotReady).
    pub(super) status_known: bool,
    /// Some node in scope carries this vendor's labels.
    pub(super) labeller_in_scope: bool,
    /// Which node conditions are GPU health (to say why a node counts as a GPU node).
    pub(super) table: &'a HealthTable,
}

/// The node's entry.
pub(super) fn entry(
    node: &ClusterNode,
    mut labels: LabelReader<'_>,
    reading: Reading,
    resources: &NodeResources<'_>,
    facts: Facts<'_>,
    dra: Option<DraNode>,
    published: HealthReading,
) -> NodeInventory {
    let mut derived_from = BTreeMap::new();
    let mut derive = |field: &str, from: Option<String>| {
        if let Some(from) = from {
            derived_from.insert(field.to_owned(), from);
        }
    };
    let product = reading.product.map(|(product, from)| {
        derive("product", from);
        product
    });
    let count = reading.count.map_or(0, |(count, from)| {
        derive("count", Some(from));
        count
    });
    let memory_mib = reading.memory_mib.map(|(mib, from)| {
        derive("memoryMiB", Some(from));
        mib
    });
    for other in &facts.also {
        labels.note(format!(
            "the node also advertises {other} resources: they are listed and allocated, but its devices are \
             counted as {}'s only (one vendor per node)",
            facts.vendor
        ));
    }
    let mut sources = Vec::new();
    let positive =
        |m: &BTreeMap<_, crate::inventory::model::Amount>| m.values().any(|a| a.is_positive());
    if positive(resources.capacity) || positive(resources.allocatable) {
        sources.push(Source::DevicePlugin);
    }
    if reading.labelled {
        sources.push(Source::Labels);
    }
    let mut entry = NodeInventory {
        name: node.name.to_string(),
        vendor: Some(facts.vendor),
        device_resources: reading.device_resources,
        ready: facts.ready_condition.is_some_and(|c| c.status == "True"),
        product,
        count,
        memory_mib,
        sharing: reading.sharing,
        mig: reading.partitions,
        capacity: resources.capacity.clone(),
        allocatable: resources.allocatable.clone(),
        unschedulable: node.unschedulable,
        sources,
        derived_from,
        ..Default::default()
    };
    if !facts.status_known {
        labels.note(super::NO_CONDITIONS_NOTE.to_owned());
    }
    if !facts.allocatable_known {
        labels.note(
            "the object has no status.allocatable (a partial dump?): whether its devices are allocatable is unknown"
                .to_owned(),
        );
    }
    let served_by_dra = dra.as_ref().is_some_and(DraNode::serves_gpus);
    let mut issues = Vec::new();
    if let Some(dra) = dra {
        issues.extend(dra.issues.iter().cloned());
        dra_devices::merge(&mut entry, dra);
    }
    let node_labels = LabelReader::new(Some(&node.labels));
    let evidence = Evidence {
        labels: &node_labels,
        conditions: node.conditions(),
        table: facts.table,
    };
    let mut own = diagnose(
        &entry,
        &facts,
        served_by_dra,
        reading.unhealthy,
        (&published, evidence),
    );
    own.extend(reading.issues);
    own.extend(published.issues);
    own.extend(issues);
    let (invalid, notes) = labels.finish();
    own.extend(invalid);
    entry.issues = ordered(own);
    entry.notes = notes;
    entry
}

/// The issues every vendor shares, worded for the node's vendor.
fn diagnose(
    entry: &NodeInventory,
    facts: &Facts<'_>,
    served_by_dra: bool,
    unhealthy: Vec<String>,
    (published, evidence): (&HealthReading, Evidence<'_>),
) -> Vec<Issue> {
    let vendor = facts.vendor;
    let mut issues = Vec::new();
    if !entry.ready && facts.status_known {
        let since = facts
            .ready_condition
            .and_then(|c| c.last_transition_time.as_ref())
            .map(|t| t.to_string());
        issues.push(
            issue(
                IssueReason::NotReady,
                not_ready_message(facts.ready_condition),
            )
            .since(since),
        );
    }
    if entry.product.is_none() && facts.labeller_in_scope && !served_by_dra {
        issues.push(issue(
            IssueReason::GpuLabelsMissing,
            format!(
                "{vendor} accelerator node without a label naming its model, while other nodes in this \
                 inventory's scope carry {vendor}'s labels: the vendor's labeller has not labelled this node \
                 (check its pod on this node)"
            ),
        ));
    }
    let repartitioning = entry
        .mig
        .as_ref()
        .is_some_and(|m| m.config_state.as_deref() == Some("pending"));
    if facts.allocatable_known && !repartitioning && !served_by_dra {
        let allocatable = gpu_sum(&entry.allocatable);
        if entry.ready && entry.count > 0 && allocatable == 0.0 {
            issues.push(issue(
                IssueReason::GpusNotAllocatable,
                format!(
                    "the node has {} {vendor} device(s) ({}) but no device resource is allocatable: {vendor}'s \
                     device plugin is not advertising them (not running or not registered, or every device \
                     unhealthy)",
                    entry.count,
                    entry
                        .derived_from
                        .get("count")
                        .map_or("its labels", String::as_str)
                ),
            ));
        } else if entry.ready && entry.count == 0 && nothing_advertised(entry) {
            let resource = entry
                .device_resources
                .first()
                .map_or_else(|| format!("{vendor} device resource"), Clone::clone);
            issues.push(resources_missing(entry, &resource, Some(evidence)));
        } else {
            let mut withdrawn = withdrawn_resources(&entry.capacity, &entry.allocatable);
            withdrawn.extend(unhealthy);
            if !withdrawn.is_empty() {
                issues.push(issue(
                    IssueReason::GpusUnhealthy,
                    format!(
                        "{}: {vendor}'s device plugin or health checks withdrew unhealthy devices",
                        withdrawn.join(", ")
                    ),
                ));
            }
        }
    }
    if entry.unschedulable && !published.cordon_explained {
        issues.push(unschedulable("devices"));
    }
    issues
}

/// Issues in the order `IssueReason::ALL` lists them (the NVIDIA path's order), stable within a reason.
fn ordered(mut issues: Vec<Issue>) -> Vec<Issue> {
    let rank = |r: IssueReason| IssueReason::ALL.iter().position(|x| *x == r);
    issues.sort_by_key(|i| rank(i.reason));
    issues
}
