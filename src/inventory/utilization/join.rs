//! The join: each idle series to the holding it belongs to, summed per holder, node and namespace.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::activity::{Activity, Reading};
use super::series::{IdleSeries, SeriesHolder};
use crate::inventory::model::{
    ClaimRef, Holder, Holding, IdleHolding, NodeInventory, UtilizationReport, UtilizationState,
};

/// The join's result: the report for the inventory, and each node's idle holdings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Assessment {
    /// For `Inventory::utilization`.
    pub report: UtilizationReport,
    /// Per node with any, its idle holdings, sorted.
    pub by_node: BTreeMap<String, Vec<IdleHolding>>,
}

/// Joins the idle series with the nodes' holdings. An `Unknown` reading gives no figure at all: withheld,
/// not zero.
pub fn assess(nodes: &[Arc<NodeInventory>], activity: &Activity) -> Assessment {
    let mut report = UtilizationReport {
        source: activity.source.clone(),
        window: activity.window.clone(),
        ..UtilizationReport::default()
    };
    let idle = match &activity.reading {
        Reading::Unknown(reason) => {
            report.state = UtilizationState::Unknown;
            report.message = reason.clone();
            return Assessment {
                report,
                by_node: BTreeMap::new(),
            };
        }
        Reading::Current(idle) => idle,
    };
    report.state = UtilizationState::Current;
    report.message = activity.rule.clone();
    // Per holding (by address: each is one element of one node's list), what its idle series add up to.
    let mut units: HashMap<*const Holding, (Key<'_>, Units)> = HashMap::with_capacity(idle.len());
    if !idle.is_empty() {
        let index = Index::of(nodes, idle);
        for series in idle {
            if let Some(place) = index.place(series) {
                let (_, units) = units.entry(std::ptr::from_ref(place.holding)).or_insert((
                    Key {
                        node: &place.node.name,
                        holding: place.holding,
                    },
                    Units {
                        count: 0,
                        since: series.since,
                    },
                ));
                units.count += 1;
                units.since = units.since.max(series.since);
            }
        }
    }
    let mut units: Vec<(Key<'_>, Units)> = units.into_values().collect();
    units.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut by_node: BTreeMap<String, Vec<IdleHolding>> = BTreeMap::new();
    for (key, found) in units {
        let amount = found.count.min(key.holding.amount);
        let namespace = key.holding.holder.namespace().to_owned();
        let resource = key.holding.resource.clone();
        *report
            .namespaces
            .entry(namespace)
            .or_default()
            .entry(resource.clone())
            .or_default() += amount;
        *report.idle.entry(resource.clone()).or_default() += amount;
        by_node
            .entry(key.node.to_owned())
            .or_default()
            .push(IdleHolding {
                holder: key.holding.holder.clone(),
                resource,
                amount,
                idle_since: found.since,
            });
    }
    for list in by_node.values_mut() {
        list.sort();
    }
    Assessment { report, by_node }
}

/// One holding on one node. A pod holding on one node only, the node is there for the output's grouping.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Key<'a> {
    node: &'a str,
    holding: &'a Holding,
}

/// What the idle series of one holding add up to.
struct Units {
    count: u64,
    since: jiff::Timestamp,
}

/// A holding and the node it is on.
#[derive(Clone, Copy)]
struct Place<'a> {
    node: &'a NodeInventory,
    holding: &'a Holding,
}

/// The holdings of the holders the idle series name, by holder, and the nodes they name, by name.
struct Index<'a> {
    pods: HashMap<(&'a str, &'a str), Vec<Place<'a>>>,
    claims: HashMap<&'a ClaimRef, Vec<Place<'a>>>,
    nodes: HashMap<&'a str, &'a NodeInventory>,
}

impl<'a> Index<'a> {
    /// Only what `idle` names is indexed: a few idle GPUs among 100,000 held ones cost a lookup per holding,
    /// not an entry each.
    fn of<'s>(nodes: &'a [Arc<NodeInventory>], idle: &'s [IdleSeries]) -> Index<'a> {
        let mut pods: HashMap<(&'s str, &'s str), ()> = HashMap::new();
        let mut claims: HashMap<&'s ClaimRef, ()> = HashMap::new();
        let mut node_names: HashMap<&'s str, ()> = HashMap::new();
        for series in idle {
            match &series.holder {
                SeriesHolder::Pod { namespace, name } => {
                    pods.insert((namespace, name), ());
                }
                SeriesHolder::Claim(claim) => {
                    claims.insert(claim, ());
                }
                SeriesHolder::Unnamed => {}
            }
            if let Some(node) = &series.node {
                node_names.insert(node, ());
            }
        }
        let mut index = Index {
            pods: HashMap::with_capacity(pods.len()),
            claims: HashMap::with_capacity(claims.len()),
            nodes: HashMap::with_capacity(node_names.len()),
        };
        for node in nodes {
            if node_names.contains_key(node.name.as_str()) {
                index.nodes.insert(&node.name, node);
            }
            for holding in &node.holdings {
                let place = Place { node, holding };
                match &holding.holder {
                    Holder::Pod { namespace, name } => {
                        if pods.contains_key(&(namespace.as_str(), name.as_str())) {
                            index.pods.entry((namespace, name)).or_default().push(place);
                        }
                    }
                    Holder::Claim(claim) => {
                        if claims.contains_key(claim) {
                            index.claims.entry(claim).or_default().push(place);
                        }
                    }
                }
            }
        }
        index
    }

    /// The holding `series` measures: its holder's; for a series without holder labels, its node's DRA
    /// device's, or the holding of the one holder that holds every unit of its kind on the node. A series
    /// whose named holder holds nothing (a pod that ended, the exporter's own pod behind a job without
    /// `honor_labels`) measures no holding: blaming the node's holder would be a guess.
    fn place(&self, series: &IdleSeries) -> Option<Place<'a>> {
        let places = match &series.holder {
            SeriesHolder::Claim(claim) => self.claims.get(claim),
            SeriesHolder::Pod { namespace, name } => {
                self.pods.get(&(namespace.as_str(), name.as_str()))
            }
            SeriesHolder::Unnamed => return self.on_node(series),
        };
        pick(places?.iter().copied(), series)
    }

    /// See [`Index::place`].
    fn on_node(&self, series: &IdleSeries) -> Option<Place<'a>> {
        let node = *self.nodes.get(series.node.as_deref()?)?;
        let mut places = node.holdings.iter().map(|holding| Place { node, holding });
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
