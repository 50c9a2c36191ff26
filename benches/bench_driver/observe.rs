//! Observation: watches on the inventory and the ConfigMap, held against what the scanner says about the
//! driver's nodes. They decide convergence and time the latency changes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use testkit::lib_api::{GpuInventory, GpuNodeEntry};
use tokio::sync::watch;

use crate::object_watch::{Changed, watch_into};

const CONFIGMAP: &str = "gpu-node-status";

/// What the driver expects and what its watches saw.
#[derive(Default)]
pub struct Obs {
    /// The expected entry of every GPU node (scanner output on the driver's copy of the node).
    pub truth: HashMap<String, GpuNodeEntry>,
    /// Status totals and entries, as last seen.
    status: Option<(u32, u32, u64)>,
    status_entries: HashMap<String, GpuNodeEntry>,
    /// ConfigMap entries, as last seen.
    cm: HashMap<String, GpuNodeEntry>,
    /// Latency changes in flight, by node.
    pub pending: HashMap<String, Pending>,
    /// Finished latencies.
    pub latencies: Vec<Duration>,
}

/// A latency change: when it was written, and when the status and the ConfigMap showed it.
#[derive(Default)]
pub struct Pending {
    pub written: Option<Instant>,
    status_at: Option<Instant>,
    cm_at: Option<Instant>,
}

impl Obs {
    /// The status totals and entries and the ConfigMap's entries all match the truth.
    pub fn converged(&self) -> bool {
        let Some((total, ready, gpus)) = self.status else {
            return false;
        };
        let want_ready = self.truth.values().filter(|e| e.ready).count() as u32;
        let want_gpus: u64 = self.truth.values().map(|e| e.count).sum();
        total as usize == self.truth.len()
            && ready == want_ready
            && gpus == want_gpus
            && self.status_entries.len() == self.truth.len()
            && self.cm.len() == self.truth.len()
            && self.truth.iter().all(|(name, want)| {
                self.status_entries.get(name) == Some(want) && self.cm.get(name) == Some(want)
            })
    }

    /// Marks, at `now`, the pending changes that the status or the ConfigMap now shows.
    pub fn settle_pending(&mut self, now: Instant) {
        let truth = &self.truth;
        let status = &self.status_entries;
        let cm = &self.cm;
        for (name, p) in self.pending.iter_mut() {
            let want = truth.get(name);
            if p.status_at.is_none() && status.get(name) == want {
                p.status_at = Some(now);
            }
            if p.cm_at.is_none() && cm.get(name) == want {
                p.cm_at = Some(now);
            }
        }
        self.finish_pending();
    }

    /// Moves the changes seen in both places to `latencies` (write to the later of the two).
    fn finish_pending(&mut self) {
        let done: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.written.is_some() && p.status_at.is_some() && p.cm_at.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        for name in done {
            let p = self.pending.remove(&name).expect("pending");
            let seen = p.status_at.unwrap().max(p.cm_at.unwrap());
            self.latencies
                .push(seen.saturating_duration_since(p.written.unwrap()));
        }
    }
}

/// An observation kept current by watch tasks, with a signal per update: what both the steady/heartbeat
/// scenarios ([`Observer`]) and the allocation scenario (`AllocObserver`) wait on.
/// An observation that says whether the program under test converged, and why not.
pub trait Converging {
    /// Every output shows what the driver expects.
    fn converged(&self) -> bool;
    /// What does not, in words.
    fn why_not(&self) -> String;
}

pub struct Watched<O> {
    pub obs: Arc<Mutex<O>>,
    changed: watch::Receiver<u64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl<O> Watched<O> {
    /// `obs`, updated by `tasks`, which bump `changed` after each update.
    pub fn new(
        obs: Arc<Mutex<O>>,
        changed: watch::Receiver<u64>,
        tasks: Vec<tokio::task::JoinHandle<()>>,
    ) -> Self {
        Watched {
            obs,
            changed,
            tasks,
        }
    }

    /// Waits until `cond` holds (checked after every watch event); returns false on timeout.
    pub async fn wait_for(&mut self, timeout: Duration, cond: impl Fn(&O) -> bool) -> bool {
        self.wait_for_every(timeout, Duration::ZERO, cond).await
    }

    /// [`Watched::wait_for`], `cond` checked at most once every `gap`: a check that reads every node of a large
    /// fleet, made after each of thousands of events, would take the CPU the program under test needs. What it
    /// waits for is seen up to `gap` late.
    pub async fn wait_for_every(
        &mut self,
        timeout: Duration,
        gap: Duration,
        cond: impl Fn(&O) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if cond(&self.obs.lock().unwrap()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, self.changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return cond(&self.obs.lock().unwrap()),
            }
            if !gap.is_zero() {
                tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + gap)).await;
            }
        }
    }

    pub fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

/// The inventory status and ConfigMap of the steady and heartbeat scenarios, against their truth.
pub type Observer = Watched<Obs>;

impl Watched<Obs> {
    /// Starts the watches on the inventory `inventory` and on the ConfigMap in `namespace`.
    pub fn start(
        client: &Client,
        inventory: &str,
        namespace: &str,
        truth: HashMap<String, GpuNodeEntry>,
    ) -> Self {
        let obs = Arc::new(Mutex::new(Obs {
            truth,
            ..Default::default()
        }));
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let inv_task = watch_inventory(client, inventory, obs.clone(), tx.clone());
        let cm_task = watch_configmap(client, namespace, obs.clone(), tx);
        Watched::new(obs, rx, vec![inv_task, cm_task])
    }
}

fn watch_inventory(
    client: &Client,
    inventory: &str,
    obs: Arc<Mutex<Obs>>,
    changed: Changed,
) -> tokio::task::JoinHandle<()> {
    let api: Api<GpuInventory> = Api::all(client.clone());
    watch_into(
        api,
        inventory,
        "inventory",
        obs,
        changed,
        |obs, inventory, now| {
            let Some(status) = inventory.status else {
                return;
            };
            obs.status = Some((
                status.total_gpu_nodes,
                status.ready_gpu_nodes,
                status.total_gpus,
            ));
            obs.status_entries = status
                .nodes
                .into_iter()
                .map(|e| (e.name.clone(), e))
                .collect();
            obs.settle_pending(now);
        },
    )
}

fn watch_configmap(
    client: &Client,
    namespace: &str,
    obs: Arc<Mutex<Obs>>,
    changed: Changed,
) -> tokio::task::JoinHandle<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    watch_into(api, CONFIGMAP, "configmap", obs, changed, |obs, cm, now| {
        obs.cm = configmap_entries(cm);
        obs.settle_pending(now);
    })
}

/// The node entries of the ConfigMap (keys starting with `_` are summaries, not nodes).
fn configmap_entries(cm: ConfigMap) -> HashMap<String, GpuNodeEntry> {
    cm.data
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .filter_map(|(k, v)| serde_json::from_str(&v).ok().map(|e| (k, e)))
        .collect()
}

impl<O: Converging> Watched<O> {
    /// Why the program has not converged, now.
    pub fn why_not(&self) -> String {
        self.obs.lock().unwrap().why_not()
    }

    /// Waits up to `timeout` for convergence; logs a warning naming `scenario`, `program` and what it came
    /// `after` when it does not come.
    pub async fn settle(
        &mut self,
        timeout: Duration,
        scenario: &str,
        program: &str,
        after: &str,
    ) -> bool {
        self.settle_every(timeout, Duration::ZERO, scenario, program, after)
            .await
    }

    /// Waits up to `timeout` for a program's start-up to converge (checked at most once every `gap`); an error
    /// saying what does not show the truth, and where the program's log is, when it does not.
    pub async fn converge_or_fail(
        &mut self,
        timeout: Duration,
        gap: Duration,
        log_path: &std::path::Path,
    ) -> crate::Res<()> {
        if self.wait_for_every(timeout, gap, O::converged).await {
            return Ok(());
        }
        let (secs, why, log) = (timeout.as_secs(), self.why_not(), log_path.display());
        Err(format!("not converged after {secs}s: {why} (see {log})").into())
    }

    /// [`Watched::settle`], convergence checked at most once every `gap` ([`Watched::wait_for_every`]).
    pub async fn settle_every(
        &mut self,
        timeout: Duration,
        gap: Duration,
        scenario: &str,
        program: &str,
        after: &str,
    ) -> bool {
        let ok = self.wait_for_every(timeout, gap, O::converged).await;
        if !ok {
            crate::log(format!(
                "{scenario}: WARNING {program} not converged after {after}: {}",
                self.why_not()
            ));
        }
        ok
    }
}
