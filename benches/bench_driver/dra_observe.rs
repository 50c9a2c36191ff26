//! The DRA scenario's watch on the inventory status, held against the driver's truth: the
//! `gpu.nvidia.com/gpu` row of `resources[]` (the whole fleet, omitted nodes included), and each node entry
//! of `nodes[]` (allocatable, allocated, free), with `omittedNodes` accounting for the entries the operator
//! left out to keep the object under the API server's size limit; and, for a program that writes them, the
//! GpuNodes (each node's numbers in its `status`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::Value;
use testkit::lib_api::GpuInventory;
use tokio::sync::watch;

use crate::alloc_observe::int;
use crate::dra_fleet::WHOLE_GPU;
use crate::dra_truth::{DraTruth, NodeNumbers};
use crate::gpunode_watch;
use crate::object_watch::watch_into;
use crate::observe::Watched;

/// Three numbers as the operator wrote them (absent: None): allocatable, allocated, free.
pub type SeenNumbers = (Option<u64>, Option<u64>, Option<u64>);

/// A node entry's `gpu.nvidia.com/gpu` numbers (a status `nodes[]` entry, a GpuNode's status).
pub fn seen(entry: &Value) -> SeenNumbers {
    (
        int(&entry["allocatable"][WHOLE_GPU]),
        int(&entry["allocated"][WHOLE_GPU]),
        int(&entry["free"][WHOLE_GPU]),
    )
}

fn want(n: NodeNumbers) -> SeenNumbers {
    (Some(n.0), Some(n.1), Some(n.2))
}

/// The DRA part of an inventory status.
#[derive(Clone, Debug, Default)]
pub struct SeenDra {
    pub nodes: HashMap<String, SeenNumbers>,
    /// The `gpu.nvidia.com/gpu` row of `resources`.
    pub resource: Option<SeenNumbers>,
    pub omitted: u64,
}

impl SeenDra {
    pub fn parse(status: &Value) -> Self {
        let list = |k: &str| status[k].as_array().cloned().unwrap_or_default();
        SeenDra {
            nodes: list("nodes")
                .iter()
                .filter_map(|e| Some((e["name"].as_str()?.to_owned(), seen(e))))
                .collect(),
            resource: list("resources")
                .iter()
                .find(|r| r["name"] == WHOLE_GPU)
                .map(|r| {
                    (
                        int(&r["allocatable"]),
                        int(&r["allocated"]),
                        int(&r["free"]),
                    )
                }),
            omitted: int(&status["omittedNodes"]).unwrap_or(0),
        }
    }
}

/// The first way the status differs from the truth, if any.
pub fn mismatch(truth: &DraTruth, seen: &SeenDra) -> Option<String> {
    let totals = want(truth.totals());
    if seen.resource != Some(totals) {
        return Some(format!(
            "resources {WHOLE_GPU}: {:?}, want {totals:?}",
            seen.resource
        ));
    }
    if seen.nodes.len() as u64 + seen.omitted != truth.nodes.len() as u64 {
        return Some(format!(
            "{} node entries + {} omitted, want {}",
            seen.nodes.len(),
            seen.omitted,
            truth.nodes.len()
        ));
    }
    seen.nodes
        .iter()
        .find_map(|(name, s)| match truth.numbers_of(name) {
            None => Some(format!("{name}: not a bench node")),
            Some(n) if want(n) != *s => Some(format!("{name}: {s:?}, want {:?}", want(n))),
            Some(_) => None,
        })
}

/// A timed change in flight: the node whose device it took or freed, when it was written, when the status
/// and the node's GpuNode showed it.
#[derive(Debug, Default)]
pub struct Change {
    pub node: usize,
    pub written: Option<Instant>,
    pub status_at: Option<Instant>,
    pub gpunode_at: Option<Instant>,
}

#[derive(Default)]
pub struct DraObs {
    pub truth: DraTruth,
    pub status: Option<SeenDra>,
    /// Versions of the status seen.
    pub updates: u64,
    pub change: Option<Change>,
    /// Latencies of the finished changes: write's response -> status.
    pub timings: Vec<Duration>,
    /// The GpuNodes' numbers by node; None when the program writes no GpuNodes (not waited for).
    pub gpunodes: Option<HashMap<String, SeenNumbers>>,
    /// Latencies of the finished changes: write's response -> the node's GpuNode.
    pub gpunode_timings: Vec<Duration>,
}

/// The first way the GpuNodes differ from the truth, if any.
pub fn gpunode_mismatch(truth: &DraTruth, seen: &HashMap<String, SeenNumbers>) -> Option<String> {
    if seen.len() != truth.nodes.len() {
        return Some(format!(
            "{} GpuNodes, want {}",
            seen.len(),
            truth.nodes.len()
        ));
    }
    (0..truth.nodes.len()).find_map(|i| {
        let name = &truth.nodes[i];
        match seen.get(name) {
            None => Some(format!("{name}: no GpuNode")),
            Some(s) if *s != want(truth.numbers(i)) => Some(format!(
                "GpuNode {name}: {s:?}, want {:?}",
                want(truth.numbers(i))
            )),
            Some(_) => None,
        }
    })
}

impl DraObs {
    /// The status and (when the program writes them) every GpuNode show the truth.
    pub fn converged(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| mismatch(&self.truth, s).is_none())
            && self
                .gpunodes
                .as_ref()
                .is_none_or(|g| gpunode_mismatch(&self.truth, g).is_none())
    }

    pub fn why_not(&self) -> String {
        let status = match &self.status {
            None => "no status yet".into(),
            Some(s) => mismatch(&self.truth, s).unwrap_or_else(|| "ok".into()),
        };
        let gpunodes = match &self.gpunodes {
            None => "not written by this program".into(),
            Some(g) => gpunode_mismatch(&self.truth, g).unwrap_or_else(|| "ok".into()),
        };
        format!("status: {status}; GpuNodes: {gpunodes}")
    }

    /// Node indices with an entry in the status's `nodes[]` (the others are omitted).
    pub fn listed_nodes(&self) -> Vec<bool> {
        let mut listed = vec![false; self.truth.nodes.len()];
        for name in self.status.iter().flat_map(|s| s.nodes.keys()) {
            if let Some(&i) = self.truth.index.get(name) {
                listed[i] = true;
            }
        }
        listed
    }

    /// Marks, at `now`, what shows the change in flight: the status (the totals, and the node's entry), the
    /// node's GpuNode; finishes it when both do (the status alone for a program without GpuNodes).
    fn settle(&mut self, now: Instant) {
        let Some(c) = self.change.as_mut() else {
            return;
        };
        let Some(written) = c.written else {
            return;
        };
        let node = &self.truth.nodes[c.node];
        let want_node = want(self.truth.numbers(c.node));
        if c.status_at.is_none()
            && let Some(s) = &self.status
            && s.nodes.get(node) == Some(&want_node)
            && s.resource == Some(want(self.truth.totals()))
        {
            c.status_at = Some(now);
        }
        if c.gpunode_at.is_none()
            && let Some(g) = &self.gpunodes
            && g.get(node) == Some(&want_node)
        {
            c.gpunode_at = Some(now);
        }
        let gpunode_seen = self.gpunodes.is_none() || c.gpunode_at.is_some();
        if let (Some(s), true) = (c.status_at, gpunode_seen) {
            self.timings.push(s.saturating_duration_since(written));
            if let Some(g) = c.gpunode_at {
                self.gpunode_timings
                    .push(g.saturating_duration_since(written));
            }
            self.change = None;
        }
    }

    /// The change in flight was written at `at`.
    pub fn written(&mut self, at: Instant) {
        if let Some(c) = self.change.as_mut() {
            c.written = Some(at);
        }
        self.settle(at);
    }
}

pub type DraObserver = Watched<DraObs>;

impl Watched<DraObs> {
    /// Watches the inventory and, with `gpunodes`, every GpuNode.
    pub fn start(client: &Client, inventory: &str, truth: DraTruth, gpunodes: bool) -> Self {
        let obs = Arc::new(Mutex::new(DraObs {
            truth,
            gpunodes: gpunodes.then(HashMap::new),
            ..Default::default()
        }));
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let resource = ApiResource::erase::<GpuInventory>(&());
        let inventories: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let (o, t) = (obs.clone(), tx.clone());
        let task = watch_into(inventories, inventory, "inventory", o, t, |obs, i, now| {
            obs.status = Some(SeenDra::parse(&i.data["status"]));
            obs.updates += 1;
            obs.settle(now);
        });
        let mut tasks = vec![task];
        if gpunodes {
            tasks.push(gpunode_watch::spawn_views(client, obs.clone(), tx, seen));
        }
        Watched::new(obs, rx, tasks)
    }
}

impl gpunode_watch::GpuNodeViews for DraObs {
    type View = SeenNumbers;

    fn views(&mut self) -> Option<&mut HashMap<String, Self::View>> {
        self.gpunodes.as_mut()
    }

    fn settle(&mut self, now: Instant) {
        DraObs::settle(self, now);
    }
}

impl crate::observe::Converging for DraObs {
    fn converged(&self) -> bool {
        DraObs::converged(self)
    }

    fn why_not(&self) -> String {
        DraObs::why_not(self)
    }
}
