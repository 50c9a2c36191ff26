//! The faults, at seeded times: SIGKILL of kube-apiserver and its restart (`hack/local-cluster.sh
//! stop-apiserver --kill` / `start-apiserver`), etcd paused and resumed (`pause-etcd` / `resume-etcd`: SIGSTOP,
//! SIGCONT), and the leading operator SIGKILLed and started again as a new replica.
//!
//! The schedule is drawn up front from the seed: gaps from [mean/2, 3 mean/2] (SOAK_FAULT_EVERY_SECS), kinds
//! in shuffled rounds (each round has every enabled kind once; the first round always fits the window, its
//! gaps shortened when the window is short, so a short run sees every kind), a hold time per fault; the last fault is placed to end with the soak window, so the churn runs right up to it
//! and "converged after the last fault" measures the catching up alone.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kube::Client;
use serde::Serialize;
use testkit::settings::soak::{FaultKind, Settings};

use crate::operators::Operators;
use crate::rng::Rng;
use crate::{Res, log};

/// How long a fault of `kind` lasts, in seconds: [lo, hi).
fn hold_range(kind: FaultKind) -> (f64, f64) {
    match kind {
        FaultKind::ApiServer => (2.0, 12.0),
        FaultKind::Etcd => (2.0, 10.0),
        FaultKind::Leader => (1.0, 5.0),
    }
}

/// One fault of the schedule: when (seconds into the window), what, for how long.
#[derive(Clone, Copy, Debug)]
pub struct Planned {
    pub at: f64,
    pub kind: FaultKind,
    pub hold: f64,
}

/// A fault as injected, for the report.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Injected {
    pub kind: FaultKind,
    /// Seconds into the window when it began and when the cluster was whole again.
    pub at_secs: f64,
    pub recovered_at_secs: f64,
    pub hold_secs: f64,
    pub detail: String,
}

/// Room kept after a fault's hold for the restart itself (an API server takes a few seconds to be ready).
const RECOVERY_ROOM: f64 = 8.0;

/// The shortest window that holds one fault of each of `kinds` at its longest hold, each but the last followed
/// by the room for its restart: the first round of a schedule always fits in it (see [`plan`]).
pub fn shortest_window(kinds: &[FaultKind]) -> f64 {
    let longest: f64 = kinds.iter().map(|k| hold_range(*k).1 + RECOVERY_ROOM).sum();
    (longest - RECOVERY_ROOM).max(0.0)
}

/// The schedule for a window of `window` seconds (at least [`shortest_window`]). Its first round holds every
/// kind once, however short the window: a fault of that round comes early enough (its gap shortened) to leave
/// the rest of the round their longest holds and restarts.
pub fn plan(rng: &mut Rng, kinds: &[FaultKind], mean: f64, window: f64) -> Vec<Planned> {
    let mut out = Vec::new();
    if kinds.is_empty() {
        return out;
    }
    let mut round: Vec<FaultKind> = Vec::new();
    let mut next_kind = |rng: &mut Rng| {
        if round.is_empty() {
            round = kinds.to_vec();
            for i in (1..round.len()).rev() {
                round.swap(i, rng.below(i + 1));
            }
        }
        let kind = round.pop().expect("a kind");
        (kind, round.clone())
    };
    let mut free_from = 0.0;
    loop {
        let drawn = free_from + rng.between(mean / 2.0, mean * 1.5);
        let (kind, rest_of_round) = next_kind(rng);
        let (lo, hi) = hold_range(kind);
        let hold = rng.between(lo, hi);
        // Until every kind has had its turn, the kinds still to come are owed their room.
        let first_round = out.len() + 1 < kinds.len();
        let owed = match first_round {
            true => shortest_window(&rest_of_round) + RECOVERY_ROOM,
            false => 0.0,
        };
        let at = drawn
            .min(window - owed - hold - RECOVERY_ROOM)
            .max(free_from);
        // The last fault ends with the window; the others must leave room before it.
        let last = !first_round && at + hold + RECOVERY_ROOM + mean / 2.0 > window;
        let at = if last {
            (window - hold).max(free_from)
        } else {
            at
        };
        out.push(Planned { at, kind, hold });
        if last {
            return out;
        }
        free_from = at + hold + RECOVERY_ROOM;
    }
}

/// Runs `hack/local-cluster.sh <args>` on the soak's cluster (blocking; called from spawn_blocking).
fn local_cluster(s: &Settings, args: &[&str]) -> Res<()> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/local-cluster.sh");
    let status = Command::new(&script)
        .args(args)
        .env("LOCAL_CLUSTER_STATE_DIR", &s.cluster_dir)
        .status()
        .map_err(|e| format!("running {}: {e}", script.display()))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("hack/local-cluster.sh {} failed: {status}", args.join(" ")).into()),
    }
}

async fn cluster_verb(s: &Settings, args: &'static [&'static str]) -> Res<()> {
    let s = s.clone();
    tokio::task::spawn_blocking(move || local_cluster(&s, args)).await?
}

/// Injects `fault` and waits until the cluster is whole again.
pub async fn inject(
    fault: Planned,
    s: &Settings,
    client: &Client,
    ops: &tokio::sync::Mutex<Operators>,
    window_start: Instant,
) -> Res<Injected> {
    let at_secs = window_start.elapsed().as_secs_f64();
    let hold = Duration::from_secs_f64(fault.hold);
    log(format!("fault {:?} for {:.1}s", fault.kind, fault.hold));
    let detail = match fault.kind {
        FaultKind::ApiServer => {
            cluster_verb(s, &["stop-apiserver", "--kill"]).await?;
            tokio::time::sleep(hold).await;
            cluster_verb(s, &["start-apiserver"]).await?;
            "kube-apiserver SIGKILLed, restarted".to_owned()
        }
        FaultKind::Etcd => {
            cluster_verb(s, &["pause-etcd"]).await?;
            tokio::time::sleep(hold).await;
            cluster_verb(s, &["resume-etcd"]).await?;
            "etcd SIGSTOPped, SIGCONTed".to_owned()
        }
        FaultKind::Leader => kill_leader(s, client, ops, hold).await?,
    };
    Ok(Injected {
        kind: fault.kind,
        at_secs,
        recovered_at_secs: window_start.elapsed().as_secs_f64(),
        hold_secs: fault.hold,
        detail,
    })
}

/// SIGKILLs the Lease holder (waiting for one if the Lease is between holders), starts a new replica in its
/// place after `hold`. The replicas' lock is never held across a wait, so the RSS sampler keeps sampling.
async fn kill_leader(
    s: &Settings,
    client: &Client,
    ops: &tokio::sync::Mutex<Operators>,
    hold: Duration,
) -> Res<String> {
    let deadline = Instant::now() + s.lease * 2 + Duration::from_secs(30);
    let (slot, identity) = loop {
        let mut ops_now = ops.lock().await;
        ops_now.restart_exited(s)?;
        if let Some(slot) = ops_now.leader(client).await {
            let identity = ops_now.identity(slot).to_owned();
            ops_now.kill(slot);
            break (slot, identity);
        }
        drop(ops_now);
        if Instant::now() > deadline {
            return Err("no live replica held the Lease: no leader to kill".into());
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    tokio::time::sleep(hold).await;
    let mut ops_now = ops.lock().await;
    ops_now.restart(s, slot)?;
    Ok(format!(
        "leader {identity} SIGKILLed, replaced by {}",
        ops_now.identity(slot)
    ))
}
