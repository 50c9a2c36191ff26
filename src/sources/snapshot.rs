//! What the readers held at one moment ([`Snapshot`]), and how the core is asked about it
//! ([`Snapshot::scan`]). The kinds the core reads on every scan have a field each; a reader whose objects no
//! field names keeps them in a slot of its own type ([`Slots`]).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use super::kueue::KueueObjects;
use crate::inventory::allocation::GpuPod;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::{DraClaim, DraClass, DraInput, DraSlice, DraTaintRule};
use crate::inventory::health::HealthTable;
use crate::inventory::memory::ScanMemory;
use crate::inventory::selector::LabelSelector;
use crate::inventory::topology::TopologyLevels;
use crate::inventory::utilization::Round;
use crate::inventory::{Inventory, NodeUniverse, ScanInput, scan};

/// What the sources held at one moment, tagged with the change version it is at least as new as.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// The [`ChangeSignal`](super::ChangeSignal) version read before the caches.
    pub version: u64,
    /// Every cached node.
    pub nodes: Vec<Arc<ClusterNode>>,
    /// Every cached GPU pod (pods asking for no `nvidia.com/*` resource and naming no claim are not kept).
    pub pods: Vec<Arc<GpuPod>>,
    /// ResourceSlices of the DRA GPU drivers.
    pub slices: Vec<Arc<DraSlice>>,
    /// Every ResourceClaim.
    pub claims: Vec<Arc<DraClaim>>,
    /// Every DeviceClass.
    pub classes: Vec<Arc<DraClass>>,
    /// Every DeviceTaintRule.
    pub taint_rules: Vec<Arc<DraTaintRule>>,
    /// The DRA GPU drivers.
    pub drivers: Arc<[String]>,
    /// Which node conditions are GPU health.
    pub health: Arc<HealthTable>,
    /// The topology levels: the built-in table, Kueue's Topologies' levels and `--topology-label`.
    pub topology: Arc<TopologyLevels>,
    /// Kueue's quota objects (none where Kueue is not installed).
    pub kueue: KueueObjects,
    /// The selector the node watch lists by (`--node-label-selector`), when it watches a subset.
    pub watched: Option<Arc<LabelSelector>>,
    /// The held GPUs' activity, where the utilization source is on.
    pub utilization: Option<Arc<Round>>,
    /// What readers without a field put here, one value per type (the hub's ClusterProfiles).
    pub slots: Slots,
}

impl Snapshot {
    /// The inventory of what `selector` picks among these objects (nodes that are `universe`).
    /// What earlier scans kept is reused through `memory`, if given (a one-shot scan has no earlier scan).
    pub fn scan(
        &self,
        selector: &LabelSelector,
        universe: NodeUniverse,
        memory: Option<&mut ScanMemory>,
    ) -> Inventory {
        let dra = DraInput {
            drivers: &self.drivers,
            slices: self.slices.iter().map(AsRef::as_ref).collect(),
            claims: self.claims.iter().map(AsRef::as_ref).collect(),
            classes: self.classes.iter().map(AsRef::as_ref).collect(),
            taint_rules: self.taint_rules.iter().map(AsRef::as_ref).collect(),
        };
        let mut input = ScanInput::shared(&self.nodes, &self.pods)
            .dra(dra)
            .selector(selector)
            .universe(universe)
            .health(&self.health)
            .topology(&self.topology);
        if let Some(kueue) = self.kueue.input() {
            input = input.kueue(kueue);
        }
        if let Some(watched) = &self.watched {
            input = input.watched_by(watched);
        }
        if let Some(round) = &self.utilization {
            input = input.utilization(round);
        }
        scan(match memory {
            Some(memory) => input.memory(memory),
            None => input,
        })
    }
}

/// One value per type: a reader's own objects, under a type only it names, so that adding a reader adds no
/// field here. Cheap to clone (the values are shared).
#[derive(Clone, Default)]
pub struct Slots(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Slots {
    /// Puts `value` in the slot of its type, replacing what was there.
    pub fn put<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if a reader put one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }
}

impl std::fmt::Debug for Slots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Slots({} filled)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_holds_one_value_per_type() {
        #[derive(Debug, PartialEq)]
        struct Count(usize);
        let mut slots = Slots::default();
        assert_eq!(slots.get::<Count>(), None);
        slots.put(Count(1));
        slots.put(Count(2));
        slots.put("another type".to_owned());
        assert_eq!(slots.get::<Count>(), Some(&Count(2)), "the last put stands");
        assert_eq!(
            slots.clone().get::<String>().map(String::as_str),
            Some("another type")
        );
    }
}
