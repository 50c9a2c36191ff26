//! The changes the driver makes to GPU nodes: label changes (churn, burst) and the single-node changes whose
//! reaction latency it measures.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;
use testkit::lib_api::{GpuNodeEntry, ScanScope, idle_entry};
use testkit::nodes::{is_ready, set_ready};

use crate::Res;
use crate::observe::{Observer, Pending};

const MEMORY_LABEL: &str = "nvidia.com/gpu.memory";

/// The driver's copies of the GPU nodes, and the writes that change them.
pub struct Changer {
    api: Api<Node>,
    nodes: BTreeMap<String, Node>,
    names: Vec<String>,
    next: usize,
    memory: u64,
    /// The scope the nodes are scanned in (label and Ready changes do not change it).
    scope: ScanScope<'static>,
}

#[derive(Clone, Copy)]
enum ChangeKind {
    Label,
    Ready,
}

enum Request {
    Label(String, String),
    Ready(String, NodeCondition),
}

impl Changer {
    pub fn new(client: &Client, nodes: BTreeMap<String, Node>, scope: ScanScope<'static>) -> Self {
        let names = nodes.keys().cloned().collect();
        Changer {
            api: Api::all(client.clone()),
            nodes,
            names,
            next: 0,
            memory: 100_000,
            scope,
        }
    }

    /// The next GPU node (round robin) that has no change in flight.
    fn pick(&mut self, busy: impl Fn(&str) -> bool) -> Option<String> {
        for _ in 0..self.names.len() {
            let name = &self.names[self.next % self.names.len()];
            self.next += 1;
            if !busy(name) {
                return Some(name.clone());
            }
        }
        None
    }

    /// Applies the change to the local copy; returns the new expected entry and the request to send.
    fn prepare(&mut self, name: &str, kind: ChangeKind) -> (GpuNodeEntry, Request) {
        let node = self.nodes.get_mut(name).expect("known node");
        let request = match kind {
            ChangeKind::Label => {
                self.memory += 1;
                let value = self.memory.to_string();
                node.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(MEMORY_LABEL.into(), value.clone());
                Request::Label(name.to_owned(), value)
            }
            ChangeKind::Ready => {
                let ready = !is_ready(node);
                let at = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
                let status = node.status.get_or_insert_with(Default::default);
                set_ready(status.conditions.get_or_insert_with(Vec::new), ready, &at);
                let condition = status
                    .conditions
                    .as_ref()
                    .unwrap()
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .unwrap()
                    .clone();
                Request::Ready(name.to_owned(), condition)
            }
        };
        let entry = idle_entry(node, self.scope).expect("still a GPU node");
        (entry, request)
    }
}

async fn send(api: &Api<Node>, request: Request) -> Res<()> {
    match request {
        Request::Label(name, value) => {
            let patch = json!({ "metadata": { "labels": { MEMORY_LABEL: value } } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Request::Ready(name, condition) => {
            let patch = json!({ "status": { "conditions": [condition] } });
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await?;
        }
    }
    Ok(())
}

/// Sends label changes to GPU nodes: `total` of them, at `rate` per second (0: as fast as 16 in flight go).
pub async fn label_changes(
    changer: &mut Changer,
    observer: &Observer,
    total: usize,
    rate: u64,
) -> Res<usize> {
    let mut requests = Vec::with_capacity(total);
    {
        let mut obs = observer.obs.lock().unwrap();
        for _ in 0..total {
            let name = changer.pick(|_| false).expect("GPU nodes");
            let (entry, request) = changer.prepare(&name, ChangeKind::Label);
            obs.truth.insert(name, entry);
            requests.push(request);
        }
    }
    let api = changer.api.clone();
    if let Some(period_us) = 1_000_000u64.checked_div(rate) {
        // Open loop: one write every 1/rate s, whatever the previous writes' latency.
        let mut tick = tokio::time::interval(Duration::from_micros(period_us));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut inflight = tokio::task::JoinSet::new();
        for request in requests {
            tick.tick().await;
            let api = api.clone();
            inflight.spawn(async move { send(&api, request).await });
        }
        while let Some(joined) = inflight.join_next().await {
            joined??;
        }
    } else {
        futures::stream::iter(requests)
            .map(|r| send(&api, r))
            .buffer_unordered(16)
            .try_collect::<()>()
            .await?;
    }
    Ok(total)
}

/// Reaction latency: `count` changes, alternating a label change and a Ready flip, each on a node with no
/// change in flight. The next change goes out when the previous one is visible or after `gap`.
/// Returns the latencies and how many changes were never seen.
pub async fn latency_run(
    changer: &mut Changer,
    observer: &mut Observer,
    count: usize,
    gap: Duration,
    settle: Duration,
) -> Res<(Vec<Duration>, usize)> {
    observer.obs.lock().unwrap().latencies.clear();
    for i in 0..count {
        let kind = if i % 2 == 0 {
            ChangeKind::Label
        } else {
            ChangeKind::Ready
        };
        let (name, request) = register_change(changer, observer, kind).await;
        send(&changer.api, request).await?;
        let written = Instant::now();
        {
            let mut obs = observer.obs.lock().unwrap();
            if let Some(p) = obs.pending.get_mut(&name) {
                p.written = Some(written);
            }
            obs.settle_pending(written);
        }
        observer
            .wait_for(gap, move |o| !o.pending.contains_key(&name))
            .await;
        // Independent changes, not a burst: a short pause between them.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    observer.wait_for(settle, |o| o.pending.is_empty()).await;
    let mut obs = observer.obs.lock().unwrap();
    let lost = obs.pending.len();
    obs.pending.clear();
    Ok((std::mem::take(&mut obs.latencies), lost))
}

/// Picks a node with no change in flight (waiting for one if all are busy) and registers the expectation
/// before the write, so an early watch event is not missed.
async fn register_change(
    changer: &mut Changer,
    observer: &mut Observer,
    kind: ChangeKind,
) -> (String, Request) {
    loop {
        let picked = {
            let mut obs = observer.obs.lock().unwrap();
            let busy: Vec<String> = obs.pending.keys().cloned().collect();
            changer.pick(|n| busy.iter().any(|b| b == n)).map(|name| {
                let (entry, request) = changer.prepare(&name, kind);
                obs.truth.insert(name.clone(), entry);
                obs.pending.insert(name.clone(), Pending::default());
                (name, request)
            })
        };
        match picked {
            Some(p) => return p,
            None => {
                observer.wait_for(Duration::from_secs(1), |_| false).await;
            }
        }
    }
}
