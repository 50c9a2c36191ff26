//! The pod changes of the allocation scenario: single GPU-pod changes timed for latency (a bind of a
//! pending pod, a delete of a running one, in turn), and churn: pod lifecycles at a steady rate. The scale
//! scenario runs both at once: its timed changes go to the GPU nodes `AllocObs::reserved` names, which churn
//! leaves alone, and a bind turn with no pending pod left creates a GPU pod bound there instead. Both work on
//! any observation that holds an `AllocObs` (`AsRef`/`AsMut`: the allocation scenario's, the scale scenario's).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;
use testkit::pods::{self, Phase, PodRec, namespace_of};

use crate::Res;
use crate::alloc_observe::{AllocObs, Change, Timing};
use crate::observe::Watched;

/// The driver's pods, and which of them the timed changes can take.
pub struct Pods {
    pub recs: Vec<PodRec>,
    /// Unbound GPU pods (indices into `recs`), taken from the end.
    unbound: Vec<usize>,
    /// GPU pods holding GPUs (indices), taken round robin.
    holding: Vec<usize>,
    next_holding: usize,
    /// Where the search for a node with room starts next.
    next_node: usize,
    /// GPU pods the timed changes created (no pending pod was left to bind), for unique names.
    created: usize,
}

impl Pods {
    pub fn new(recs: Vec<PodRec>) -> Self {
        let unbound = (0..recs.len())
            .filter(|&i| recs[i].gpus > 0 && recs[i].phase == Phase::Unschedulable)
            .collect();
        let holding = (0..recs.len())
            .filter(|&i| recs[i].gpus > 0 && recs[i].node.is_some() && recs[i].phase.holds())
            .collect();
        Pods {
            recs,
            unbound,
            holding,
            next_holding: 0,
            next_node: 0,
            created: 0,
        }
    }
}

/// A GPU node with room for `gpus` more, searched round robin from `*cursor`: one of the nodes reserved for
/// the timed changes (`reserved`) or one of the others; any node when none is reserved.
fn node_with_room(obs: &AllocObs, gpus: u64, cursor: &mut usize, reserved: bool) -> Option<String> {
    let names: Vec<&String> = obs.expected.nodes.keys().collect();
    for _ in 0..names.len() {
        let name = names[*cursor % names.len()];
        *cursor += 1;
        let allowed = obs.reserved.is_empty() || obs.reserved.contains(name) == reserved;
        if allowed && obs.expected.free(name) >= gpus {
            return Some(name.clone());
        }
    }
    None
}

/// What a timed change sends.
enum Send {
    Bind(PodRec, String),
    Create(PodRec),
    Delete(PodRec),
}

/// Picks the next change (a bind on even turns while unbound pods and room last, a create of a GPU pod bound
/// to a node with room when no unbound pod is left; else a delete), applies it to the expectation and
/// registers it as the change in flight, before anything is sent. With nodes reserved for the timed changes,
/// only they take or give up GPUs.
fn prepare(pods: &mut Pods, obs: &mut AllocObs, bind: bool) -> Option<(&'static str, Send)> {
    if bind
        && pods.unbound.is_empty()
        && let Some(node) = node_with_room(obs, 1, &mut pods.next_node, true)
    {
        let k = pods.created;
        pods.created += 1;
        let rec = PodRec {
            namespace: namespace_of(k),
            name: format!("timed-{k:05}"),
            node: Some(node.clone()),
            gpus: 1,
            phase: Phase::Pending,
        };
        obs.expected.add(&rec);
        obs.change = Some(Change::on(node));
        pods.holding.push(pods.recs.len());
        pods.recs.push(rec.clone());
        return Some(("create", Send::Create(rec)));
    }
    if bind && let Some(&u) = pods.unbound.last() {
        let gpus = pods.recs[u].gpus;
        if let Some(node) = node_with_room(obs, gpus, &mut pods.next_node, true) {
            pods.unbound.pop();
            obs.expected.remove(&pods.recs[u]);
            let rec = &mut pods.recs[u];
            rec.node = Some(node.clone());
            rec.phase = Phase::Pending;
            obs.expected.add(rec);
            obs.change = Some(Change::on(node.clone()));
            pods.holding.push(u);
            return Some(("bind", Send::Bind(rec.clone(), node)));
        }
    }
    for _ in 0..pods.holding.len() {
        let at = pods.next_holding % pods.holding.len();
        pods.next_holding += 1;
        let rec = pods.recs[pods.holding[at]].clone();
        let Some(node) = rec.node.clone() else {
            continue;
        };
        if !obs.reserved.is_empty() && !obs.reserved.contains(&node) {
            continue;
        }
        let d = pods.holding.swap_remove(at);
        obs.expected.remove(&rec);
        pods.recs[d].phase = Phase::Succeeded; // gone: holds nothing any more
        obs.change = Some(Change::on(node));
        return Some(("delete", Send::Delete(rec)));
    }
    None
}

/// The latencies of `count` changes, and how many were never seen within `wait`.
#[derive(Default)]
pub struct LatencyRun {
    pub timings: Vec<Timing>,
    pub binds: usize,
    pub creates: usize,
    pub deletes: usize,
    pub lost: usize,
}

/// `count` single GPU-pod changes, one at a time: each waits until every output shows it (at most `wait`),
/// then 20 ms.
pub async fn latency_run<O: AsRef<AllocObs> + AsMut<AllocObs>>(
    client: &Client,
    pods: &mut Pods,
    observer: &mut Watched<O>,
    count: usize,
    wait: Duration,
) -> Res<LatencyRun> {
    let mut run = LatencyRun::default();
    observer.obs.lock().unwrap().as_mut().timings.clear();
    for i in 0..count {
        let prepared = prepare(pods, observer.obs.lock().unwrap().as_mut(), i % 2 == 0);
        let Some((kind, send)) = prepared else {
            return Err("no GPU pod left to bind or delete".into());
        };
        match send {
            Send::Bind(rec, node) => pods::bind(client, &rec, &node).await?,
            Send::Create(rec) => pods::create_bound(client, &rec).await?,
            Send::Delete(rec) => pods::force_delete(client, &rec).await?,
        }
        observer
            .obs
            .lock()
            .unwrap()
            .as_mut()
            .written(Instant::now());
        match kind {
            "bind" => run.binds += 1,
            "create" => run.creates += 1,
            _ => run.deletes += 1,
        }
        if !observer
            .wait_for(wait, |o| o.as_ref().change.is_none())
            .await
        {
            run.lost += 1;
            observer.obs.lock().unwrap().as_mut().change = None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    run.timings = std::mem::take(&mut observer.obs.lock().unwrap().as_mut().timings);
    Ok(run)
}

/// What churn sent.
#[derive(Debug, Default)]
pub struct ChurnRun {
    pub changes: usize,
    pub gpu_changes: usize,
    pub failed: usize,
    /// From the first change to the last one's response.
    pub secs: f64,
}

/// A churn pod's next change.
#[derive(Clone, Copy)]
enum Step {
    Create,
    Phase(Phase),
    Delete,
}

impl Step {
    fn after(self) -> Option<Step> {
        match self {
            Step::Create => Some(Step::Phase(Phase::Running)),
            Step::Phase(Phase::Running) => Some(Step::Phase(Phase::Succeeded)),
            Step::Phase(_) => Some(Step::Delete),
            Step::Delete => None,
        }
    }
}

/// Churn pods whose next change is due, in the order they became due.
type Due = Arc<Mutex<std::collections::VecDeque<(Instant, Step, PodRec)>>>;

/// Pod lifecycles at `rate` changes per second for `secs`, open loop (one change per tick, whatever the
/// latency of the earlier ones): a tick sends the next change that is due, else starts a new pod, a GPU pod
/// (1 GPU, bound to a node with room) and a CPU pod (on a GPU node) in turn. Each pod goes through four
/// changes, the next due 1 s after the previous one's response: created bound (phase Pending, no status yet),
/// Running, Succeeded (its GPU free again), deleted. Only the create and the Succeeded of a GPU pod change
/// the allocation. Pods still under way at the end stay as they are (the expectation follows every change
/// sent).
///
/// The pods are called `churn-<tag>-gpu|cpu-<n>`: each program's churn (`tag`, its name) makes pods of its
/// own, whatever an earlier program's churn left. GPU pods go to nodes not reserved for timed changes.
pub async fn churn<O: AsMut<AllocObs>>(
    client: &Client,
    obs: &Arc<Mutex<O>>,
    rate: u64,
    secs: u64,
    tag: &str,
) -> Res<ChurnRun> {
    churn_while(client, obs, rate, tag, |ticks| ticks < rate * secs).await
}

/// [`churn`] for as long as `more(ticks so far)` says (a tick is one change or a skipped one).
pub async fn churn_while<O: AsMut<AllocObs>>(
    client: &Client,
    obs: &Arc<Mutex<O>>,
    rate: u64,
    tag: &str,
    mut more: impl FnMut(u64) -> bool,
) -> Res<ChurnRun> {
    let due: Due = Default::default();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut set = tokio::task::JoinSet::new();
    let t0 = Instant::now();
    let (mut cursor, mut started) = (0usize, 0usize);
    let mut run = ChurnRun::default();
    let mut ticks = 0;
    while more(ticks) {
        ticks += 1;
        tick.tick().await;
        let next = {
            let mut q = due.lock().unwrap();
            match q.front() {
                Some((at, _, _)) if *at <= Instant::now() => q.pop_front(),
                _ => None,
            }
        };
        let (step, mut rec) = match next {
            Some((_, step, rec)) => (step, rec),
            None => {
                let gpu = started.is_multiple_of(2);
                let kind = if gpu { "gpu" } else { "cpu" };
                let rec = PodRec {
                    namespace: namespace_of(started),
                    name: format!("churn-{tag}-{kind}-{started:05}"),
                    node: None,
                    gpus: u64::from(gpu),
                    phase: Phase::Pending,
                };
                started += 1;
                (Step::Create, rec)
            }
        };
        {
            let mut guard = obs.lock().unwrap();
            let o = guard.as_mut();
            match step {
                Step::Create if rec.gpus > 0 => rec.node = node_with_room(o, 1, &mut cursor, false),
                Step::Create => {
                    let n = o.expected.nodes.len().max(1);
                    rec.node = o.expected.nodes.keys().nth(started % n).cloned();
                }
                Step::Phase(_) | Step::Delete => o.expected.remove(&rec),
            }
            if rec.node.is_none() {
                continue; // no GPU node has room: no change this tick
            }
            match step {
                Step::Phase(phase) => rec.phase = phase,
                Step::Delete => rec.phase = Phase::Succeeded, // gone: holds nothing
                Step::Create => {}
            }
            o.expected.add(&rec);
        }
        run.changes += 1;
        run.gpu_changes += usize::from(rec.gpus > 0);
        let (client, due) = (client.clone(), due.clone());
        set.spawn(async move {
            let sent = match step {
                Step::Create => pods::create_bound(&client, &rec).await,
                Step::Phase(phase) => pods::set_phase(&client, &rec, phase).await,
                Step::Delete => pods::force_delete(&client, &rec).await,
            };
            match (sent, step.after()) {
                (Err(e), _) => Some(format!("{}: {e}", rec.name)),
                (Ok(()), Some(next)) => {
                    let at = Instant::now() + Duration::from_secs(1);
                    due.lock().unwrap().push_back((at, next, rec));
                    None
                }
                (Ok(()), None) => None,
            }
        });
    }
    while let Some(joined) = set.join_next().await {
        if let Some(error) = joined? {
            run.failed += 1;
            if run.failed <= 5 {
                crate::log(format!("churn: {error}"));
            }
        }
    }
    run.secs = t0.elapsed().as_secs_f64();
    Ok(run)
}
