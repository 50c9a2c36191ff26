//! `plan`: what the server holds + what it should hold -> the write to send (or none) and the events.
//!
//! This is the article's pitfall 2 (a reconcile storm fed by no-op writes) made structural: content is
//! compared whole, with only the bookkeeping times taken from the server's copy (`observedTime`, conditions'
//! `lastTransitionTime`), so a field added to the status later takes part in the comparison without anyone
//! remembering to list it. Bookkeeping is carried over when nothing changed and stamped when something did.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::GpuInventoryStatus;

/// Content with bookkeeping times that must not count as a change.
pub(crate) trait Bookkeeping: PartialEq {
    /// Takes the bookkeeping times of `current` (what the server holds), so `==` compares content only.
    fn adopt_bookkeeping(&mut self, current: &Self);
    /// Stamps content that is about to be written: times carried over from `current` where they still hold,
    /// else `now`.
    fn stamp(&mut self, current: Option<&Self>, now: Timestamp);
}

/// Whether to write.
#[derive(Debug, PartialEq)]
pub(crate) enum Decision<T> {
    /// The server already holds this content: send nothing.
    Skip,
    /// Send this (stamped) content.
    Write(T),
}

impl<T> Decision<T> {
    /// The content to write, if any.
    pub(crate) fn into_write(self) -> Option<T> {
        match self {
            Decision::Skip => None,
            Decision::Write(content) => Some(content),
        }
    }
}

/// Decides whether `desired` must be written over `current` (`None`: the server holds nothing yet).
pub(crate) fn decide<T: Bookkeeping>(
    current: Option<&T>,
    mut desired: T,
    now: Timestamp,
) -> Decision<T> {
    if let Some(current) = current {
        desired.adopt_bookkeeping(current);
        if desired == *current {
            return Decision::Skip;
        }
    }
    desired.stamp(current, now);
    Decision::Write(desired)
}

/// Plans a status write: `desired` (from [`super::status::desired_status`], cut to its budget) against
/// `current`: the status to apply, or `None` when the server already holds it. The events are not planned
/// here: they are diffed on the whole model, before any cut ([`crate::inventory::events::transitions_since`]).
pub(crate) fn plan_status(
    desired: GpuInventoryStatus,
    current: Option<&GpuInventoryStatus>,
    now: Timestamp,
) -> Option<GpuInventoryStatus> {
    decide(current, desired, now).into_write()
}

/// Plans a ConfigMap write: the data to apply, or `None` when the server already holds it.
pub(crate) fn plan_configmap(
    desired: BTreeMap<String, String>,
    current: Option<&BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    // ConfigMap data has no bookkeeping, so the time never matters.
    decide(current, desired, Timestamp::UNIX_EPOCH).into_write()
}

impl Bookkeeping for GpuInventoryStatus {
    fn adopt_bookkeeping(&mut self, current: &Self) {
        self.observed_time.clone_from(&current.observed_time);
        for condition in &mut self.conditions {
            if let Some(previous) = current
                .conditions
                .iter()
                .find(|c| c.type_ == condition.type_)
            {
                condition
                    .last_transition_time
                    .clone_from(&previous.last_transition_time);
            }
        }
    }

    fn stamp(&mut self, current: Option<&Self>, now: Timestamp) {
        // Only changed content is ever stamped, so this is when the new content was first observed.
        self.observed_time = Some(Time(now));
        for condition in &mut self.conditions {
            // lastTransitionTime moves only when the condition's status flips (metav1.Condition contract).
            let previous = current
                .into_iter()
                .flat_map(|c| &c.conditions)
                .find(|c| c.type_ == condition.type_ && c.status == condition.status);
            condition.last_transition_time = match previous {
                Some(previous) => previous.last_transition_time.clone(),
                None => Time(now),
            };
        }
    }
}

/// A ConfigMap's `data`: compared as a whole, no bookkeeping.
impl Bookkeeping for BTreeMap<String, String> {
    fn adopt_bookkeeping(&mut self, _current: &Self) {}

    fn stamp(&mut self, _current: Option<&Self>, _now: Timestamp) {}
}

#[cfg(test)]
mod tests;
