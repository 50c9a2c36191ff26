//! The claim changes of the DRA scenario, each one write of a claim's `status.allocation` (the API server
//! lets an allocation be set or cleared, not changed): single changes timed for latency (deallocate a
//! claim, then allocate it the next free device of a round-robin search over the nodes, in turn), and churn
//! at a steady rate.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::Client;

use crate::Res;
use crate::dra_fleet::write_allocation;
use crate::dra_observe::{Change, DraObs, DraObserver};
use crate::dra_truth::ClaimRec;

/// A claim change, decided and entered into the truth, not sent yet.
struct Decided {
    claim: ClaimRec,
    /// (node name, device) for an allocation, None for a deallocation.
    at: Option<(String, usize)>,
    node: usize,
}

/// Deallocates the next allocated claim, from `*cursor` on, on a node `usable` accepts and not in `busy`.
fn decide_deallocate(
    obs: &mut DraObs,
    cursor: &mut usize,
    usable: impl Fn(usize) -> bool,
    busy: &HashSet<usize>,
) -> Option<(usize, Decided)> {
    let n = obs.truth.claims.len();
    for _ in 0..n {
        let k = *cursor % n;
        *cursor += 1;
        let held = obs.truth.claims[k].at;
        if busy.contains(&k) || !held.is_some_and(|(node, _)| usable(node)) {
            continue;
        }
        let node = obs.truth.deallocate(k)?;
        let claim = obs.truth.claims[k].clone();
        return Some((
            k,
            Decided {
                claim,
                at: None,
                node,
            },
        ));
    }
    None
}

/// Allocates the unallocated claim `k` a free device on a node `usable` accepts.
fn decide_allocate(obs: &mut DraObs, k: usize, usable: impl Fn(usize) -> bool) -> Option<Decided> {
    let (node, device) = obs.truth.allocate(k, usable)?;
    Some(Decided {
        claim: obs.truth.claims[k].clone(),
        at: Some((obs.truth.nodes[node].clone(), device)),
        node,
    })
}

async fn send(client: &Client, d: &Decided) -> Res<()> {
    let at = d.at.as_ref().map(|(node, device)| (node.as_str(), *device));
    write_allocation(client, &d.claim, at).await
}

/// The latencies of the timed changes, and how many were never seen within the wait.
pub struct LatencyRun {
    pub timings: Vec<Duration>,
    /// To the node's GpuNode (empty for a program that writes none).
    pub gpunode_timings: Vec<Duration>,
    pub allocations: usize,
    pub deallocations: usize,
    pub lost: usize,
}

/// `count` single claim changes, one at a time, on nodes listed in the status (`listed`): each waits until
/// the status shows it (at most `wait`), then 20 ms.
pub async fn latency_run(
    client: &Client,
    observer: &mut DraObserver,
    listed: &[bool],
    count: usize,
    wait: Duration,
) -> Res<LatencyRun> {
    let mut run = LatencyRun {
        timings: Vec::new(),
        gpunode_timings: Vec::new(),
        allocations: 0,
        deallocations: 0,
        lost: 0,
    };
    let usable = |node: usize| listed[node];
    let (mut cursor, mut freed) = (0usize, None);
    {
        let mut obs = observer.obs.lock().unwrap();
        obs.timings.clear();
        obs.gpunode_timings.clear();
    }
    for _ in 0..count {
        let decided = {
            let mut obs = observer.obs.lock().unwrap();
            let decided = match freed.take() {
                Some(k) => decide_allocate(&mut obs, k, usable),
                None => decide_deallocate(&mut obs, &mut cursor, usable, &HashSet::new()).map(
                    |(k, d)| {
                        freed = Some(k);
                        d
                    },
                ),
            };
            let decided = decided.ok_or("no claim to deallocate or device to allocate")?;
            obs.change = Some(Change {
                node: decided.node,
                ..Default::default()
            });
            decided
        };
        send(client, &decided).await?;
        observer.obs.lock().unwrap().written(Instant::now());
        match decided.at {
            Some(_) => run.allocations += 1,
            None => run.deallocations += 1,
        }
        if !observer.wait_for(wait, |o| o.change.is_none()).await {
            run.lost += 1;
            observer.obs.lock().unwrap().change = None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut obs = observer.obs.lock().unwrap();
    run.timings = std::mem::take(&mut obs.timings);
    run.gpunode_timings = std::mem::take(&mut obs.gpunode_timings);
    drop(obs);
    Ok(run)
}

/// What churn sent.
#[derive(Debug, Default)]
pub struct ChurnRun {
    pub changes: usize,
    pub allocations: usize,
    pub failed: usize,
    /// From the first change to the last one's response.
    pub secs: f64,
}

/// Claim changes at `rate` per second for `secs`, open loop (one change per tick, whatever the latency of
/// the earlier ones), anywhere in the fleet: a tick allocates a claim whose deallocation has been answered
/// (the oldest such), else deallocates the next allocated claim; a claim with a write in flight is left
/// alone, so the server sees each claim's writes in the order the truth made them.
pub async fn churn(
    client: &Client,
    obs: &Arc<Mutex<DraObs>>,
    rate: u64,
    secs: u64,
) -> Res<ChurnRun> {
    let freed: Arc<Mutex<VecDeque<usize>>> = Default::default();
    let busy: Arc<Mutex<HashSet<usize>>> = Default::default();
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut set = tokio::task::JoinSet::new();
    let t0 = Instant::now();
    let mut cursor = 0usize;
    let mut run = ChurnRun::default();
    for i in 0..rate * secs {
        tick.tick().await;
        let decided = {
            let mut o = obs.lock().unwrap();
            let reuse = match i % 2 {
                1 => freed.lock().unwrap().pop_front(),
                _ => None,
            };
            match reuse {
                Some(k) => decide_allocate(&mut o, k, |_| true).map(|d| (k, d)),
                None => decide_deallocate(&mut o, &mut cursor, |_| true, &busy.lock().unwrap()),
            }
        };
        let Some((k, decided)) = decided else {
            continue;
        };
        busy.lock().unwrap().insert(k);
        run.changes += 1;
        run.allocations += usize::from(decided.at.is_some());
        let (client, freed, busy) = (client.clone(), freed.clone(), busy.clone());
        set.spawn(async move {
            let sent = send(&client, &decided).await;
            busy.lock().unwrap().remove(&k);
            match sent {
                Err(e) => Some(format!(
                    "{}/{}: {e}",
                    decided.claim.namespace, decided.claim.name
                )),
                Ok(()) => {
                    if decided.at.is_none() {
                        freed.lock().unwrap().push_back(k);
                    }
                    None
                }
            }
        });
    }
    while let Some(joined) = set.join_next().await {
        if let Some(error) = joined? {
            run.failed += 1;
            if run.failed <= 5 {
                crate::log(format!("dra churn: {error}"));
            }
        }
    }
    run.secs = t0.elapsed().as_secs_f64();
    Ok(run)
}
