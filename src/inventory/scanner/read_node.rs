//! The one path that reads a node: the vendor tables sense it, identify its vendor, and that vendor's table
//! reads it; the entry is made, its DRA devices merged and its issues found alike for every vendor.

use super::diagnose::{self, Evidence, Facts};
use super::dra_devices;
use super::scan_scope::ScanScope;
use crate::inventory::cluster_node::{ClusterNode, Condition};
use crate::inventory::dra::DraNode;
use crate::inventory::health::{self, HealthReading};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{
    Amount, Issue, IssueReason, NodeInventory, ResourceMap, SharedGpu, Sharing, Source, Vendor,
};
use crate::inventory::resources::accelerator_resources;
use crate::inventory::vendors::sharing_layer::LayerList;
use crate::inventory::vendors::vendor_table::{NodeResources, Reading, Sensed, Unit, VendorTable};
use crate::inventory::vendors::{self, Identified};

/// The node's entry when it is a GPU node, else `None`: `scope` says what the other nodes show, `dra` is
/// what the node publishes as DRA devices, if anything. Holdings are the allocation's, so none yet.
pub fn scan_node_in(
    node: &ClusterNode,
    scope: ScanScope,
    dra: Option<DraNode>,
) -> Option<NodeInventory> {
    let mut labels = LabelReader::new(Some(&node.labels));
    let capacity = accelerator_resources(node.capacity.as_ref());
    let allocatable = accelerator_resources(node.allocatable.as_ref());
    let taints = taints(node);
    let resources = NodeResources {
        capacity: &capacity,
        allocatable: &allocatable,
        taints: &taints,
    };
    let mut senses = sense(node, scope, &mut labels, &resources);
    let identity = identify(node, scope, &labels, &resources, dra.as_ref(), &senses)?;
    let (reading, zero_devices) = read(scope, &identity, &mut labels, &resources, &mut senses);
    let (mut entry, findings) = entry_of(
        node,
        scope,
        &identity,
        reading,
        Advertised {
            capacity,
            allocatable,
            taints,
        },
        zero_devices,
        senses.health,
    );
    note_gaps(node, &identity, &mut labels, findings.ready_condition);
    entry.workload_config = identity
        .table
        .workload_label()
        .and_then(|key| labels.text(key))
        .map(str::to_owned);
    Some(diagnose(
        node,
        scope,
        identity.table,
        entry,
        dra,
        labels,
        findings,
    ))
}

/// What the tables and the health signals find on a node before it has a vendor.
struct Senses {
    /// Each table's findings, in table order: the one of the table that reads the node goes to its reading.
    by_table: Vec<Option<Sensed>>,
    /// The node's published health (the monitors' conditions, the GPU operator's labels, the taints).
    health: HealthReading,
}

/// The node's vendor, the table that reads it, and the sharing layers' lists of its devices.
struct Identity {
    identified: Identified,
    table: &'static dyn VendorTable,
    layers: Vec<LayerList>,
}

/// What the node advertises, moved into its entry once the tables have read it.
struct Advertised {
    capacity: ResourceMap<Amount>,
    allocatable: ResourceMap<Amount>,
    taints: Vec<(String, String, String)>,
}

/// What the reading found beyond the entry, for the diagnosis.
struct Findings<'n> {
    /// The node's Ready condition, if it reports one.
    ready_condition: Option<&'n Condition>,
    /// The node's published health.
    health: HealthReading,
    /// A cloud provider's label describes the node's devices.
    cloud: bool,
    /// Devices a vendor component labels unhealthy, in words.
    unhealthy: Vec<String>,
    /// The vendor table's own issues.
    issues: Vec<Issue>,
    /// The vendor's device resources advertised at 0.
    zero_devices: Vec<String>,
}

/// Sense: what each table finds before attribution is read first (its notes come before the health
/// signals'), then the node's published health.
fn sense(
    node: &ClusterNode,
    scope: ScanScope,
    labels: &mut LabelReader<'_>,
    resources: &NodeResources<'_>,
) -> Senses {
    let by_table = scope
        .vendors
        .iter()
        .map(|table| table.sense(labels, resources))
        .collect();
    let health = health::read(
        labels,
        node.conditions(),
        resources.taints,
        node.unschedulable,
        scope.health,
    );
    Senses { by_table, health }
}

/// Identify: the node's vendor and the table that reads it; `None` when it is no accelerator node.
fn identify(
    node: &ClusterNode,
    scope: ScanScope,
    labels: &LabelReader<'_>,
    resources: &NodeResources<'_>,
    dra: Option<&DraNode>,
    senses: &Senses,
) -> Option<Identity> {
    let tables = scope.vendors;
    let published = &senses.health;
    // A table that senses its vendor's devices also counts a health signal naming that vendor.
    let sensed_vendor = tables
        .iter()
        .zip(&senses.by_table)
        .find(|(table, found)| {
            found
                .as_ref()
                .is_some_and(|found| found.present || published.vendor == Some(table.vendor()))
        })
        .map(|(table, _)| table.vendor());
    let drivers = dra_drivers(dra);
    let mut identified = vendors::identify(tables, labels, resources, &drivers, sensed_vendor);
    if identified.by_dra_only && dra.is_none() && published.known {
        // Known only by a health monitor's condition or an operator's labels: that vendor's node (or, when
        // the signal names no vendor, an accelerator node of unknown make).
        identified.vendor = published.vendor.unwrap_or(Vendor::Unknown);
        identified.by_dra_only = false;
    }
    let layers = vendors::sharing_layer::lists(node.registers.iter().map(|(k, v)| (&**k, &**v)));
    if identified.by_dra_only
        && dra.is_none()
        && let Some(vendor) = vendors::sharing_layer::vendor_of(&layers)
    {
        // Known only by a sharing layer's list of its devices (HAMi's annotation, no resource shown).
        identified.vendor = vendor;
        identified.by_dra_only = false;
    }
    let neutral_devices = resources
        .with_units(|name| vendors::unit_in(tables, name))
        .iter()
        .any(|(_, unit, _)| *unit == Unit::Device);
    if identified.by_dra_only && !neutral_devices && dra.is_none() {
        return None;
    }
    // A vendor's resources or labels describe the node, or only a vendor-neutral resource does: that
    // vendor's table reads it. A node only DRA describes (whose devices say everything the entry holds) is
    // read by the first table, NVIDIA's, as the first editions read it.
    let only_neutral = identified.vendor == Vendor::Unknown && neutral_devices;
    let table = if !identified.by_dra_only || only_neutral {
        vendors::table_of(tables, identified.vendor)
    } else {
        vendors::default_table(tables)
    };
    Some(Identity {
        identified,
        table,
        layers,
    })
}

/// The drivers of the node's DRA devices; pools without a device still say whose driver runs on the node.
fn dra_drivers(dra: Option<&DraNode>) -> Vec<&str> {
    let mut drivers: Vec<&str> = dra
        .into_iter()
        .flat_map(|d| d.devices.iter().map(|device| device.driver.as_str()))
        .collect();
    if drivers.is_empty() {
        drivers.extend(
            dra.into_iter()
                .flat_map(|d| d.drivers.iter().map(String::as_str)),
        );
    }
    drivers
}

/// Read: the vendor's table reads the node (with what it sensed), the instance type and a sharing layer's
/// list fill in what its signals leave out. Also returns the vendor's device resources advertised at 0.
fn read(
    scope: ScanScope,
    identity: &Identity,
    labels: &mut LabelReader<'_>,
    resources: &NodeResources<'_>,
    senses: &mut Senses,
) -> (Reading, Vec<String>) {
    let table = identity.table;
    let own_sensed = scope
        .vendors
        .iter()
        .position(|t| t.vendor() == table.vendor())
        .and_then(|i| senses.by_table[i].take());
    let mut reading = table.read(labels, resources, own_sensed);
    let zero_devices: Vec<String> = vendors::zero_devices(table, resources)
        .into_iter()
        .map(str::to_owned)
        .collect();
    fill_from_instance_type(&mut reading, labels, table, zero_devices.is_empty());
    read_sharing_layer(
        &mut reading,
        labels,
        &identity.layers,
        identity.identified.vendor,
    );
    (reading, zero_devices)
}

/// The node's entry from the reading: what it is, where each value was read, what it advertises, its place;
/// what the entry does not hold goes on to the diagnosis.
fn entry_of<'n>(
    node: &'n ClusterNode,
    scope: ScanScope,
    identity: &Identity,
    reading: Reading,
    advertised: Advertised,
    zero_devices: Vec<String>,
    health: HealthReading,
) -> (NodeInventory, Findings<'n>) {
    let table = identity.table;
    let mut derived_from = ResourceMap::new();
    let mut derive = |field: &str, from: Option<String>| {
        if let Some(from) = from.filter(|from| Some(from.as_str()) != table.own_label(field)) {
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
    let sources = sources(reading.cloud, reading.labelled, &advertised, &zero_devices);
    let ready_condition = node.ready_condition();
    let entry = NodeInventory {
        name: node.name.to_string(),
        vendor: Some(identity.identified.vendor),
        device_resources: reading.device_resources,
        ready: ready_condition.is_some_and(|c| c.status == "True"),
        product,
        count,
        memory_mib,
        sharing: reading.sharing,
        shared_gpus: reading.shared_gpus,
        mig: reading.partitions,
        unschedulable: node.unschedulable,
        sources,
        derived_from,
        topology: scope.topology.read(&node.labels),
        blocking_taints: advertised
            .taints
            .iter()
            .filter(|(_, _, effect)| effect == "NoSchedule" || effect == "NoExecute")
            .cloned()
            .collect(),
        capacity: advertised.capacity,
        allocatable: advertised.allocatable,
        ..Default::default()
    };
    let findings = Findings {
        ready_condition,
        health,
        cloud: reading.cloud,
        unhealthy: reading.unhealthy,
        issues: reading.issues,
        zero_devices,
    };
    (entry, findings)
}

/// Where the entry was read from: a cloud's labels, the device plugin, the vendor's labels.
fn sources(
    cloud: bool,
    labelled: bool,
    advertised: &Advertised,
    zero_devices: &[String],
) -> Vec<Source> {
    let positive = |list: &ResourceMap<Amount>| list.values().any(Amount::is_positive);
    let mut sources = Vec::new();
    if cloud {
        sources.push(Source::Cloud);
    }
    // A device resource at 0 is the device plugin's word too: it registered the resource.
    if positive(&advertised.capacity)
        || positive(&advertised.allocatable)
        || !zero_devices.is_empty()
    {
        sources.push(Source::DevicePlugin);
    }
    if labelled {
        sources.push(Source::Labels);
    }
    sources
}

/// Notes what the entry cannot say: other vendors' devices it does not count, and what a node object
/// without its status leaves unknown.
fn note_gaps(
    node: &ClusterNode,
    identity: &Identity,
    labels: &mut LabelReader<'_>,
    ready_condition: Option<&Condition>,
) {
    let table = identity.table;
    if table.notes_other_vendors() {
        for other in &identity.identified.also {
            labels.note(format!(
                "the node also advertises {other} resources: they are listed and allocated, but its devices \
                 are counted as {}'s only (one vendor per node)",
                identity.identified.vendor
            ));
        }
    }
    if node.from_slices_only {
        labels.note(
            "the Node object was not in the input: only its ResourceSlices name the node, so its labels, \
             resources and readiness are unknown"
                .to_owned(),
        );
    } else if node.conditions.is_none() {
        labels.note(diagnose::NO_CONDITIONS_NOTE.to_owned());
    } else if ready_condition.is_none() {
        labels.note(diagnose::NO_READY_NOTE.to_owned());
    }
    if node.allocatable.is_none() && !node.from_slices_only {
        labels.note(format!(
            "the object has no status.allocatable (a partial dump?): whether its {} are allocatable is unknown",
            table.devices_word()
        ));
    }
}

/// Diagnose: the entry takes its DRA devices, then one diagnosis words its issues for every vendor, with
/// the table's, the health signals', DRA's and the labels' own; the notes go on the entry.
fn diagnose(
    node: &ClusterNode,
    scope: ScanScope,
    table: &dyn VendorTable,
    mut entry: NodeInventory,
    dra: Option<DraNode>,
    labels: LabelReader<'_>,
    findings: Findings<'_>,
) -> NodeInventory {
    let served_by_dra = dra.as_ref().is_some_and(DraNode::serves_gpus);
    let empty_pools: Vec<String> = dra
        .as_ref()
        // An incomplete pool is told as such (DraPoolIncomplete): its devices may be in the slices to come.
        .filter(|d| d.devices.is_empty() && d.issues.is_empty())
        .map(|d| d.drivers.iter().cloned().collect())
        .unwrap_or_default();
    let dra_issues = dra.as_ref().map(|d| d.issues.clone()).unwrap_or_default();
    if let Some(dra) = dra {
        dra_devices::merge(&mut entry, dra);
    }
    let facts = Facts {
        ready_condition: findings.ready_condition,
        allocatable_known: node.allocatable.is_some(),
        labeller_in_scope: scope.labelled(table.vendor()),
        cloud_says_devices: findings.cloud,
        served_by_dra,
        cordon_explained: findings.health.cordon_explained,
        unhealthy: findings.unhealthy,
        evidence: Evidence {
            labels: &labels,
            conditions: node.conditions(),
            table: scope.health,
        },
    };
    let mut issues = diagnose::diagnose(&entry, table, facts);
    issues.extend(findings.issues);
    issues.extend(findings.health.issues);
    issues.extend(dra_issues);
    if let Some(empty) = empty_pools_issue(&entry, table, &empty_pools, &issues) {
        issues.push(empty);
    }
    if let Some(gone) = devices_gone(table, &findings.zero_devices, &issues) {
        // The more precise of the two: the resource is there, at 0, not missing.
        issues.retain(|i| i.reason != IssueReason::GpuResourcesMissing);
        issues.push(gone);
    }
    let (invalid, notes) = labels.finish();
    issues.extend(invalid);
    if table.orders_issues_by_reason() {
        let rank = |r: IssueReason| IssueReason::ALL.iter().position(|x| *x == r);
        issues.sort_by_key(|i| rank(i.reason));
    }
    entry.issues = issues;
    entry.notes = notes;
    entry
}

/// `GpuResourcesMissing` of a node whose DRA driver publishes its pool with no device, unless the node
/// counts devices or another issue already says so.
fn empty_pools_issue(
    entry: &NodeInventory,
    table: &dyn VendorTable,
    empty_pools: &[String],
    issues: &[Issue],
) -> Option<Issue> {
    if empty_pools.is_empty()
        || entry.count != 0
        || issues
            .iter()
            .any(|i| i.reason == IssueReason::GpuResourcesMissing)
    {
        return None;
    }
    Some(Issue::new(
        IssueReason::GpuResourcesMissing,
        format!(
            "the DRA driver {} publishes the node's pool with no device: it found no {} on the node (check \
             the driver's kubelet plugin log, and the driver and devices on the node)",
            empty_pools.join(", "),
            table.devices_word()
        ),
    ))
}

/// What the node's instance type says, where the vendor's own signals say nothing: the model, the memory,
/// and the count unless the device plugin advertises the devices at 0 (then they are gone, not unknown).
fn fill_from_instance_type(
    reading: &mut Reading,
    labels: &LabelReader<'_>,
    table: &dyn VendorTable,
    count_unknown: bool,
) {
    let Some(instance) =
        vendors::instance_types::of_node(labels).filter(|i| i.vendor == table.vendor())
    else {
        return;
    };
    let from = instance.derived_from();
    if let (None, Some(product)) = (&reading.product, instance.product) {
        reading.product = Some((product.to_owned(), Some(from.clone())));
        reading.cloud = true;
    }
    if count_unknown && reading.count.as_ref().is_none_or(|(n, _)| *n == 0) {
        reading.count = Some((instance.count, from.clone()));
        reading.cloud = true;
    }
    if let (None, Some(mib)) = (&reading.memory_mib, instance.memory_mib) {
        reading.memory_mib = Some((mib, from));
    }
}

/// A sharing layer's list of the node's physical devices (HAMi's, Volcano's): the count is the devices it
/// lists, never the shares the device resource advertises; a device it flags unhealthy is named. A list
/// that cannot be read leaves the count unknown rather than the shares.
fn read_sharing_layer(
    reading: &mut Reading,
    labels: &mut LabelReader<'_>,
    layers: &[LayerList],
    vendor: Vendor,
) {
    reading
        .unhealthy
        .extend(vendors::sharing_layer::others_unhealthy(
            layers,
            vendor.name(),
        ));
    let Some(found) = vendors::sharing_layer::own(layers, vendor.name()) else {
        return;
    };
    // The model the list names: its first device's (of a list cut short, the first record's).
    let model = match found.error {
        None => found.devices.iter().find_map(|d| d.model.clone()),
        Some(_) => found.devices.first().and_then(|d| d.model.clone()),
    };
    if reading.product.is_none()
        && let Some(model) = model
    {
        reading.product = Some((model, Some(found.key.clone())));
    }
    // The memory the layer's shares are limited out of (a share's GPU-equivalent is its limit over it).
    if reading.memory_mib.is_none()
        && let Some(mib) = found.devices.iter().find_map(|d| d.memory_mib)
    {
        reading.memory_mib = Some((mib, found.key.clone()));
    }
    if let Some(why) = &found.error {
        labels.note(format!(
            "{} cannot be read ({why}): the node's physical devices under the sharing layer's shares are \
             unknown, and its device resource counts shares, not devices",
            found.key
        ));
        reading.count = None;
        return;
    }
    let n = found.devices.len() as u64;
    let shares: u64 = found.devices.iter().map(|d| d.shares).sum();
    reading.count = Some((
        n,
        format!(
            "{} ({}: {n} devices split into {shares} shares)",
            found.key, found.layer
        ),
    ));
    reading.shared_gpus = found
        .devices
        .iter()
        .map(|d| SharedGpu {
            id: d.id.clone(),
            memory_mib: d.memory_mib,
            slots: Some(d.shares).filter(|s| *s > 0),
            healthy: d.healthy,
            parts: Vec::new(),
        })
        .collect();
    if reading.sharing.is_none() {
        reading.sharing = Some(Sharing {
            strategy: Some(found.layer.to_owned()),
            replicas: found.devices.iter().map(|d| d.shares).max(),
            renamed_resource: false,
        });
    }
    reading.unhealthy.extend(
        found
            .devices
            .iter()
            .filter(|d| !d.healthy)
            .map(|d| format!("{} ({}: unhealthy)", d.id, found.key)),
    );
}

/// `GpuDevicesGone`: the vendor's device resource advertised at 0 with nothing of the vendor beside it, unless
/// another issue already explains it (the GPU operator switched off on the node).
fn devices_gone(table: &dyn VendorTable, gone: &[String], issues: &[Issue]) -> Option<Issue> {
    if gone.is_empty()
        || issues
            .iter()
            .any(|i| i.reason == IssueReason::OperandsDisabled)
    {
        return None;
    }
    Some(Issue::new(
        IssueReason::GpuDevicesGone,
        format!(
            "{} advertised at 0: the kubelet keeps a device resource once a device plugin registered it, so the \
             node had {} and now offers none: the device plugin lost them (driver unloaded, devices fell off \
             the bus, plugin crash-looping) or something else holds them (VM passthrough); check the device \
             plugin's pod and the kernel log on the node",
            gone.join(", "),
            table.devices_word()
        ),
    ))
}

/// The node's taints as (key, value, effect).
fn taints(node: &ClusterNode) -> Vec<(String, String, String)> {
    node.taints
        .iter()
        .map(|t| (t.key.to_string(), t.value.to_string(), t.effect.to_string()))
        .collect()
}
