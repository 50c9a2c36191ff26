//! The join: each idle series to the holding it belongs to, summed per holder, node and namespace.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::activity::{Activity, Reading};
use super::series::{IdleSeries, SeriesHolder};
use crate::inventory::model::{
    ClaimRef, Holder, Holding, IdleByNode, IdleHolding, NodeInventory, UtilizationReport,
    UtilizationState,
};

/// The join's result: the report for the inventory, and each node's idle holdings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assessment {
    /// For `Inventory::utilization`.
    pub report: UtilizationReport,
    /// For `Inventory::idle`.
    pub by_node: IdleByNode,
}

/// Joins the idle series with the nodes' holdings. An `Unknown` reading gives no figure at all: withheld,
/// not zero.
pub fn assess(nodes: &[Arc<NodeInventory>], activity: &Activity) -> Assessment {
    let mut report = report_of(activity);
    let Reading::Current(idle) = &activity.reading else {
        return Assessment {
            report,
            by_node: IdleByNode::new(),
        };
    };
    let index = SeriesIndex::of(idle);
    let mut by_node = IdleByNode::new();
    for node in nodes {
        let list = node_idle(node, idle, &index);
        if !list.is_empty() {
            add(&mut report, &list, 1);
            by_node.insert(node.name.clone(), Arc::from(list));
        }
    }
    Assessment { report, by_node }
}

/// The report of `activity` before any node is joined: its state, and why, or the rule.
pub(super) fn report_of(activity: &Activity) -> UtilizationReport {
    let (state, message) = match &activity.reading {
        Reading::Unknown(reason) => (UtilizationState::Unknown, reason.clone()),
        Reading::Current(_) => {
            let message = match &activity.held {
                Some(held) => format!("{}; {held}", activity.rule),
                None => activity.rule.clone(),
            };
            (UtilizationState::Current, message)
        }
    };
    UtilizationReport {
        source: activity.source.clone(),
        window: activity.window.clone(),
        state,
        message,
        ..UtilizationReport::default()
    }
}

/// Adds (`sign` 1) or takes back (`sign` -1) one node's idle holdings to the report's sums; a sum that
/// reaches 0 is removed.
pub(super) fn add(report: &mut UtilizationReport, list: &[IdleHolding], sign: i8) {
    fn apply(map: &mut BTreeMap<String, u64>, key: &str, amount: u64, sign: i8) {
        if sign > 0 {
            *map.entry(key.to_owned()).or_default() += amount;
        } else if let Some(sum) = map.get_mut(key) {
            *sum = sum.saturating_sub(amount);
            if *sum == 0 {
                map.remove(key);
            }
        }
    }
    for held in list {
        let namespace = held.holder.namespace();
        apply(&mut report.idle, &held.resource, held.amount, sign);
        if sign > 0 {
            let sums = report.namespaces.entry(namespace.to_owned()).or_default();
            apply(sums, &held.resource, held.amount, sign);
        } else if let Some(sums) = report.namespaces.get_mut(namespace) {
            apply(sums, &held.resource, held.amount, sign);
            if sums.is_empty() {
                report.namespaces.remove(namespace);
            }
        }
    }
}

/// One round's idle series by what they name: the holder (pods by namespace then name, claims), or for a
/// series without holder labels its node. Built once per round; a node's join then looks up only its own
/// holders, so a scan after one node changed joins that node alone ([`super::memo`]).
#[derive(Debug, Default)]
pub struct SeriesIndex {
    pods: HashMap<String, HashMap<String, Vec<u32>>>,
    claims: HashMap<ClaimRef, Vec<u32>>,
    unnamed: HashMap<String, Vec<u32>>,
}

impl SeriesIndex {
    /// The index of `idle`.
    pub fn of(idle: &[IdleSeries]) -> SeriesIndex {
        let mut index = SeriesIndex::default();
        for (at, series) in idle.iter().enumerate() {
            let at = u32::try_from(at).unwrap_or(u32::MAX);
            match &series.holder {
                SeriesHolder::Pod { namespace, name } => index
                    .pods
                    .entry(namespace.clone())
                    .or_default()
                    .entry(name.clone())
                    .or_default()
                    .push(at),
                SeriesHolder::Claim(claim) => {
                    index.claims.entry(claim.clone()).or_default().push(at)
                }
                SeriesHolder::Unnamed => {
                    if let Some(node) = &series.node {
                        index.unnamed.entry(node.clone()).or_default().push(at);
                    }
                }
            }
        }
        index
    }

    fn naming(&self, holder: &Holder) -> &[u32] {
        let found = match holder {
            Holder::Pod { namespace, name } => self.pods.get(namespace).and_then(|p| p.get(name)),
            Holder::Claim(claim) => self.claims.get(claim),
        };
        found.map_or(&[], Vec::as_slice)
    }
}

/// One node's idle holdings, sorted: each series naming one of its holders placed on that holder's holdings
/// here, and each series without holder labels naming the node placed by [`on_node`]. A pod holds on one
/// node; a claim's GPUs are on one node too (node-local devices), and a series naming a claim's device on
/// another node is that node's.
pub fn node_idle(
    node: &NodeInventory,
    idle: &[IdleSeries],
    index: &SeriesIndex,
) -> Vec<IdleHolding> {
    let mut units: Vec<(&Holding, Units)> = Vec::new();
    for (at, holding) in node.holdings.iter().enumerate() {
        // Each holder once, at its first holding.
        if node.holdings[..at]
            .iter()
            .any(|h| h.holder == holding.holder)
        {
            continue;
        }
        for &id in index.naming(&holding.holder) {
            let series = &idle[id as usize];
            if series.dra_device.is_some() && series.node.as_deref().is_some_and(|n| n != node.name)
            {
                continue;
            }
            let places = node
                .holdings
                .iter()
                .filter(|h| h.holder == holding.holder)
                .map(|holding| Place { holding });
            if let Some(place) = pick(places, series) {
                count(&mut units, place.holding, series);
            }
        }
    }
    for &id in index.unnamed.get(&node.name).map_or(&[][..], Vec::as_slice) {
        let series = &idle[id as usize];
        if let Some(place) = on_node(node, series) {
            count(&mut units, place.holding, series);
        }
    }
    let mut list: Vec<IdleHolding> = units
        .into_iter()
        .map(|(holding, found)| IdleHolding {
            holder: holding.holder.clone(),
            resource: holding.resource.clone(),
            amount: found.count.min(holding.amount),
            idle_since: found.since,
        })
        .collect();
    list.sort();
    list
}

/// Counts one more idle series of `holding`.
fn count<'n>(units: &mut Vec<(&'n Holding, Units)>, holding: &'n Holding, series: &IdleSeries) {
    match units.iter_mut().find(|(h, _)| std::ptr::eq(*h, holding)) {
        Some((_, found)) => {
            found.count += 1;
            found.since = found.since.max(series.since);
        }
        None => units.push((
            holding,
            Units {
                count: 1,
                since: series.since,
            },
        )),
    }
}

/// What the idle series of one holding add up to.
struct Units {
    count: u64,
    since: jiff::Timestamp,
}

/// A holding a series may measure.
#[derive(Clone, Copy)]
struct Place<'a> {
    holding: &'a Holding,
}

/// The holding of a series without holder labels: its node's DRA device's, or the holding of the one holder
/// that holds every unit of its kind on the node. A series whose named holder holds nothing (a pod that
/// ended, the exporter's own pod behind a job without `honor_labels`) measures no holding: blaming the node's
/// holder would be a guess.
fn on_node<'a>(node: &'a NodeInventory, series: &IdleSeries) -> Option<Place<'a>> {
    let mut places = node.holdings.iter().map(|holding| Place { holding });
    if series.dra_device.is_some() {
        return places
            .find(|p| p.holding.device.is_some() && p.holding.device == series.dra_device);
    }
    let mut kind = places.filter(|p| measures(series, &p.holding.resource));
    let first = kind.next()?;
    let one_holder = kind.all(|p| p.holding.holder == first.holding.holder);
    let none_free = node
        .free
        .get(&first.holding.resource)
        .is_none_or(|free| *free == 0);
    (one_holder && none_free).then_some(first)
}

/// Among one holder's holdings, the one the series measures: its DRA device's, else one of its kind.
fn pick<'a>(
    mut places: impl Iterator<Item = Place<'a>> + Clone,
    series: &IdleSeries,
) -> Option<Place<'a>> {
    if series.dra_device.is_some()
        && let Some(place) = places
            .clone()
            .find(|p| p.holding.device.is_some() && p.holding.device == series.dra_device)
    {
        return Some(place);
    }
    places
        .clone()
        .find(|p| measures(series, &p.holding.resource))
        .or_else(|| places.next())
}

/// Whether a series measures units of `resource`: a MIG instance's series its profile's resource
/// (`nvidia.com/mig-1g.10gb`), a whole GPU's series any other.
fn measures(series: &IdleSeries, resource: &str) -> bool {
    let unit = resource.rsplit('/').next().unwrap_or(resource);
    match (&series.mig_profile, unit.strip_prefix("mig-")) {
        (Some(profile), Some(of)) => of == profile,
        (None, None) => true,
        _ => false,
    }
}
