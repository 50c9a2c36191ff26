//! The join kept between scans: under one round's activity, a node whose entry is the one joined last time
//! keeps its idle holdings (the very same entry), and only the nodes that changed are joined again, so a pod
//! change costs the join of its node, not of the fleet (at 104,000 idle GPUs the whole join took 235 ms a
//! scan). The report is kept too, adjusted by what the changed nodes take back and add.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::activity::{Activity, Reading};
use super::join::{SeriesIndex, add, node_idle, report_of};
use crate::inventory::model::{IdleHolding, NodeInventory, UtilizationReport};

/// The last scan's join; see the module.
#[derive(Debug, Default)]
pub struct IdleMemo {
    kept: Mutex<Option<Kept>>,
}

#[derive(Debug)]
struct Kept {
    activity: Arc<Activity>,
    index: SeriesIndex,
    report: UtilizationReport,
    /// Per node joined: the entry it was joined from, and the entry handed out (the same one when the node
    /// has no idle holding); the scan that last saw it.
    nodes: HashMap<String, Joined>,
    scan: u64,
}

#[derive(Debug)]
struct Joined {
    base: Arc<NodeInventory>,
    entry: Arc<NodeInventory>,
    seen: u64,
}

impl IdleMemo {
    /// Puts each node's idle holdings into `nodes` (an entry of its own for a node with any) and returns the
    /// report, joining only what changed since the last call under this very `activity`.
    pub fn put_idle(
        &self,
        nodes: &mut [Arc<NodeInventory>],
        activity: &Arc<Activity>,
    ) -> UtilizationReport {
        let mut guard = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let Reading::Current(idle) = &activity.reading else {
            *guard = None;
            return report_of(activity);
        };
        let kept = match guard.take() {
            Some(kept) if Arc::ptr_eq(&kept.activity, activity) => kept,
            _ => Kept {
                activity: activity.clone(),
                index: SeriesIndex::of(idle),
                report: report_of(activity),
                nodes: HashMap::new(),
                scan: 0,
            },
        };
        let kept = guard.insert(kept);
        kept.scan += 1;
        let scan = kept.scan;
        for node in nodes.iter_mut() {
            if let Some(joined) = kept.nodes.get_mut(&node.name)
                && Arc::ptr_eq(&joined.base, node)
            {
                joined.seen = scan;
                *node = joined.entry.clone();
                continue;
            }
            let list = node_idle(node, idle, &kept.index);
            let entry = if list.is_empty() {
                node.clone()
            } else {
                add(&mut kept.report, &list, 1);
                Arc::new(NodeInventory {
                    idle: list,
                    ..NodeInventory::clone(node)
                })
            };
            let joined = Joined {
                base: std::mem::replace(node, entry.clone()),
                entry,
                seen: scan,
            };
            if let Some(old) = kept.nodes.insert(joined.base.name.clone(), joined) {
                take_back(&mut kept.report, &old.entry.idle);
            }
        }
        // Every node of this scan has an entry now: more are nodes it no longer has.
        if kept.nodes.len() > nodes.len() {
            let report = &mut kept.report;
            kept.nodes.retain(|_, joined| {
                let stays = joined.seen == scan;
                if !stays {
                    take_back(report, &joined.entry.idle);
                }
                stays
            });
        }
        kept.report.clone()
    }
}

fn take_back(report: &mut UtilizationReport, list: &[IdleHolding]) {
    if !list.is_empty() {
        add(report, list, -1);
    }
}
