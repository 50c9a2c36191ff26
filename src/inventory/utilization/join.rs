//! The join: each idle series to the holding it belongs to, summed per holder, node and namespace.

use std::sync::Arc;

use super::found::Found;
use super::index::SeriesIndex;
use super::place::{Place, measures, pick, places_of};
use super::report::{NodePart, add, finished, report_of};
use super::round::{Reading, Round};
use super::series::IdleSeries;
use super::shared::{Busy, is_share, place_on_device};
use crate::inventory::model::{IdleByNode, IdleHolding, NodeInventory, UtilizationReport};

/// The join's result: the report for the inventory, and each node's idle holdings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assessment {
    /// For `Inventory::utilization`.
    pub report: UtilizationReport,
    /// For `Inventory::idle`.
    pub by_node: IdleByNode,
}

/// One node's join: its idle holdings, sorted, and how many of its shared GPUs that someone holds are busy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeJoin {
    /// Its idle holdings.
    pub idle: Vec<IdleHolding>,
    /// Its busy shared GPUs someone holds.
    pub busy_shared: u64,
}

/// Joins the idle series with the nodes' holdings. An `Unknown` reading gives no figure at all: withheld,
/// not zero.
pub fn assess(nodes: &[Arc<NodeInventory>], activity: &Round) -> Assessment {
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
        let joined = node_idle(node, idle, &index);
        add(
            &mut report,
            &NodePart::of(node, &joined.idle, joined.busy_shared),
            1,
        );
        if !joined.idle.is_empty() {
            by_node.insert(node.name.clone(), Arc::from(joined.idle));
        }
    }
    Assessment {
        report: finished(report),
        by_node,
    }
}

/// One node's idle holdings and busy shared GPUs: each idle series naming one of its holders placed on that
/// holder's holdings here, and each series without holder labels naming the node placed by [`on_node`]; a
/// series of a shared GPU on every holder of it ([`place_on_device`]), unless the GPU is busy. A pod holds
/// on one node; a claim's GPUs are on one node too (node-local devices), and a series naming a claim's
/// device on another node is that node's.
pub fn node_idle(node: &NodeInventory, idle: &[IdleSeries], index: &SeriesIndex) -> NodeJoin {
    let busy = Busy::of(node, idle, index);
    let mut found = Found::default();
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
                || busy.covers(series)
                || place_on_device(node, series, &mut found)
            {
                continue;
            }
            if let Some(place) = pick(places_of(&node.holdings, &holding.holder), series) {
                match is_share(node, place.holding, series) {
                    true => found.full(place.holding, series.since),
                    false => found.unit(place.holding, series.since),
                }
            }
        }
    }
    for &id in index.unnamed_on(&node.name) {
        let series = &idle[id as usize];
        if busy.covers(series) || place_on_device(node, series, &mut found) {
            continue;
        }
        if let Some(place) = on_node(node, series) {
            found.unit(place.holding, series.since);
        }
    }
    NodeJoin {
        idle: found.into_list(),
        busy_shared: busy.held,
    }
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
