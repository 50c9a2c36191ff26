//! The DRA scenario's watch on the inventory status, held against the driver's truth: the
//! `gpu.nvidia.com/gpu` row of `resources[]` (the whole fleet, omitted nodes included), and each node entry
//! of `nodes[]` (allocatable, allocated, free), with `omittedNodes` accounting for the entries the operator
//! left out to keep the object under the API server's size limit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::Value;
use tokio::sync::watch;

use crate::alloc_observe::{int, spawn_watch};
use crate::dra_fleet::WHOLE_GPU;
use crate::dra_truth::{DraTruth, NodeNumbers};
use crate::lib_api::GpuInventory;
use crate::observe::Watched;

/// Three numbers as the operator wrote them (absent: None): allocatable, allocated, free.
pub type SeenNumbers = (Option<u64>, Option<u64>, Option<u64>);

fn seen(entry: &Value) -> SeenNumbers {
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
/// showed it.
#[derive(Debug)]
pub struct Change {
    pub node: usize,
    pub written: Option<Instant>,
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
}

impl DraObs {
    pub fn converged(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| mismatch(&self.truth, s).is_none())
    }

    pub fn why_not(&self) -> String {
        match &self.status {
            None => "no status yet".into(),
            Some(s) => mismatch(&self.truth, s).unwrap_or_else(|| "ok".into()),
        }
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

    /// Finishes the change in flight, at `now`, once the status shows it: the totals, and the node's entry.
    fn settle(&mut self, now: Instant) {
        let (Some(c), Some(s)) = (&self.change, &self.status) else {
            return;
        };
        let Some(written) = c.written else {
            return;
        };
        let node = &self.truth.nodes[c.node];
        let entry_ok = s
            .nodes
            .get(node)
            .is_some_and(|e| *e == want(self.truth.numbers(c.node)));
        if entry_ok && s.resource == Some(want(self.truth.totals())) {
            self.timings.push(now.saturating_duration_since(written));
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
    pub fn start(client: &Client, inventory: &str, truth: DraTruth) -> Self {
        let obs = Arc::new(Mutex::new(DraObs {
            truth,
            ..Default::default()
        }));
        let (tx, rx) = watch::channel(0u64);
        let resource = ApiResource::erase::<GpuInventory>(&());
        let inventories: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let o = obs.clone();
        let task = spawn_watch(inventories, inventory, "inventory", move |i, now| {
            let status = SeenDra::parse(&i.data["status"]);
            let mut obs = o.lock().unwrap();
            obs.status = Some(status);
            obs.updates += 1;
            obs.settle(now);
            drop(obs);
            tx.send_modify(|n| *n += 1);
        });
        Watched::new(obs, rx, vec![task])
    }
}
