//! Issues that are normal for a while (a new GPU node advertises no GPU resource until its driver and device
//! plugin are up: `IssueReason::needs_grace`) are held back until they have lasted a grace period.
//!
//! Pure: the caller gives the time. The operator keeps one [`Grace`] for its life and applies it to every
//! scan; the one-shot `scan` has no memory of earlier moments and reports what it sees.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::inventory::model::{Inventory, IssueReason};

/// When each (node, reason) held back was first seen.
#[derive(Debug)]
pub(crate) struct Grace {
    period: Duration,
    first_seen: HashMap<(String, IssueReason), Instant>,
}

impl Grace {
    /// A memory holding issues back for `period`.
    pub(crate) fn new(period: Duration) -> Grace {
        Grace {
            period,
            first_seen: HashMap::new(),
        }
    }

    /// `inventory` without the graced issues younger than the period at `now`, and when the first one held
    /// back is due (the caller looks again then). Issues gone from a node are forgotten: one that comes back
    /// waits its period again.
    pub(crate) fn apply(
        &mut self,
        mut inventory: Inventory,
        now: Instant,
    ) -> (Inventory, Option<Instant>) {
        let mut seen_now = HashMap::new();
        let mut due: Option<Instant> = None;
        for node in &mut inventory.nodes {
            let graced: Vec<IssueReason> = node
                .issues
                .iter()
                .map(|i| i.reason)
                .filter(|r| r.needs_grace())
                .collect();
            if graced.is_empty() {
                continue;
            }
            let mut young = Vec::new();
            for reason in graced {
                let key = (node.name.clone(), reason);
                let since = self.first_seen.get(&key).copied().unwrap_or(now);
                seen_now.insert(key, since);
                if now.saturating_duration_since(since) < self.period {
                    young.push(reason);
                    let at = since + self.period;
                    due = Some(due.map_or(at, |d| d.min(at)));
                }
            }
            if !young.is_empty() {
                Arc::make_mut(node)
                    .issues
                    .retain(|i| !young.contains(&i.reason));
            }
        }
        self.first_seen = seen_now;
        (inventory, due)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::test_support::{entry, inventory};

    #[test]
    fn an_issue_is_held_back_for_its_period_then_reported_until_it_goes() {
        let mut grace = Grace::new(Duration::from_secs(60));
        let t0 = Instant::now();
        let missing = || {
            inventory(vec![entry(
                "n",
                true,
                1,
                &[IssueReason::GpuResourcesMissing, IssueReason::Unschedulable],
            )])
        };
        let (first, due) = grace.apply(missing(), t0);
        assert_eq!(due, Some(t0 + Duration::from_secs(60)));
        assert_eq!(first.nodes[0].issues.len(), 1, "only the ungraced issue");
        assert!(first.nodes[0].issue(IssueReason::Unschedulable).is_some());
        let (later, held) = grace.apply(missing(), t0 + Duration::from_secs(59));
        assert!(
            held.is_some()
                && later.nodes[0]
                    .issue(IssueReason::GpuResourcesMissing)
                    .is_none()
        );
        let (matured, held) = grace.apply(missing(), t0 + Duration::from_secs(60));
        assert!(held.is_none());
        assert!(
            matured.nodes[0]
                .issue(IssueReason::GpuResourcesMissing)
                .is_some()
        );
        // Gone, then back: its period starts again.
        let healthy = inventory(vec![entry("n", true, 1, &[])]);
        grace.apply(healthy, t0 + Duration::from_secs(61));
        let (back, held) = grace.apply(missing(), t0 + Duration::from_secs(62));
        assert!(
            held.is_some()
                && back.nodes[0]
                    .issue(IssueReason::GpuResourcesMissing)
                    .is_none()
        );
    }

    #[test]
    fn a_zero_period_holds_nothing_back() {
        let mut grace = Grace::new(Duration::ZERO);
        let inv = inventory(vec![entry(
            "n",
            true,
            1,
            &[IssueReason::GpuResourcesMissing],
        )]);
        let (out, held) = grace.apply(inv.clone(), Instant::now());
        assert!(held.is_none());
        assert_eq!(out, inv);
    }
}
