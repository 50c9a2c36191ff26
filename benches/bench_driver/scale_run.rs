//! One run of the operator in the scale scenario (scale.rs runs BENCH_SCALE_RUNS of them per node count, on the
//! same fleet, each from the same state: no GpuNodes, a fresh inventory and namespace; program.rs
//! `each_program`), with its metrics endpoint on a free port. The phases, each with its own peak RSS
//! (program_run.rs `RssSampler::next_phase`):
//!
//! 1. start-up: seconds until the status accounts for the fleet and shows both truths and every GpuNode shows
//!    its node's (scale_observe.rs);
//! 2. quiet: BENCH_SCALE_QUIET_SECS with nothing changing: the operator's writes and LISTs (0 and 0);
//! 3. load: churn at BENCH_SCALE_CHURN_RATE pod changes/s for BENCH_SCALE_CHURN_SECS (longer if the timed
//!    changes are not done), and meanwhile BENCH_SCALE_CHANGES single GPU-pod changes on 16 GPU nodes which
//!    churn leaves alone (those the status lists first, then others across the fleet): latency from the
//!    write's response to the node's GpuNode and, for a node the status lists, to its entry there; the
//!    operator's CPU, CPU per change and writes per second by resource;
//! 4. relist: kube-apiserver restarted with etcd compacted meanwhile (scale_relist.rs): every watch relists
//!    (its relist count, from /metrics), the status and every GpuNode equal the truth again, the writes sent
//!    meanwhile (0 expected: nothing changed) and the outputs they changed;
//!
//! then, the operator stopped, `scan -o json` against kubectl-view-allocations (peers.rs).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use serde_json::{Value, json};
use testkit::audit::{AuditPos, audit_counts, audit_offset};
use testkit::cluster;
use testkit::settings::bench::{Program, Settings};

use crate::alloc_changes::{Pods, churn_while, latency_run};
use crate::alloc_measure::latency_json;
use crate::alloc_truth::Expected;
use crate::audit_writes::{program_writes, writes_json};
use crate::dra_truth::DraTruth;
use crate::measure::{OTHER_PROGRAMS, cpu_pct_since, cpu_secs, cpu_secs_by_name};
use crate::program::{spawn_program_with, stop_program};
use crate::program_run::{INVENTORY, RssSampler, quiet_window};
use crate::scale_observe::{self, ScaleObserver};
use crate::scale_relist::{
    changed, metrics, metrics_addr, restart_apiserver, versions, wait_relisted,
};
use crate::{Res, log, peers, scale_fit, scale_readers};
use testkit::http::watch_relists as relists;

/// How long one timed change may take to show before it counts as lost.
const CHANGE_WAIT: Duration = Duration::from_secs(10);
/// Convergence over the whole fleet is checked at most this often (observe.rs `wait_for_every`).
const CHECK_GAP: Duration = Duration::from_millis(100);
/// GPU nodes that take the timed changes (and no churn).
const RESERVED_NODES: usize = 16;

/// The fleet as the driver knows it, handed from one run to the next.
pub struct Fleet {
    /// Its node count (in the logs' names).
    pub nodes: usize,
    pub pods: Pods,
    pub expected: Expected,
    pub truth: DraTruth,
    /// Each device-plugin GPU node's NVLink clique, for `fit`'s truth.
    pub cliques: std::collections::HashMap<String, String>,
}

/// The operator's process: its pid, its log, its RSS sampler.
struct Operator {
    pid: u32,
    log_path: std::path::PathBuf,
    rss: RssSampler,
}

/// The operator under test, with its watches.
struct Run<'a> {
    client: &'a Client,
    s: &'a Settings,
    /// The run's number, from 1.
    run: usize,
    ticks: f64,
    observer: ScaleObserver,
    /// Where its ConfigMap goes.
    namespace: String,
    operator: Operator,
}

/// The number at `v`, NaN if none (for the log).
fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

impl Run<'_> {
    fn cpu(&self) -> f64 {
        cpu_secs(self.operator.pid, self.ticks)
    }

    /// Waits up to BENCH_SCALE_SETTLE_SECS for convergence; logs why not when it does not come.
    async fn converge(&mut self, after: &str) -> bool {
        let (settle, run) = (self.s.scale.settle, format!("run {}", self.run));
        self.observer
            .settle_every(settle, CHECK_GAP, "scale", &run, after)
            .await
    }

    /// Start-up: convergence, the phase's peak RSS, the requests until 3 s later.
    async fn startup(&mut self, t0: Instant, t0_wall: Timestamp, audit: AuditPos) -> Res<Value> {
        let s = self.s;
        let log_path = &self.operator.log_path;
        let converged = self
            .observer
            .converge_or_fail(s.scale.settle, CHECK_GAP, log_path);
        converged.await?;
        let converge_secs = t0.elapsed().as_secs_f64();
        let rss = self.operator.rss.next_phase();
        let (listed, omitted) = {
            let obs = self.observer.obs.lock().unwrap();
            (obs.listed.len(), obs.omitted)
        };
        log(format!(
            "scale: run {}: converged in {converge_secs:.2}s, peak RSS {rss:.1} MiB; status lists {listed} nodes, {omitted} omitted",
            self.run
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = Program::Operator.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, audit, ua, t0_wall, Timestamp::now());
        Ok(json!({
            "converge_secs": converge_secs, "rss_mib": rss,
            "status_nodes_listed": listed, "status_nodes_omitted": omitted,
            "requests": requests,
        }))
    }

    /// The quiet window: writes and LISTs (0 and 0 expected).
    async fn quiet(&mut self) -> Value {
        let secs = self.s.scale.quiet_secs;
        log(format!("scale: run {}: quiet window {secs}s", self.run));
        let mut quiet = quiet_window(self.s, Program::Operator, secs).await;
        let lists: u64 = quiet["requests"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| k.starts_with("list "))
            .filter_map(|(_, v)| v.as_u64())
            .sum();
        quiet["lists"] = json!(lists);
        quiet["rss_mib"] = json!(self.operator.rss.next_phase());
        log(format!(
            "scale: run {}: quiet: {} writes, {lists} LISTs",
            self.run, quiet["writes"]["writes"]
        ));
        quiet
    }

    /// The GPU nodes for the timed changes, RESERVED_NODES with room for a change either way: those the status
    /// lists first (their changes are timed to the status's entry and to the GpuNode), then others spread
    /// over the fleet (timed to their GpuNode only: the status shows them only in totals the churn moves).
    /// At 65,000 nodes the status lists ~80 nodes and only one of them had room, so every timed change fell
    /// on one node; now they fall on RESERVED_NODES.
    fn reserve(&self) -> (HashSet<String>, usize) {
        let mut obs = self.observer.obs.lock().unwrap();
        let listed = obs.listed_device_nodes();
        let exp = &obs.alloc.expected;
        let roomy = |n: &String| exp.nodes.get(n).is_some_and(|spec| spec.allocatable >= 2);
        let mut reserved: Vec<String> = listed
            .iter()
            .filter(|n| roomy(n))
            .take(RESERVED_NODES)
            .cloned()
            .collect();
        let in_status = reserved.len();
        let others: Vec<&String> = exp
            .nodes
            .keys()
            .filter(|n| roomy(n) && !listed.contains(n))
            .collect();
        let step = (others.len() / RESERVED_NODES).max(1);
        reserved.extend(
            others
                .into_iter()
                .step_by(step)
                .take(RESERVED_NODES - in_status)
                .cloned(),
        );
        let reserved: HashSet<String> = reserved.into_iter().collect();
        obs.alloc.reserved = reserved.clone();
        obs.alloc.load = true;
        (reserved, in_status)
    }

    /// Churn with the timed changes beside it; then until converged.
    async fn load(&mut self, pods: &mut Pods) -> Res<Value> {
        let (s, sc) = (self.s, &self.s.scale);
        let (reserved, in_status) = self.reserve();
        log(format!(
            "scale: run {}: churn {}/s for {}s, and {} timed changes on {} GPU nodes ({in_status} of them listed by the status)",
            self.run,
            sc.churn_rate,
            sc.churn_secs,
            sc.changes,
            reserved.len()
        ));
        let (offset, from) = (audit_offset(&s.audit_log), Timestamp::now());
        let cpu_before = self.cpu();
        let others_before = cpu_secs_by_name(&OTHER_PROGRAMS, self.ticks);
        let done = AtomicBool::new(false);
        let obs = self.observer.obs.clone();
        let tag = format!("r{}-{}", self.run, from.as_second());
        let ticks = sc.churn_rate * sc.churn_secs;
        let observer = &mut self.observer;
        let (timed, churned) = tokio::join!(
            async {
                let r = latency_run(self.client, pods, observer, sc.changes, CHANGE_WAIT).await;
                done.store(true, Ordering::Relaxed);
                r
            },
            churn_while(self.client, &obs, sc.churn_rate, &tag, |n| {
                n < ticks || !done.load(Ordering::Relaxed)
            })
        );
        let (timed, churned) = (timed?, churned?);
        {
            let mut o = obs.lock().unwrap();
            o.alloc.load = false;
            o.alloc.reserved.clear();
        }
        let t_sent = Instant::now();
        let converged = self.converge("the churn").await;
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = self.cpu() - cpu_before;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let sending_until = from
            .checked_add(jiff::SignedDuration::from_secs_f64(churned.secs))
            .unwrap_or(to);
        let during = program_writes(s, Program::Operator, offset, from, sending_until);
        let ua = Program::Operator.user_agent_prefix();
        let changes = churned.changes + timed.timings.len() + timed.lost;
        let latency = latency_json(&timed.timings, true);
        let load = json!({
            "reserved_nodes": reserved.len(), "reserved_in_status": in_status,
            "latency_ms": { "gpunode": latency["gpunode"], "status": latency["status"] },
            "timed_changes": {
                "binds": timed.binds, "creates": timed.creates, "deletes": timed.deletes, "lost": timed.lost,
            },
            "churn": {
                "changes": churned.changes, "gpu_changes": churned.gpu_changes, "failed": churned.failed,
                "send_secs": churned.secs, "changes_per_sec": churned.changes as f64 / churned.secs,
            },
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_ms_per_change": 1000.0 * cpu / changes.max(1) as f64,
            "cpu_pct_of_core": 100.0 * cpu / (churned.secs + settle_secs),
            "others_cpu": cpu_pct_since(&others_before, self.ticks, churned.secs + settle_secs),
            "writes": writes_json(&during, churned.secs),
            "requests": audit_counts(&s.audit_log, offset, ua, from, to),
            "rss_mib": self.operator.rss.next_phase(),
        });
        log(format!(
            "scale: run {}: {} churn changes in {:.0}s ({} failed); change -> GpuNode p50/p99 {:.0}/{:.0} ms, -> status {:.0}/{:.0} ms, {} lost; writes/s {:.2}, CPU {cpu:.1}s ({:.2} ms/change)",
            self.run,
            churned.changes,
            churned.secs,
            churned.failed,
            f(&latency["gpunode"]["p50"]),
            f(&latency["gpunode"]["p99"]),
            f(&latency["status"]["p50"]),
            f(&latency["status"]["p99"]),
            timed.lost,
            f(&load["writes"]["per_sec"]),
            f(&load["cpu_ms_per_change"]),
        ));
        Ok(load)
    }

    /// The forced relist of every watch, and what the operator wrote meanwhile.
    async fn relist(&mut self) -> Res<Value> {
        let s = self.s;
        let addr = metrics_addr(&self.operator.log_path)?;
        let before = relists(&metrics(&addr).await?);
        if before.is_empty() {
            return Err(
                "no gpu_inventory_watch_relists_total series in the operator's /metrics".into(),
            );
        }
        let versions_before = versions(self.client, INVENTORY, &self.namespace).await?;
        log(format!(
            "scale: run {}: relist: restarting kube-apiserver with etcd compacted ({} watches: {})",
            self.run,
            before.len(),
            before.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
        let (offset, from) = (audit_offset(&s.audit_log), Timestamp::now());
        let t0 = Instant::now();
        let down_secs = restart_apiserver(s).await?;
        let ready = Instant::now();
        let (after, all_at) = wait_relisted(&addr, &before, s.scale.settle).await;
        let converged = self.converge("the relist").await;
        let converge_secs = ready.elapsed().as_secs_f64();
        // Writes that come late still count.
        tokio::time::sleep(Duration::from_secs(5)).await;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let writes = program_writes(s, Program::Operator, offset, from, to);
        let versions_after = versions(self.client, INVENTORY, &self.namespace).await?;
        let counts: serde_json::Map<String, Value> = before
            .iter()
            .map(|(w, n)| (w.clone(), json!(after.get(w).map(|m| m - n))))
            .collect();
        let relist = json!({
            "watches": before.len(),
            "relisted": counts,
            "all_relisted": all_at.is_some(),
            "apiserver_away_secs": down_secs,
            "relisted_secs": all_at.map(|at| at.duration_since(ready).as_secs_f64()),
            "converged": converged, "converge_secs": converge_secs,
            "window_secs": t0.elapsed().as_secs_f64(),
            "writes": writes_json(&writes, t0.elapsed().as_secs_f64()),
            "changed": changed(&versions_before, &versions_after),
            "rss_mib": self.operator.rss.next_phase(),
        });
        log(format!(
            "scale: run {}: relist: API server away {down_secs:.0}s; relisted {} (all: {}); converged {converge_secs:.1}s after; {} writes, {} outputs changed",
            self.run,
            relist["relisted"],
            all_at.is_some(),
            relist["writes"]["writes"],
            relist["changed"]["objects"],
        ));
        Ok(relist)
    }
}

/// One run on the fleet: the operator's phases, then the peers. The fleet comes back as the run's changes
/// left it, with the result.
pub async fn run_once(
    client: &Client,
    s: &Settings,
    run: usize,
    label: &str,
    args: &[String],
    mut fleet: Fleet,
    ticks: f64,
) -> (Res<Value>, Fleet) {
    let result = measure(client, s, (run, label), args, &mut fleet, ticks).await;
    (result, fleet)
}

/// The run on `fleet`, which follows the run's changes.
async fn measure(
    client: &Client,
    s: &Settings,
    (run, label): (usize, &str),
    args: &[String],
    fleet: &mut Fleet,
    ticks: f64,
) -> Res<Value> {
    let namespace = format!("bench-scale-{label}-{}", Timestamp::now().as_second());
    cluster::fresh_namespace(client, &namespace, INVENTORY).await?;
    let (expected, truth) = (fleet.expected.clone(), fleet.truth.clone());
    let observer = scale_observe::start(client, INVENTORY, expected, truth);
    let log_path = s.log_dir.join(format!("scale-{}-{label}.log", fleet.nodes));
    let audit = audit_offset(&s.audit_log);
    let (t0_wall, t0) = (Timestamp::now(), Instant::now());
    let metrics_addr = "127.0.0.1:0";
    let spawned = spawn_program_with(
        s,
        Program::Operator,
        (&namespace, INVENTORY),
        &log_path,
        metrics_addr,
        args,
    );
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            observer.stop();
            return Err(e);
        }
    };
    let pid = child.id();
    let rss = RssSampler::start(pid);
    let mut r = Run {
        client,
        s,
        run,
        ticks,
        observer,
        namespace,
        operator: Operator { pid, log_path, rss },
    };
    let result = async {
        let mut out = json!({ "run": run });
        out["startup"] = r.startup(t0, t0_wall, audit).await?;
        out["readers_seen"] = scale_readers::seen(client, INVENTORY).await;
        out["quiet"] = r.quiet().await;
        out["load"] = r.load(&mut fleet.pods).await?;
        out["relist"] = r.relist().await?;
        out["rss_peak_mib"] = json!(r.operator.rss.peak());
        out["rss_phase_method"] = json!(r.operator.rss.phase_method());
        out["total_cpu_secs"] = json!(r.cpu());
        out["alive_at_end"] = json!(matches!(child.try_wait(), Ok(None)));
        Res::Ok(out)
    }
    .await;
    r.operator.rss.task.abort();
    stop_program(&mut child);
    fleet.expected = r.observer.obs.lock().unwrap().alloc.expected.clone();
    r.observer.stop();
    let mut out = result?;
    out["peers"] = peers_after(s, &fleet.expected).await;
    out["fit"] = scale_fit::compare(s, &fleet.expected, &fleet.cliques).unwrap_or_else(|e| {
        log(format!("scale: FAILED fit: {e}"));
        json!({ "error": e.to_string() })
    });
    Ok(out)
}

/// `scan -o json` against kubectl-view-allocations on the fleet as the run left it (the operator stopped).
async fn peers_after(s: &Settings, expected: &Expected) -> Value {
    let Some(kva) = &s.alloc.view_allocations_bin else {
        return json!({ "skipped": "BENCH_VIEW_ALLOCATIONS_BIN not set" });
    };
    match peers::compare(s, kva, expected, s.scale.peer_runs).await {
        Ok(v) => v,
        Err(e) => {
            log(format!("scale: FAILED peers: {e}"));
            json!({ "error": e.to_string() })
        }
    }
}
