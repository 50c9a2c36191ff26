//! Shared counters of partitionable devices (KEP-4815): a pool publishes a GPU and the partitions it can be
//! cut into as alternatives that consume the same counter set (memory slices, compute slices), in a slice
//! of their own since 1.35. What an allocation consumed is gone for the alternatives; what still fits is
//! what the remaining counters allow, never the sum of the alternatives.

use std::collections::BTreeMap;

use super::model::DraDevice;
use super::pools::Pool;

/// A pool's counters and what its allocated devices consume of them.
pub(super) struct Counters<'p> {
    available: &'p BTreeMap<&'p str, &'p BTreeMap<String, i128>>,
    consumed: BTreeMap<(String, String), i128>,
}

impl<'p> Counters<'p> {
    /// The pool's counters, less what `allocated` consume.
    pub(super) fn of<'d>(
        pool: &'p Pool<'_>,
        allocated: impl Iterator<Item = &'d DraDevice>,
    ) -> Self {
        let mut counters = Counters {
            available: &pool.counters,
            consumed: BTreeMap::new(),
        };
        for device in allocated {
            counters.take(device);
        }
        counters
    }

    /// Whether what `device` consumes is still there. A counter set whose slice is not here (an incomplete
    /// pool) is not checked: there is nothing to check against.
    pub(super) fn fits(&self, device: &DraDevice) -> bool {
        device.consumes.iter().all(|(set, counters)| {
            let Some(available) = self.available.get(set.as_str()) else {
                return true;
            };
            counters.iter().all(|(counter, amount)| {
                let total = available.get(counter).copied().unwrap_or(0);
                let used = self
                    .consumed
                    .get(&(set.clone(), counter.clone()))
                    .copied()
                    .unwrap_or(0);
                total - used >= *amount
            })
        })
    }

    /// Takes what `device` consumes.
    fn take(&mut self, device: &DraDevice) {
        for (set, counters) in &device.consumes {
            for (counter, amount) in counters {
                *self
                    .consumed
                    .entry((set.clone(), counter.clone()))
                    .or_insert(0) += amount;
            }
        }
    }

    /// How many more devices of each resource could be allocated at once, each resource on its own (they
    /// are alternatives): `candidates` are the pool's free devices that consume counters, with the resource
    /// each is counted under. Greedy in the pool's order, which is how drivers list placements (first fit).
    pub(super) fn still_fit<'d>(
        &self,
        candidates: impl Iterator<Item = (&'d DraDevice, &'d str)> + Clone,
    ) -> BTreeMap<String, u64> {
        let mut fit = BTreeMap::new();
        let resources: std::collections::BTreeSet<&str> =
            candidates.clone().map(|(_, resource)| resource).collect();
        for resource in resources {
            let mut left = Counters {
                available: self.available,
                consumed: self.consumed.clone(),
            };
            let mut n = 0u64;
            for (device, _) in candidates.clone().filter(|(_, r)| *r == resource) {
                if left.fits(device) {
                    left.take(device);
                    n += 1;
                }
            }
            fit.insert(resource.to_owned(), n);
        }
        fit
    }
}
