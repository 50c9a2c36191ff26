//! The inventory's report: its state and message, and the sums over the nodes' idle holdings, kept by adding
//! and taking back one node's at a time ([`super::memo`]).

use std::collections::BTreeMap;

use super::round::{Reading, Round};
use crate::inventory::model::{IdleHolding, NodeInventory, UtilizationReport, UtilizationState};

/// The report of `activity` before any node is joined: its state, and why, or the rule.
pub(super) fn report_of(activity: &Round) -> UtilizationReport {
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

/// The report as published: its message says how many shared GPUs are busy, since their holders' use is the
/// one thing the figures cannot show.
pub(super) fn finished(mut report: UtilizationReport) -> UtilizationReport {
    match report.busy_shared {
        0 => {}
        1 => report.message.push_str(
            "; 1 shared GPU busy: per-holder use is not measured (DCGM reports the device)",
        ),
        n => report.message.push_str(&format!(
            "; {n} shared GPUs busy: per-holder use is not measured (DCGM reports the device)"
        )),
    }
    report
}

/// One node's part of the report: its idle holdings, the product they are of, and its busy shared GPUs.
pub(super) struct NodePart<'a> {
    pub(super) idle: &'a [IdleHolding],
    /// `unknown` where no source names it, as `namespaces[].gpuEquivalentsByProduct` keys it.
    pub(super) product: &'a str,
    pub(super) busy_shared: u64,
}

impl<'a> NodePart<'a> {
    /// `node`'s part, with its join's idle holdings and busy shared GPUs.
    pub(super) fn of(node: &'a NodeInventory, idle: &'a [IdleHolding], busy_shared: u64) -> Self {
        NodePart {
            idle,
            product: node.product.as_deref().unwrap_or("unknown"),
            busy_shared,
        }
    }
}

/// Adds (`sign` 1) or takes back (`sign` -1) one node's part to the report's sums; a sum that reaches 0 is
/// removed.
pub(super) fn add(report: &mut UtilizationReport, part: &NodePart<'_>, sign: i8) {
    report.busy_shared = match sign > 0 {
        true => report.busy_shared.saturating_add(part.busy_shared),
        false => report.busy_shared.saturating_sub(part.busy_shared),
    };
    for held in part.idle {
        let namespace = held.holder.namespace();
        apply(&mut report.idle, &held.resource, held.amount, sign);
        apply_nested(
            &mut report.namespaces,
            namespace,
            &held.resource,
            held.amount,
            sign,
        );
        if let Some(milli) = held.equivalent_milli.filter(|m| *m > 0) {
            apply_nested(
                &mut report.namespace_equivalents,
                namespace,
                part.product,
                milli,
                sign,
            );
        }
    }
}

fn apply(map: &mut BTreeMap<String, u64>, key: &str, amount: u64, sign: i8) {
    if sign > 0 {
        match map.get_mut(key) {
            Some(sum) => *sum = sum.saturating_add(amount),
            None => {
                map.insert(key.to_owned(), amount);
            }
        }
    } else if let Some(sum) = map.get_mut(key) {
        *sum = sum.saturating_sub(amount);
        if *sum == 0 {
            map.remove(key);
        }
    }
}

fn apply_nested(
    map: &mut BTreeMap<String, BTreeMap<String, u64>>,
    outer: &str,
    inner: &str,
    amount: u64,
    sign: i8,
) {
    if sign > 0 {
        apply(
            map.entry(outer.to_owned()).or_default(),
            inner,
            amount,
            sign,
        );
    } else if let Some(sums) = map.get_mut(outer) {
        apply(sums, inner, amount, sign);
        if sums.is_empty() {
            map.remove(outer);
        }
    }
}
