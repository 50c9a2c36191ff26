//! One program's run in the DRA scenario (dra.rs runs each of BENCH_DRA_PROGRAMS in turn on the same fleet):
//! start-up (convergence of the status and, for the operator, every GpuNode; peak RSS; requests), every
//! node's detail readable (one GpuNode per node with all its devices; `omittedNodes` of the status and of
//! the ConfigMap summary), a quiet window (its writes, 0 expected), the timed claim changes (to the status
//! and to the node's GpuNode), churn (writes per resource and per object, the API server's time per write,
//! CPU).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use serde_json::{Value, json};
use testkit::audit::{AuditPos, audit_counts, audit_offset};
use testkit::cluster;
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::alloc_measure::{ms_stats, rate_json, server_ms, writes};
use crate::alloc_observe::int;
use crate::alloc_run::{RssSampler, quiet_window};
use crate::audit_writes::{program_writes, writes_json};
use crate::dra_changes::{churn, latency_run};
use crate::dra_observe::DraObserver;
use crate::dra_truth::DraTruth;
use crate::gpunode_watch;
use crate::measure::cpu_secs;
use crate::program::{spawn_program, stop_program};
use crate::{Res, log};

/// The inventory the operator creates by default.
const INVENTORY: &str = "cluster";
/// How long one timed change may take to show before it counts as lost.
const CHANGE_WAIT: Duration = Duration::from_secs(10);

fn ms(durations: &[Duration]) -> Vec<f64> {
    durations.iter().map(|t| t.as_secs_f64() * 1000.0).collect()
}

/// The program under test, with its watches.
struct Run<'a> {
    client: &'a Client,
    s: &'a Settings,
    program: Program,
    pid: u32,
    ticks: f64,
    observer: DraObserver,
    log_path: std::path::PathBuf,
    namespace: String,
    rss: RssSampler,
}

impl Run<'_> {
    fn name(&self) -> &'static str {
        self.program.name()
    }

    /// Start-up: convergence, RSS, the requests until 3 s later.
    async fn startup(&mut self, t0: Instant, t0_wall: Timestamp, audit: AuditPos) -> Res<Value> {
        let (settle, log_path) = (self.s.settle, &self.log_path);
        let converged = self
            .observer
            .converge_or_fail(settle, Duration::ZERO, log_path);
        converged.await?;
        let converge_secs = t0.elapsed().as_secs_f64();
        let rss = self.rss.peak();
        let (listed, omitted, updates) = {
            let obs = self.observer.obs.lock().unwrap();
            let status = obs.status.as_ref().ok_or("converged without a status")?;
            (status.nodes.len(), status.omitted, obs.updates)
        };
        log(format!(
            "dra: {} converged in {converge_secs:.2}s ({updates} status versions seen), peak RSS {rss:.1} MiB; {listed} node entries, {omitted} omitted",
            self.name()
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&self.s.audit_log, audit, ua, t0_wall, Timestamp::now());
        Ok(json!({
            "converge_secs": converge_secs,
            "rss_converged_mib": rss,
            "nodes_listed": listed, "nodes_omitted": omitted,
            "startup_requests": requests,
        }))
    }

    /// Every node's detail readable: the GpuNodes (one per DRA node, each with all its devices) and what
    /// the status and the ConfigMap summary leave out.
    async fn detail(&self) -> Res<Value> {
        let omitted = {
            let obs = self.observer.obs.lock().unwrap();
            obs.status.as_ref().map(|s| s.omitted)
        };
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let summary: Value = cms
            .get("gpu-node-status")
            .await?
            .data
            .and_then(|d| d.get("_summary").cloned())
            .and_then(|v| serde_json::from_str(&v).ok())
            .unwrap_or(Value::Null);
        let gpunodes = if self.program.writes_gpunodes() {
            let nodes = self.observer.obs.lock().unwrap().truth.nodes.clone();
            gpunode_watch::detail_check(self.client, &nodes, self.s.dra.gpus_per_node).await?
        } else {
            json!("n/a")
        };
        let detail = json!({
            "status_omitted_nodes": omitted,
            "configmap_omitted_nodes": if summary.is_object() { json!(int(&summary["omittedNodes"]).unwrap_or(0)) } else { Value::Null },
            "configmap_truncated": summary["truncated"],
            "gpunodes": gpunodes,
        });
        log(format!("dra: {}: detail {detail}", self.name()));
        Ok(detail)
    }

    /// The timed single claim changes.
    async fn latency(&mut self) -> Res<Value> {
        let n = self.s.dra.changes;
        log(format!("dra: {}: {n} single claim changes", self.name()));
        let listed = self.observer.obs.lock().unwrap().listed_nodes();
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let run = latency_run(self.client, &mut self.observer, &listed, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = ms_stats(ms(&run.timings));
        let gpunode = match self.program.writes_gpunodes() {
            true => ms_stats(ms(&run.gpunode_timings)),
            false => json!("n/a"),
        };
        let p = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        log(format!(
            "dra: {}: claim change -> status p50/p99 {:.0}/{:.0} ms, -> GpuNode {:.0}/{:.0} ms, {} lost",
            self.name(),
            p(&latency, "p50"),
            p(&latency, "p99"),
            p(&gpunode, "p50"),
            p(&gpunode, "p99"),
            run.lost
        ));
        {
            let program = self.program.name();
            self.observer
                .settle(self.s.settle, "dra", program, "the latency changes")
                .await
        };
        Ok(json!({
            "latency_ms": latency,
            "latency_gpunode_ms": gpunode,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": {
                "allocations": run.allocations, "deallocations": run.deallocations, "lost": run.lost,
            },
        }))
    }

    /// Churn, then convergence: writes per resource and per object per second, CPU, requests.
    async fn churn(&mut self) -> Res<Value> {
        let (s, d) = (self.s, &self.s.dra);
        log(format!(
            "dra: {}: churn {} claim changes/s for {}s",
            self.name(),
            d.churn_rate,
            d.churn_secs
        ));
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = cpu_secs(self.pid, self.ticks);
        let run = churn(self.client, &self.observer.obs, d.churn_rate, d.churn_secs).await?;
        let t_sent = Instant::now();
        let converged = {
            let program = self.program.name();
            self.observer
                .settle(self.s.settle, "dra", program, "churn")
                .await
        };
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = cpu_secs(self.pid, self.ticks) - cpu_before;
        let to = Timestamp::now();
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, offset, ua, from, to);
        let (status_t, cm_t) = writes(s, offset, from, to);
        // The writes while the changes came: the window the targets are about.
        let sending_until = from
            .checked_add(jiff::SignedDuration::from_secs_f64(run.secs))
            .unwrap_or(to);
        let during = program_writes(s, self.program, offset, from, sending_until);
        let churn = json!({
            "changes": run.changes, "allocations": run.allocations, "failed": run.failed,
            "send_secs": run.secs, "changes_per_sec": run.changes as f64 / run.secs,
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / (run.secs + settle_secs),
            "status": rate_json(&status_t, run.secs), "configmap": rate_json(&cm_t, run.secs),
            "server_ms": server_ms(&status_t, &cm_t),
            "writes": writes_json(&during, run.secs),
            "requests": requests,
        });
        let f = |k: &str| churn[k]["per_sec"].as_f64().unwrap_or(f64::NAN);
        log(format!(
            "dra: {}: churn {} changes in {:.0}s ({} failed), writes/s status {:.2}, ConfigMap {:.2}, all {:.2}, CPU {cpu:.2}s",
            self.name(),
            run.changes,
            run.secs,
            run.failed,
            f("status"),
            f("configmap"),
            f("writes"),
        ));
        Ok(churn)
    }
}

/// `program` on the fleet: start-up, detail, quiet, latency, churn. `truth` is the fleet as it is now; it
/// comes back as the program's changes left it (for the next program), with the result.
pub async fn run_program(
    client: &Client,
    s: &Settings,
    program: Program,
    truth: DraTruth,
    ticks: f64,
) -> (Res<Value>, DraTruth) {
    let namespace = format!(
        "bench-dra-out-{}-{}",
        program.name(),
        Timestamp::now().as_second()
    );
    if let Err(e) = cluster::fresh_namespace(client, &namespace, INVENTORY).await {
        return (Err(e), truth);
    }
    let gpunodes = program.writes_gpunodes();
    let observer = DraObserver::start(client, INVENTORY, truth.clone(), gpunodes);
    let log_path = s.log_dir.join(format!("dra-{}.log", program.name()));
    let audit = audit_offset(&s.audit_log);
    let t0_wall = Timestamp::now();
    let t0 = Instant::now();
    let mut child = match spawn_program(s, program, &namespace, INVENTORY, &log_path) {
        Ok(c) => c,
        Err(e) => {
            observer.stop();
            return (Err(e), truth);
        }
    };
    let mut run = Run {
        client,
        s,
        program,
        pid: child.id(),
        ticks,
        observer,
        log_path,
        namespace,
        rss: RssSampler::start(child.id()),
    };
    let result = async {
        let mut out = run.startup(t0, t0_wall, audit).await?;
        out["writes_gpunodes"] = json!(gpunodes);
        out["detail"] = run.detail().await?;
        log(format!(
            "dra: {}: quiet window {}s",
            run.name(),
            s.dra.quiet_secs
        ));
        out["quiet"] = quiet_window(s, program, s.dra.quiet_secs).await;
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
    let truth = run.observer.obs.lock().unwrap().truth.clone();
    run.observer.stop();
    (result, truth)
}
