//! The steady churn: SOAK_CHURN_RATE changes per second, open loop (one every 1/rate s, whatever the faults
//! do to the previous ones), each kind drawn from the seed: a GPU label change, a Ready flip, a GPU pod created
//! (bound, Running), finished (Succeeded) or deleted. Each change runs as its own task with a timeout, at most
//! IN_FLIGHT at once: while the API server is down they fail, while etcd is paused they wait, and a tick that
//! finds every slot busy is counted as skipped. What the cluster holds at the end is whatever landed; the soak
//! compares the operator with a fresh scan, never with the churn's own bookkeeping.
//!
//! DRA (`ChurnKind::Dra`, dra.rs): drawn only when the soak made a DRA fleet (the server serves
//! resource.k8s.io/v1 and the operator has `--dra-driver`): a claim allocated or released, a device tainted or
//! cleared, a pool's generation rolled over.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use testkit::nodes::set_ready;
use testkit::pods::{Phase, PodRec, create_pod, force_delete, set_phase};
use tokio::sync::{Semaphore, watch};

use crate::Res;
use crate::dra::{self, DraChange, DraFleet};
use crate::fleet::{Fleet, GpuNode, gpu_pod, held};
use crate::rng::Rng;

const IN_FLIGHT: usize = 16;
const CHANGE_TIMEOUT: Duration = Duration::from_secs(30);
const MEMORY_LABEL: &str = "nvidia.com/gpu.memory";

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChurnKind {
    Label,
    Ready,
    PodCreate,
    PodFinish,
    PodDelete,
    /// ResourceSlice / ResourceClaim changes (dra.rs).
    Dra,
}

impl ChurnKind {
    pub fn name(self) -> &'static str {
        match self {
            ChurnKind::Label => "label",
            ChurnKind::Ready => "ready",
            ChurnKind::PodCreate => "podCreate",
            ChurnKind::PodFinish => "podFinish",
            ChurnKind::PodDelete => "podDelete",
            ChurnKind::Dra => "dra",
        }
    }
}

/// What the churn did, by kind.
#[derive(Clone, Debug, Default)]
pub struct ChurnStats {
    pub made: BTreeMap<ChurnKind, u64>,
    pub failed: BTreeMap<ChurnKind, u64>,
    /// Ticks with every slot busy (etcd paused, API server slow).
    pub skipped: u64,
    /// Ticks of a kind with nothing to do (a pod change with no pod or no free GPU, a claim with no free device).
    pub idle: BTreeMap<ChurnKind, u64>,
}

impl ChurnStats {
    pub fn total_made(&self) -> u64 {
        self.made.values().sum()
    }
}

/// One change, ready to send.
enum Change {
    Label(String, String),
    Ready(String, bool),
    PodCreate(PodRec),
    PodFinish(PodRec),
    PodDelete(PodRec),
    Dra(DraChange),
}

/// The churn's model of the fleet (what it believes it wrote), used only to pick plausible changes.
pub struct Churn {
    client: Client,
    rng: Rng,
    gpu_nodes: Vec<GpuNode>,
    ready: Vec<bool>,
    pods: Vec<PodRec>,
    held: BTreeMap<String, u64>,
    next_pod: usize,
    memory: u64,
    dra: Option<DraFleet>,
}

impl Churn {
    pub fn new(client: &Client, fleet: &Fleet, rng: Rng, dra: Option<DraFleet>) -> Self {
        Churn {
            client: client.clone(),
            rng,
            ready: vec![true; fleet.gpu_nodes.len()],
            gpu_nodes: fleet.gpu_nodes.clone(),
            held: held(&fleet.pods),
            next_pod: fleet.pods.len(),
            pods: fleet.pods.clone(),
            memory: 100_000,
            dra,
        }
    }

    /// The kind of the next change: labels 3, Ready 2, pods 4 (create 2, finish 1, delete 1), DRA 2 when on.
    fn pick_kind(&mut self) -> ChurnKind {
        const WEIGHTS: [(ChurnKind, usize); 6] = [
            (ChurnKind::Label, 3),
            (ChurnKind::Ready, 2),
            (ChurnKind::PodCreate, 2),
            (ChurnKind::PodFinish, 1),
            (ChurnKind::PodDelete, 1),
            (ChurnKind::Dra, 2),
        ];
        let enabled: Vec<(ChurnKind, usize)> = WEIGHTS
            .into_iter()
            .filter(|(k, _)| *k != ChurnKind::Dra || self.dra.is_some())
            .collect();
        let mut draw = self.rng.below(enabled.iter().map(|(_, w)| w).sum());
        for (kind, weight) in enabled {
            if draw < weight {
                return kind;
            }
            draw -= weight;
        }
        ChurnKind::Label
    }

    /// The change of `kind`, applied to the model; None when there is nothing of that kind to do.
    fn prepare(&mut self, kind: ChurnKind) -> Option<Change> {
        let n = self.rng.below(self.gpu_nodes.len());
        match kind {
            ChurnKind::Label => {
                self.memory += 1;
                let name = self.gpu_nodes[n].name.clone();
                Some(Change::Label(name, self.memory.to_string()))
            }
            ChurnKind::Ready => {
                self.ready[n] = !self.ready[n];
                Some(Change::Ready(self.gpu_nodes[n].name.clone(), self.ready[n]))
            }
            ChurnKind::PodCreate => {
                let node = &self.gpu_nodes[n];
                let held = self.held.entry(node.name.clone()).or_default();
                (*held < node.gpus).then(|| {
                    *held += 1;
                    let pod = gpu_pod(self.next_pod, &node.name);
                    self.next_pod += 1;
                    self.pods.push(pod.clone());
                    Change::PodCreate(pod)
                })
            }
            ChurnKind::PodFinish | ChurnKind::PodDelete => {
                let pod = self.take_pod()?;
                Some(match kind {
                    ChurnKind::PodFinish => Change::PodFinish(pod),
                    _ => Change::PodDelete(pod),
                })
            }
            ChurnKind::Dra => self.dra_change(),
        }
    }

    fn dra_change(&mut self) -> Option<Change> {
        let change = self.dra.as_mut()?.change(&mut self.rng)?;
        Some(Change::Dra(change))
    }

    /// A random live pod, out of the model (it finishes or is deleted).
    fn take_pod(&mut self) -> Option<PodRec> {
        if self.pods.is_empty() {
            return None;
        }
        let i = self.rng.below(self.pods.len());
        let pod = self.pods.swap_remove(i);
        if let Some(h) = pod.node.as_ref().and_then(|n| self.held.get_mut(n)) {
            *h = h.saturating_sub(pod.gpus);
        }
        Some(pod)
    }
}

async fn send(client: &Client, change: Change) -> Res<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    match change {
        Change::Label(name, value) => {
            let patch = json!({ "metadata": { "labels": { MEMORY_LABEL: value } } });
            nodes
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Change::Ready(name, ready) => {
            let mut conditions = Vec::new();
            let now = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            set_ready(&mut conditions, ready, &now);
            let patch = json!({ "status": { "conditions": conditions } });
            nodes
                .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await?;
        }
        Change::PodCreate(pod) => create_pod(client, &pod).await?,
        Change::PodFinish(pod) => set_phase(client, &pod, Phase::Succeeded).await?,
        Change::PodDelete(pod) => force_delete(client, &pod).await?,
        Change::Dra(change) => dra::send(client, change).await?,
    }
    Ok(())
}

/// Runs the churn until `stop` turns true, then waits for the changes in flight (each bounded by its timeout).
pub async fn run(mut churn: Churn, rate: f64, mut stop: watch::Receiver<bool>) -> ChurnStats {
    let stats = Arc::new(Mutex::new(ChurnStats::default()));
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut tasks = tokio::task::JoinSet::new();
    while !*stop.borrow() {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => break,
        }
        while tasks.try_join_next().is_some() {}
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            stats.lock().unwrap().skipped += 1;
            continue;
        };
        let kind = churn.pick_kind();
        let Some(change) = churn.prepare(kind) else {
            *stats.lock().unwrap().idle.entry(kind).or_default() += 1;
            continue;
        };
        let (client, stats) = (churn.client.clone(), stats.clone());
        tasks.spawn(async move {
            let sent = tokio::time::timeout(CHANGE_TIMEOUT, send(&client, change)).await;
            let mut stats = stats.lock().unwrap();
            let counter = match sent {
                Ok(Ok(())) => &mut stats.made,
                _ => &mut stats.failed,
            };
            *counter.entry(kind).or_default() += 1;
            drop(slot);
        });
    }
    while tasks.join_next().await.is_some() {}
    stats.lock().unwrap().clone()
}

/// Whether DRA churn could run: the server serves resource.k8s.io/v1 and the operator has `--dra-driver`.
/// Returns that, and a sentence for the report.
pub async fn dra_available(client: &Client, operator_help: &str) -> (bool, String) {
    let served = client
        .list_api_group_resources("resource.k8s.io/v1")
        .await
        .is_ok();
    let supported = operator_help.contains("--dra-driver");
    let text = format!(
        "server serves resource.k8s.io/v1: {served}; operator has --dra-driver: {supported}"
    );
    (served && supported, text)
}
