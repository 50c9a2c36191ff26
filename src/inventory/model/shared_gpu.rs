//! Physical GPUs as the sharing schemes hand them out: which GPUs a sharing layer or a GPU-sharing
//! scheduler names, what each holder holds of each, and how many of a node's GPUs are whole free, partly free
//! or fully held (`allocation::occupancy`).

use super::holding::Holder;

/// One physical GPU a sharing layer lists (HAMi's, Volcano's device register) or a GPU-sharing scheduler
/// ties its fractions to (KAI-Scheduler's GPU group), with what is held of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedGpu {
    /// Its ID: the GPU UUID the layer lists, or `group/<name>` for a KAI GPU group.
    pub id: String,
    /// Its memory in MiB, as the layer counts it (a share's memory limit is out of it).
    pub memory_mib: Option<u64>,
    /// How many shares the layer splits it into (at most that many holders); `None`: not limited by count.
    pub slots: Option<u64>,
    /// The layer flags it healthy.
    pub healthy: bool,
    /// Who holds what of it, sorted.
    pub parts: Vec<GpuPart>,
}

/// One holder's part of a shared GPU.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GpuPart {
    /// The pod.
    pub holder: Holder,
    /// Thousandths of the GPU (its memory over the GPU's, else its fraction).
    pub milli: u64,
    /// MiB of its memory, where the layer's allocation names it.
    pub memory_mib: Option<u64>,
}

impl SharedGpu {
    /// Thousandths of it held, at most 1000.
    pub fn held_milli(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |sum, p| sum.saturating_add(p.milli))
            .min(1000)
    }

    /// MiB of its memory not held (`None` where its memory is unknown).
    pub fn free_memory_mib(&self) -> Option<u64> {
        let total = self.memory_mib?;
        let held = self.parts.iter().fold(0u64, |sum, p| {
            sum.saturating_add(p.memory_mib.unwrap_or(p.milli.saturating_mul(total) / 1000))
        });
        Some(total.saturating_sub(held))
    }

    /// Whether another holder may take a part of it: healthy, a share slot left, some of it not held.
    pub fn has_room(&self) -> bool {
        self.healthy
            && self
                .slots
                .is_none_or(|slots| (self.parts.len() as u64) < slots)
            && self.held_milli() < 1000
            && self.free_memory_mib().is_none_or(|m| m > 0)
    }
}

/// How a node's physical GPUs stand: whole free (nothing held), partly free (held in part, room for
/// more), fully held. The three add up to its physical GPUs: its `count`, but under MIG strategy `single` (`count` is MIG devices).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// GPUs nothing holds any of.
    pub whole_free: u64,
    /// GPUs held in part, with room for more.
    pub partly_free: u64,
    /// GPUs held in full.
    pub fully_held: u64,
}

impl Occupancy {
    /// Adds another node's.
    pub fn add(&mut self, other: Occupancy) {
        self.whole_free = self.whole_free.saturating_add(other.whole_free);
        self.partly_free = self.partly_free.saturating_add(other.partly_free);
        self.fully_held = self.fully_held.saturating_add(other.fully_held);
    }
}
