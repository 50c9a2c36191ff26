//! Which devices a driver publishes now: per pool, only the slices of its highest generation, and the pool
//! complete only when all `resourceSliceCount` of them are there (the scheduler's rule; a driver rewriting
//! its pool publishes generation N+1 slice by slice, and until the last one lands the pool is in between).

use std::collections::{BTreeMap, BTreeSet};

use super::model::{DraDevice, DraSlice};

/// One pool as it stands now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pool<'a> {
    /// `spec.driver`.
    pub driver: &'a str,
    /// `spec.pool.name`.
    pub name: &'a str,
    /// The highest generation seen.
    pub generation: i64,
    /// Distinct slices seen at that generation.
    pub slices: usize,
    /// `resourceSliceCount` those slices declare (the largest, if they disagree).
    pub expected_slices: i64,
    /// The node the pool's slices name (`None`: network-attached, or its slices disagree).
    pub node: Option<&'a str>,
    /// Shared counter sets of the pool's current slices.
    pub counters: BTreeMap<&'a str, &'a BTreeMap<String, i128>>,
    /// Devices of the current slices, first seen kept when a name repeats.
    pub devices: Vec<&'a DraDevice>,
}

impl Pool<'_> {
    /// All the pool's slices at its generation are there.
    pub fn complete(&self) -> bool {
        self.expected_slices > 0 && self.slices as i64 >= self.expected_slices
    }
}

/// The pools of these slices, sorted by (driver, pool name). Slices are taken in name order so the result
/// does not depend on the order they arrived in.
pub fn pools<'a>(slices: impl IntoIterator<Item = &'a DraSlice>) -> Vec<Pool<'a>> {
    let mut by_pool: BTreeMap<(&str, &str), Vec<&DraSlice>> = BTreeMap::new();
    for slice in slices {
        by_pool
            .entry((slice.driver.as_str(), slice.pool.as_str()))
            .or_default()
            .push(slice);
    }
    by_pool
        .into_iter()
        .map(|((driver, name), mut slices)| {
            let generation = slices.iter().map(|s| s.generation).max().unwrap_or(0);
            slices.retain(|s| s.generation == generation);
            slices.sort_by(|a, b| a.name.cmp(&b.name));
            slices.dedup_by(|a, b| a.name == b.name);
            let nodes: BTreeSet<Option<&str>> = slices.iter().map(|s| s.node.as_deref()).collect();
            let node = match nodes.into_iter().collect::<Vec<_>>().as_slice() {
                [only] => *only,
                _ => None,
            };
            let mut seen = BTreeSet::new();
            let devices = slices
                .iter()
                .flat_map(|s| s.devices.iter())
                .filter(|d| seen.insert(d.name.as_str()))
                .collect();
            Pool {
                driver,
                name,
                generation,
                slices: slices.len(),
                expected_slices: slices.iter().map(|s| s.slice_count).max().unwrap_or(0),
                node,
                counters: slices
                    .iter()
                    .flat_map(|s| s.counters.iter().map(|(k, v)| (k.as_str(), v)))
                    .collect(),
                devices,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(name: &str, pool: &str, generation: i64, count: i64, devices: &[&str]) -> DraSlice {
        DraSlice {
            name: name.to_owned(),
            driver: "gpu.nvidia.com".to_owned(),
            pool: pool.to_owned(),
            generation,
            slice_count: count,
            node: Some(pool.to_owned()),
            devices: devices
                .iter()
                .map(|d| DraDevice {
                    name: (*d).to_owned(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn only_the_highest_generation_counts_and_completeness_is_by_slice_count() {
        let slices = [
            slice("a-old", "a", 1, 1, &["gpu-0", "gpu-1"]),
            slice("a-new-1", "a", 2, 2, &["gpu-0"]),
            slice("b-1", "b", 5, 2, &["gpu-0"]),
            slice("b-2", "b", 5, 2, &["gpu-1"]),
            // The same slice twice (a hand-made dump) is one slice.
            slice("b-2", "b", 5, 2, &["gpu-1"]),
        ];
        let pools = pools(&slices);
        assert_eq!(pools.len(), 2);
        let (a, b) = (&pools[0], &pools[1]);
        assert_eq!((a.generation, a.slices, a.expected_slices), (2, 1, 2));
        assert!(
            !a.complete(),
            "generation 2 has 1 of 2 slices: the rollover is in between"
        );
        assert_eq!(a.devices.len(), 1, "generation 1's devices are gone");
        assert!(b.complete());
        assert_eq!(b.devices.len(), 2);
        assert_eq!(b.node, Some("b"));
    }

    #[test]
    fn the_order_slices_arrive_in_changes_nothing() {
        let mut slices = vec![
            slice("x-2", "x", 1, 2, &["gpu-1", "gpu-0"]),
            slice("x-1", "x", 1, 2, &["gpu-0"]),
        ];
        let forward = format!("{:?}", pools(&slices));
        slices.reverse();
        assert_eq!(forward, format!("{:?}", pools(&slices)));
    }
}
