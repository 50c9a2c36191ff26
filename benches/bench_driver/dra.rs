//! The DRA scenario (BENCH_SCENARIOS=dra): the DRA accounting on BENCH_DRA_NODES nodes, each publishing
//! one ResourceSlice of BENCH_DRA_GPUS_PER_NODE whole GPUs, and BENCH_DRA_CLAIMS ResourceClaims allocated one
//! device each (dra_fleet.rs), on the etcd + kube-apiserver cluster where nothing else touches them.
//!
//! 1. the fleet: nodes, slices, the DeviceClass, claims (create + allocation through the status subresource);
//! 2. the one-shot `gpu-inventory-operator scan -o json`, BENCH_DRA_SCAN_RUNS times: wall time, peak RSS,
//!    CPU, and its per-node `gpu.nvidia.com/gpu` numbers against the truth, node by node;
//! 3. the operator (`run`, default inventory `cluster`): time until the status shows the truth (the
//!    `resources[]` row and every entry of `nodes[]`), peak RSS then (VmHWM sampled every 100 ms), requests at
//!    start-up;
//! 4. BENCH_DRA_CHANGES single claim changes (deallocate, allocate), one at a time, each on a node listed in
//!    `nodes[]`: latency from the write's response to the status showing it (watch);
//! 5. churn: BENCH_DRA_CHURN_RATE claim changes/s for BENCH_DRA_CHURN_SECS anywhere in the fleet, then until
//!    converged: status and ConfigMap writes per second (mean and busiest second), CPU; peak RSS at the end.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use serde_json::{Value, json};

use crate::alloc_measure::{ms_stats, rate_json, server_ms, writes};
use crate::allocation::RssSampler;
use crate::cluster::{self, Templates};
use crate::dra_changes::{churn, latency_run};
use crate::dra_fleet::{self, SetupSecs};
use crate::dra_observe::{DraObs, DraObserver, SeenDra, mismatch};
use crate::dra_truth::DraTruth;
use crate::measure::{AuditPos, audit_counts, audit_offset, cpu_secs};
use crate::peers::{measured, medians};
use crate::program::{Program, spawn_program, stop_program};
use crate::settings::Settings;
use crate::{Res, log};

/// The inventory the operator creates by default.
const INVENTORY: &str = "cluster";
/// How long one timed change may take to show before it counts as lost.
const CHANGE_WAIT: Duration = Duration::from_secs(10);

/// Runs the scenario; returns results.json's `dra` section and how many parts failed.
pub async fn bench(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    ticks: f64,
) -> Res<(Value, usize)> {
    let d = &s.dra;
    log(format!(
        "=== dra: {} nodes with a slice of {} GPUs each, {} allocated claims",
        d.nodes, d.gpus_per_node, d.claims
    ));
    dra_fleet::clean(client).await?;
    let truth = DraTruth::new(d.nodes, d.gpus_per_node, d.claims);
    let secs = dra_fleet::create(client, d, templates, s.node_images, &truth).await?;
    let (allocatable, allocated, free) = truth.totals();
    log(format!(
        "dra: fleet ready: claims in {:.0}s ({:.0}/s); {}: {allocatable} allocatable, {allocated} allocated, {free} free",
        secs.claims,
        truth.claims.len() as f64 / secs.claims,
        dra_fleet::WHOLE_GPU
    ));
    let mut failures = Vec::new();
    let scan = scan_runs(s, &truth).unwrap_or_else(|e| {
        log(format!("FAILED dra scan: {e}"));
        failures.push(json!({ "part": "scan", "error": e.to_string() }));
        Value::Null
    });
    let operator = match run_operator(client, s, truth, ticks).await {
        Ok(v) => v,
        Err(e) => {
            log(format!("FAILED dra operator: {e}"));
            failures.push(json!({ "part": "operator", "error": e.to_string() }));
            Value::Null
        }
    };
    let section = json!({
        "settings": {
            "nodes": d.nodes, "gpus_per_node": d.gpus_per_node, "claims": d.claims,
            "changes": d.changes, "churn_rate": d.churn_rate, "churn_secs": d.churn_secs,
            "scan_runs": d.scan_runs, "create_concurrency": d.create_concurrency,
        },
        "setup": setup_json(secs, (allocatable, allocated, free)),
        "scan": scan,
        "operator": operator,
        "failures": failures,
    });
    Ok((section, failures.len()))
}

fn setup_json(secs: SetupSecs, (allocatable, allocated, free): (u64, u64, u64)) -> Value {
    json!({
        "node_create_secs": secs.nodes, "slice_create_secs": secs.slices, "claim_create_secs": secs.claims,
        "gpus": { "allocatable": allocatable, "allocated": allocated, "free": free },
    })
}

/// The one-shot scan, `scan_runs` times: medians, and its last output against the truth node by node.
fn scan_runs(s: &Settings, truth: &DraTruth) -> Res<Value> {
    let kubeconfig = s.kubeconfig.to_string_lossy().into_owned();
    let args = ["scan", "-o", "json", "--kubeconfig", &kubeconfig];
    let mut runs = Vec::new();
    for run in 0..s.dra.scan_runs.max(1) {
        let m =
            tokio::task::block_in_place(|| measured(&s.alloc.time_bin, &s.operator_bin, &args))?;
        // scan exits 1 when some GPU node has an issue: still a scan.
        if !matches!(m.exit, Some(0 | 1)) {
            return Err(format!("scan failed ({:?}): {}", m.exit, m.stderr).into());
        }
        log(format!(
            "dra: scan run {}: {:.2}s, {:.1} MiB, {:.2} CPU s",
            run + 1,
            m.wall_secs,
            m.rss_mib,
            m.cpu_secs
        ));
        runs.push(m);
    }
    let status: Value = serde_json::from_slice(&runs.last().expect("a run").stdout)?;
    let seen = SeenDra::parse(&status);
    let agree = seen
        .nodes
        .iter()
        .filter(|(name, n)| {
            truth
                .numbers_of(name)
                .is_some_and(|t| **n == (Some(t.0), Some(t.1), Some(t.2)))
        })
        .count();
    Ok(json!({
        "runs": medians(&runs),
        "nodes_listed": seen.nodes.len(), "nodes_omitted": seen.omitted,
        "nodes_agree_with_truth": agree, "nodes": truth.nodes.len(),
        "mismatch": mismatch(truth, &seen),
        "output_bytes": runs.last().map(|m| m.stdout.len()),
    }))
}

/// The operator under test, with its watch.
struct OpRun<'a> {
    client: &'a Client,
    s: &'a Settings,
    pid: u32,
    ticks: f64,
    observer: DraObserver,
    log_path: std::path::PathBuf,
    rss: RssSampler,
}

impl OpRun<'_> {
    fn why_not(&self) -> String {
        self.observer.obs.lock().unwrap().why_not()
    }

    async fn settle(&mut self, after: &str) -> bool {
        let ok = self
            .observer
            .wait_for(self.s.settle, DraObs::converged)
            .await;
        if !ok {
            log(format!(
                "dra: WARNING not converged after {after}: {}",
                self.why_not()
            ));
        }
        ok
    }

    /// Start-up: convergence, RSS, the requests until 3 s later.
    async fn startup(&mut self, t0: Instant, t0_wall: Timestamp, audit: AuditPos) -> Res<Value> {
        let converged = self
            .observer
            .wait_for(self.s.settle, DraObs::converged)
            .await;
        let converge_secs = t0.elapsed().as_secs_f64();
        if !converged {
            let (settle, log_path) = (self.s.settle.as_secs(), self.log_path.display());
            let why = self.why_not();
            return Err(format!("not converged after {settle}s: {why} (see {log_path})").into());
        }
        let rss = self.rss.peak();
        let (listed, omitted, updates) = {
            let obs = self.observer.obs.lock().unwrap();
            let status = obs.status.as_ref().expect("converged");
            (status.nodes.len(), status.omitted, obs.updates)
        };
        log(format!(
            "dra: operator converged in {converge_secs:.2}s ({updates} status versions seen), peak RSS {rss:.1} MiB; {listed} node entries, {omitted} omitted"
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = Program::Operator.user_agent_prefix();
        let requests = audit_counts(&self.s.audit_log, audit, ua, t0_wall, Timestamp::now());
        Ok(json!({
            "converge_secs": converge_secs,
            "rss_converged_mib": rss,
            "nodes_listed": listed, "nodes_omitted": omitted,
            "startup_requests": requests,
        }))
    }

    /// The timed single claim changes.
    async fn latency(&mut self) -> Res<Value> {
        let n = self.s.dra.changes;
        log(format!("dra: {n} single claim changes"));
        let listed = self.observer.obs.lock().unwrap().listed_nodes();
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let run = latency_run(self.client, &mut self.observer, &listed, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = ms_stats(
            run.timings
                .iter()
                .map(|t| t.as_secs_f64() * 1000.0)
                .collect(),
        );
        log(format!(
            "dra: claim change -> status p50/p99 {:.0}/{:.0} ms, {} lost",
            latency["p50"].as_f64().unwrap_or(f64::NAN),
            latency["p99"].as_f64().unwrap_or(f64::NAN),
            run.lost
        ));
        self.settle("the latency changes").await;
        Ok(json!({
            "latency_ms": latency,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": {
                "allocations": run.allocations, "deallocations": run.deallocations, "lost": run.lost,
            },
        }))
    }

    /// Churn, then convergence: writes per object per second, CPU, requests.
    async fn churn(&mut self) -> Res<Value> {
        let (s, d) = (self.s, &self.s.dra);
        log(format!(
            "dra: churn {} claim changes/s for {}s",
            d.churn_rate, d.churn_secs
        ));
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = cpu_secs(self.pid, self.ticks);
        let run = churn(self.client, &self.observer.obs, d.churn_rate, d.churn_secs).await?;
        let t_sent = Instant::now();
        let converged = self.settle("churn").await;
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = cpu_secs(self.pid, self.ticks) - cpu_before;
        let to = Timestamp::now();
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ua = Program::Operator.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, offset, ua, from, to);
        let (status_t, cm_t) = writes(s, offset, from, to);
        let churn = json!({
            "changes": run.changes, "allocations": run.allocations, "failed": run.failed,
            "send_secs": run.secs, "changes_per_sec": run.changes as f64 / run.secs,
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / (run.secs + settle_secs),
            "status": rate_json(&status_t, run.secs), "configmap": rate_json(&cm_t, run.secs),
            "server_ms": server_ms(&status_t, &cm_t),
            "requests": requests,
        });
        log(format!(
            "dra: churn {} changes in {:.0}s ({} failed), writes/s status {:.2}, ConfigMap {:.2}, CPU {cpu:.2}s",
            run.changes,
            run.secs,
            run.failed,
            churn["status"]["per_sec"].as_f64().unwrap_or(f64::NAN),
            churn["configmap"]["per_sec"].as_f64().unwrap_or(f64::NAN),
        ));
        Ok(churn)
    }
}

/// The operator on the fleet: start-up, latency, churn.
async fn run_operator(client: &Client, s: &Settings, truth: DraTruth, ticks: f64) -> Res<Value> {
    let namespace = format!("bench-dra-out-{}", Timestamp::now().as_second());
    cluster::fresh_namespace(client, &namespace, INVENTORY).await?;
    let observer = DraObserver::start(client, INVENTORY, truth);
    std::fs::create_dir_all(&s.log_dir)?;
    let log_path = s.log_dir.join("dra-operator.log");
    let audit = audit_offset(&s.audit_log);
    let t0_wall = Timestamp::now();
    let t0 = Instant::now();
    let mut child = spawn_program(s, Program::Operator, &namespace, INVENTORY, &log_path)?;
    let mut run = OpRun {
        client,
        s,
        pid: child.id(),
        ticks,
        observer,
        log_path,
        rss: RssSampler::start(child.id()),
    };
    let result = async {
        let mut out = run.startup(t0, t0_wall, audit).await?;
        let latency = run.latency().await?;
        for (k, v) in latency.as_object().into_iter().flatten() {
            out[k] = v.clone();
        }
        out["churn"] = run.churn().await?;
        out["rss_peak_mib"] = json!(run.rss.peak());
        out["total_cpu_secs"] = json!(cpu_secs(run.pid, run.ticks));
        out["alive_at_end"] = json!(matches!(child.try_wait(), Ok(None)));
        Ok(out)
    }
    .await;
    run.rss.task.abort();
    stop_program(&mut child);
    run.observer.stop();
    result
}
