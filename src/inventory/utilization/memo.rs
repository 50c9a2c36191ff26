//! The join kept between scans: under one round's activity, a node whose entry is the one joined last time
//! keeps its idle holdings (the very same list), and only the nodes that changed are joined again, so a pod
//! change costs the join of its node, not of the fleet (at 104,000 idle GPUs the whole join took 235 ms a
//! scan). The report is kept too (its message without the busy shared GPUs' sentence, which is added to each
//! answer), adjusted by what the changed nodes take back and add.

use std::sync::Arc;

use super::index::SeriesIndex;
use super::join::{Assessment, node_idle};
use super::report::{NodePart, add, finished, report_of};
use super::round::{Reading, Round};
use crate::inventory::model::{IdleByNode, IdleHolding, NodeInventory, UtilizationReport};

/// The last scan's join; see the module.
#[derive(Debug, Default)]
pub struct IdleMemo {
    kept: Option<Kept>,
}

#[derive(Debug)]
struct Kept {
    activity: Arc<Round>,
    index: SeriesIndex,
    report: UtilizationReport,
    /// Per node joined, in the scan's order (by name): the entry it was joined from and its idle holdings.
    /// The entry names the node, so nothing else is kept per node (a map by copied name was 1 MB at 13,000
    /// GPU nodes).
    nodes: Vec<Joined>,
}

#[derive(Debug)]
struct Joined {
    base: Arc<NodeInventory>,
    /// `None` where the node holds no idle unit.
    idle: Option<Arc<[IdleHolding]>>,
    /// Its busy shared GPUs someone holds.
    busy_shared: u64,
}

impl IdleMemo {
    /// Each node's idle holdings and the report, joining only what changed since the last call under this
    /// very `activity`. `nodes` are in name order, as `Inventory::nodes` keeps them (any order is joined
    /// right; out of order, more is joined again).
    pub fn put_idle(&mut self, nodes: &[Arc<NodeInventory>], activity: &Arc<Round>) -> Assessment {
        let Reading::Current(idle) = &activity.reading else {
            self.kept = None;
            return Assessment {
                report: report_of(activity),
                by_node: IdleByNode::new(),
            };
        };
        let mut kept = match self.kept.take() {
            Some(kept) if Arc::ptr_eq(&kept.activity, activity) => kept,
            _ => Kept {
                activity: activity.clone(),
                index: SeriesIndex::of(idle),
                report: report_of(activity),
                nodes: Vec::new(),
            },
        };
        let mut last = std::mem::take(&mut kept.nodes).into_iter().peekable();
        let mut joined = Vec::with_capacity(nodes.len());
        let mut by_node = IdleByNode::new();
        for node in nodes {
            // The last scan's nodes before this one are nodes this scan no longer has.
            while let Some(gone) = last.next_if(|j| j.base.name < node.name) {
                take_back(&mut kept.report, &gone);
            }
            let same = last.next_if(|j| j.base.name == node.name);
            let entry = match same {
                Some(same) if Arc::ptr_eq(&same.base, node) => same,
                changed => {
                    if let Some(changed) = changed {
                        take_back(&mut kept.report, &changed);
                    }
                    let joined = node_idle(node, idle, &kept.index);
                    let part = NodePart::of(node, &joined.idle, joined.busy_shared);
                    add(&mut kept.report, &part, 1);
                    Joined {
                        base: node.clone(),
                        busy_shared: joined.busy_shared,
                        idle: (!joined.idle.is_empty()).then(|| Arc::from(joined.idle)),
                    }
                }
            };
            if let Some(list) = &entry.idle {
                by_node.insert(node.name.clone(), list.clone());
            }
            joined.push(entry);
        }
        for gone in last {
            take_back(&mut kept.report, &gone);
        }
        kept.nodes = joined;
        let report = finished(kept.report.clone());
        self.kept = Some(kept);
        Assessment { report, by_node }
    }
}

/// Takes a node's last join back from the report.
fn take_back(report: &mut UtilizationReport, joined: &Joined) {
    let idle = joined.idle.as_deref().unwrap_or_default();
    add(
        report,
        &NodePart::of(&joined.base, idle, joined.busy_shared),
        -1,
    );
}
