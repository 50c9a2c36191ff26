//! The scale scenario's watches, held against both truths at once: the allocation scenario's (alloc_truth.rs:
//! the device-plugin nodes' `nvidia.com/gpu`, the pending GPU pods) and the DRA scenario's (dra_truth.rs: the
//! DRA nodes' `gpu.nvidia.com/gpu`). One watch on the inventory status feeds both parts (each sees the entries
//! of its own nodes, and the status's `omittedNodes` is checked once for the whole fleet), one watch on the
//! GpuNodes feeds each part the GpuNodes of its nodes. The ConfigMap is not watched: at this size it leaves
//! nodes out, and every node's detail is in its GpuNode.
//!
//! The part that holds the allocation truth is an `AllocObs` (`AsRef`/`AsMut`), so the allocation scenario's
//! timed changes and churn (alloc_changes.rs) run on it as they are.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::Value;
use testkit::lib_api::GpuInventory;
use tokio::sync::watch;

use crate::alloc_observe::{AllocObs, SeenStatus, seen_node};
use crate::alloc_truth::Expected;
use crate::dra_observe::{self, DraObs, SeenDra};
use crate::dra_truth::DraTruth;
use crate::gpunode_watch;
use crate::object_watch::watch_into;
use crate::observe::{Converging, Watched};

#[derive(Default)]
pub struct ScaleObs {
    /// The device-plugin nodes (and the timed changes).
    pub alloc: AllocObs,
    /// The DRA nodes.
    pub dra: DraObs,
    /// How the status's node entries fail to account for the fleet (None: every GPU node is listed or counted
    /// in `omittedNodes`, and nothing else is listed).
    pub coverage: Option<String>,
    /// GpuNodes named after no GPU node of the fleet.
    pub stray_gpunodes: BTreeSet<String>,
    /// The status's node entries and `omittedNodes`, as last seen.
    pub listed: Vec<String>,
    pub omitted: u64,
}

impl ScaleObs {
    fn new(expected: Expected, truth: DraTruth) -> Self {
        ScaleObs {
            alloc: AllocObs {
                expected,
                gpunodes: Some(HashMap::new()),
                skip_configmap: true,
                ..Default::default()
            },
            dra: DraObs {
                truth,
                gpunodes: Some(HashMap::new()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    /// A new version of the inventory status: each part gets the entries of its nodes (and, as its omitted
    /// count, its nodes that are not listed, once the whole status accounts for the whole fleet).
    fn set_status(&mut self, status: &Value) {
        let all = SeenStatus::parse(status);
        let dra = SeenDra::parse(status);
        let (n_alloc, n_dra) = (self.alloc.expected.nodes.len(), self.dra.truth.nodes.len());
        let omitted = all.omitted;
        let mut listed: Vec<String> = all.nodes.keys().cloned().collect();
        listed.sort();
        let stray = listed.iter().find(|n| {
            !self.alloc.expected.nodes.contains_key(*n) && !self.dra.truth.index.contains_key(*n)
        });
        self.coverage = match stray {
            Some(name) => Some(format!("{name}: listed, but no GPU node of the fleet")),
            None if listed.len() as u64 + omitted != (n_alloc + n_dra) as u64 => Some(format!(
                "{} nodes listed + {omitted} omitted, want {}",
                listed.len(),
                n_alloc + n_dra
            )),
            None => None,
        };
        let alloc_nodes: HashMap<_, _> = all
            .nodes
            .into_iter()
            .filter(|(n, _)| self.alloc.expected.nodes.contains_key(n))
            .collect();
        let dra_nodes: HashMap<_, _> = dra
            .nodes
            .into_iter()
            .filter(|(n, _)| self.dra.truth.index.contains_key(n))
            .collect();
        let (alloc_listed, dra_listed) = (alloc_nodes.len(), dra_nodes.len());
        self.alloc.status = Some(SeenStatus {
            nodes: alloc_nodes,
            omitted: (n_alloc - alloc_listed) as u64,
            ..all
        });
        self.dra.status = Some(SeenDra {
            nodes: dra_nodes,
            omitted: (n_dra - dra_listed) as u64,
            ..dra
        });
        self.dra.updates += 1;
        (self.listed, self.omitted) = (listed, omitted);
    }

    /// A GpuNode's new status (None: deleted), to the part whose node it is.
    fn set_gpunode(&mut self, name: String, status: Option<&Value>) {
        if self.alloc.expected.nodes.contains_key(&name) {
            let views = self.alloc.gpunodes.get_or_insert_with(HashMap::new);
            match status {
                Some(s) => views.insert(name, seen_node(s)),
                None => views.remove(&name),
            };
        } else if self.dra.truth.index.contains_key(&name) {
            let views = self.dra.gpunodes.get_or_insert_with(HashMap::new);
            match status {
                Some(s) => views.insert(name, dra_observe::seen(s)),
                None => views.remove(&name),
            };
        } else if status.is_some() {
            self.stray_gpunodes.insert(name);
        } else {
            self.stray_gpunodes.remove(&name);
        }
    }

    /// The device-plugin nodes the status lists, by name.
    pub fn listed_device_nodes(&self) -> Vec<String> {
        self.listed
            .iter()
            .filter(|n| self.alloc.expected.nodes.contains_key(*n))
            .cloned()
            .collect()
    }
}

impl Converging for ScaleObs {
    /// The status accounts for the fleet and shows both truths; every GpuNode shows its node's, and no other
    /// GpuNode exists.
    fn converged(&self) -> bool {
        self.coverage.is_none()
            && self.stray_gpunodes.is_empty()
            && self.alloc.status_ok()
            && self.alloc.gpunodes_ok()
            && self.dra.converged()
    }

    fn why_not(&self) -> String {
        let stray = match self.stray_gpunodes.first() {
            Some(first) => format!("{} (first {first})", self.stray_gpunodes.len()),
            None => "none".into(),
        };
        format!(
            "coverage: {}; device-plugin nodes: {}; DRA nodes: {}; stray GpuNodes: {stray}",
            self.coverage.as_deref().unwrap_or("ok"),
            self.alloc.why_not(),
            self.dra.why_not()
        )
    }
}

impl AsRef<AllocObs> for ScaleObs {
    fn as_ref(&self) -> &AllocObs {
        &self.alloc
    }
}

impl AsMut<AllocObs> for ScaleObs {
    fn as_mut(&mut self) -> &mut AllocObs {
        &mut self.alloc
    }
}

pub type ScaleObserver = Watched<ScaleObs>;

/// Watches the inventory and every GpuNode, against `expected` (device-plugin nodes) and `truth` (DRA nodes).
pub fn start(
    client: &Client,
    inventory: &str,
    expected: Expected,
    truth: DraTruth,
) -> ScaleObserver {
    let obs = Arc::new(Mutex::new(ScaleObs::new(expected, truth)));
    let (tx, rx) = watch::channel(0u64);
    let tx = Arc::new(tx);
    let resource = ApiResource::erase::<GpuInventory>(&());
    let inventories: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let (o, t) = (obs.clone(), tx.clone());
    let inv = watch_into(inventories, inventory, "inventory", o, t, |obs, i, now| {
        obs.set_status(&i.data["status"]);
        obs.alloc.settle(now);
    });
    let o = obs.clone();
    let gpunodes = gpunode_watch::spawn_watch(client, move |name, status, now: Instant| {
        let mut obs = o.lock().unwrap();
        obs.set_gpunode(name, status);
        obs.alloc.settle(now);
        drop(obs);
        tx.send_modify(|n| *n += 1);
    });
    Watched::new(obs, rx, vec![inv, gpunodes])
}
