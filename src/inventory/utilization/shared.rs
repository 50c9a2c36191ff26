//! Idle and busy shared GPUs (docs/utilization.md, "Shared GPUs"). DCGM measures a device, not a holder:
//! where a shared device is idle through the window every holder of it is idle; where it is busy, which
//! holder used it is not measured, and no holder of it is called idle.
//!
//! Which device a series is, as dcgm-exporter labels it: its `UUID` is the physical GPU's, also for a
//! time-sliced replica (the device plugin's `GPU-<uuid>::<n>` is cut at `::`), and its pod labels name one
//! of the sharers (or one series per sharer with `--kubernetes-virtual-gpus`); a HAMi share's device ID
//! (`GPU-<uuid>-<n>`) matches no GPU, so a HAMi card's series names no pod.

use super::found::Found;
use super::index::SeriesIndex;
use super::place::{pick, places_of};
use super::series::{IdleSeries, SeriesHolder};
use crate::inventory::model::{Holding, NodeInventory, SharedGpu};

/// The device an idle series measures, where that device is shared.
enum Device<'a> {
    /// A card a sharing layer lists (HAMi's register), with its holders' parts.
    Card(&'a SharedGpu),
    /// The one physical GPU of a time-sliced or MPS node: every holder on the node shares it.
    OnlyGpu,
}

/// The shared device `series` measures on `node`: a sharing layer's card by its UUID, else the only GPU of a
/// time-sliced or MPS node. A MIG instance's and a DRA device's series measure their own unit, not a device
/// others share.
fn device_of<'a>(node: &'a NodeInventory, series: &IdleSeries) -> Option<Device<'a>> {
    if series.mig_profile.is_some() || series.dra_device.is_some() {
        return None;
    }
    if let Some(gpu) = &series.gpu
        && let Some(card) = node.shared_gpus.iter().find(|g| &g.id == gpu)
    {
        return Some(Device::Card(card));
    }
    (time_sliced(node) && node.count == 1).then_some(Device::OnlyGpu)
}

/// Whether the node's GPUs are time-sliced or shared by MPS (GPU Feature Discovery's and GKE's labels, or the
/// device plugin's replicas), not by a sharing layer that lists its cards.
fn time_sliced(node: &NodeInventory) -> bool {
    node.shared_gpus.is_empty()
        && node
            .sharing
            .as_ref()
            .is_some_and(|s| match s.strategy.as_deref() {
                Some(strategy) => matches!(strategy, "time-slicing" | "time-sharing" | "mps"),
                None => s.replicas.is_some_and(|r| r > 1) || s.renamed_resource,
            })
}

/// Places an idle series of a shared device on every holder of it; whether it was one (else the series is
/// placed as any other).
pub(super) fn place_on_device<'n>(
    node: &'n NodeInventory,
    series: &IdleSeries,
    found: &mut Found<'n>,
) -> bool {
    match device_of(node, series) {
        None => false,
        Some(Device::Card(card)) => {
            for part in &card.parts {
                if let Some(place) = pick(places_of(&node.holdings, &part.holder), series) {
                    found.card(place.holding, &card.id, part.milli, series.since);
                }
            }
            true
        }
        Some(Device::OnlyGpu) => {
            for (at, holding) in node.holdings.iter().enumerate() {
                // Each holder once, at its first holding.
                if node.holdings[..at]
                    .iter()
                    .any(|h| h.holder == holding.holder)
                {
                    continue;
                }
                if let Some(place) = pick(places_of(&node.holdings, &holding.holder), series) {
                    found.full(place.holding, series.since);
                }
            }
            true
        }
    }
}

/// Whether a series naming the holder of `holding` measures a share (a holding of less than a GPU, or any on
/// a node that shares its GPUs) rather than units of its own: the share is idle in full.
pub(super) fn is_share(node: &NodeInventory, holding: &Holding, series: &IdleSeries) -> bool {
    series.mig_profile.is_none()
        && series.dra_device.is_none()
        && (node.sharing.is_some() || holding.equivalent.is_some_and(|e| e.milli < 1000))
}

/// The busy series of one node's shared GPUs: the devices they name, and the holders.
pub(super) struct Busy<'a> {
    /// The devices (`UUID`; `None`: a series without one).
    gpus: Vec<Option<&'a str>>,
    holders: Vec<&'a SeriesHolder>,
    /// The node's only GPU, time-sliced, is busy.
    only_gpu: bool,
    /// How many of the busy devices someone holds.
    pub(super) held: u64,
}

impl<'a> Busy<'a> {
    /// The busy shared GPUs of `node` in this round.
    pub(super) fn of(node: &NodeInventory, series: &'a [IdleSeries], index: &SeriesIndex) -> Self {
        let mut busy = Busy {
            gpus: Vec::new(),
            holders: Vec::new(),
            only_gpu: false,
            held: 0,
        };
        let shares = node.sharing.is_some() || !node.shared_gpus.is_empty();
        for &id in index.busy_on(&node.name) {
            let series = &series[id as usize];
            if !shares || series.mig_profile.is_some() {
                continue;
            }
            busy.holders.push(&series.holder);
            let gpu = series.gpu.as_deref();
            if busy.gpus.contains(&gpu) {
                continue;
            }
            busy.gpus.push(gpu);
            let held = match gpu.and_then(|g| node.shared_gpus.iter().find(|c| c.id == g)) {
                Some(card) => !card.parts.is_empty(),
                None => !node.holdings.is_empty(),
            };
            busy.held += u64::from(held);
        }
        busy.only_gpu = !busy.gpus.is_empty() && time_sliced(node) && node.count == 1;
        busy
    }

    /// Whether `series` is of a busy device, or names a holder a busy series names: not idle for anyone.
    pub(super) fn covers(&self, series: &IdleSeries) -> bool {
        self.only_gpu
            || self.gpus.contains(&series.gpu.as_deref())
            || (series.holder != SeriesHolder::Unnamed && self.holders.contains(&&series.holder))
    }
}
