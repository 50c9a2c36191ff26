//! The allocation scenario (BENCH_SCENARIOS=allocation): GPU allocation accounting on a fleet of
//! BENCH_ALLOC_NODES nodes and BENCH_ALLOC_PODS pods created already bound with their status set
//! (alloc_fleet.rs), on the etcd + kube-apiserver cluster where nothing else touches them.
//!
//! 1. the fleet: nodes, then pods (create + status subresource, BENCH_ALLOC_CREATE_CONCURRENCY in flight);
//! 2. peers, before the operator runs: `gpu-inventory-operator scan -o json` and `kubectl-view-allocations`
//!    (BENCH_VIEW_ALLOCATIONS_BIN), BENCH_ALLOC_PEER_RUNS each, alternating: wall time, peak RSS, CPU, and
//!    their per-node nvidia.com/gpu numbers against each other and the truth (peers.rs);
//! 3. the operator (`run`, default inventory `cluster`): time until the status and the ConfigMap show the
//!    expected allocation of every GPU node (and the totals and pending count), peak RSS then, requests at
//!    start-up, and the status's products, freeGpus and GpusAvailable condition against the truth;
//! 4. BENCH_ALLOC_CHANGES single GPU-pod changes (bind a pending pod, delete a running one): latency from
//!    the write's response to the status (node entry and pendingGpuPods) and to the ConfigMap entry;
//! 5. churn: BENCH_ALLOC_CHURN_RATE pod changes/s for BENCH_ALLOC_CHURN_SECS (alloc_changes.rs), then until
//!    converged: status and ConfigMap writes per second (mean over the window and the busiest second), CPU
//!    seconds, requests; peak RSS at the end.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::{Value, json};

use crate::alloc_changes::{Pods, churn, latency_run};
use crate::alloc_fleet;
use crate::alloc_measure::{latency_json, rate_json, server_ms, summary_check, writes};
use crate::alloc_observe::{AllocObs, AllocObserver};
use crate::alloc_truth::Expected;
use crate::cluster::{self, Templates};
use crate::lib_api::GpuInventory;
use crate::measure::{AuditPos, audit_counts, audit_offset, cpu_secs, peak_rss_mib};
use crate::program::{Program, spawn_program, stop_program};
use crate::settings::Settings;
use crate::{Res, log, peers};

/// The inventory the operator creates by default.
const INVENTORY: &str = "cluster";
/// How long one timed change may take to show before it counts as lost.
const CHANGE_WAIT: Duration = Duration::from_secs(10);

/// Runs the scenario; returns results.json's `allocation` section and how many parts failed.
pub async fn bench(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    ticks: f64,
) -> Res<(Value, usize)> {
    let a = &s.alloc;
    log(format!(
        "=== allocation: {} nodes (every {}th a GPU node with {} GPUs), {} pods ({} GPU, {} of them pending)",
        a.nodes, a.gpu_every, a.gpus_per_node, a.pods, a.gpu_pods, a.pending
    ));
    alloc_fleet::clean(client).await?;
    let plan = alloc_fleet::plan(a, templates, s.node_images)?;
    let (node_secs, pod_secs) = alloc_fleet::create(client, &plan, a.create_concurrency).await?;
    let expected = Expected::new(&plan.gpu_nodes, &plan.pods);
    let (allocatable, allocated, free) = expected.totals();
    log(format!(
        "allocation: fleet ready: pods in {pod_secs:.0}s ({:.0}/s); {GPU}: {allocatable} allocatable, {allocated} allocated, {free} free, {} pending GPU pods",
        plan.pods.len() as f64 / pod_secs,
        expected.pending,
        GPU = alloc_fleet::GPU
    ));
    let mut failures = Vec::new();
    let peers = match &a.view_allocations_bin {
        Some(bin) => match peers::compare(s, bin, &expected).await {
            Ok(v) => v,
            Err(e) => {
                log(format!("FAILED peers: {e}"));
                failures.push(json!({ "part": "peers", "error": e.to_string() }));
                Value::Null
            }
        },
        None => json!({ "skipped": "BENCH_VIEW_ALLOCATIONS_BIN not set" }),
    };
    let operator = match run_operator(client, s, plan.pods, expected.clone(), ticks).await {
        Ok(v) => v,
        Err(e) => {
            log(format!("FAILED allocation operator: {e}"));
            failures.push(json!({ "part": "operator", "error": e.to_string() }));
            Value::Null
        }
    };
    let failed = failures.len();
    let tainted = plan.gpu_nodes.iter().filter(|n| n.tainted).count();
    let section = json!({
        "settings": {
            "nodes": a.nodes, "gpu_every": a.gpu_every, "gpus_per_node": a.gpus_per_node, "pods": a.pods,
            "gpu_pods": a.gpu_pods, "pending": a.pending, "taint_every": a.taint_every,
            "changes": a.changes, "churn_rate": a.churn_rate, "churn_secs": a.churn_secs,
            "peer_runs": a.peer_runs, "create_concurrency": a.create_concurrency,
        },
        "setup": {
            "gpu_nodes": plan.gpu_nodes.len(), "tainted_gpu_nodes": tainted,
            "node_create_secs": node_secs, "pod_create_secs": pod_secs,
            "gpus": { "allocatable": allocatable, "allocated": allocated, "free": free },
            "pending_gpu_pods": expected.pending,
            "products": expected.products(false),
        },
        "peers": peers,
        "operator": operator,
        "failures": failures,
    });
    Ok((section, failed))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The operator under test, with its watches.
struct OpRun<'a> {
    client: &'a Client,
    s: &'a Settings,
    pid: u32,
    ticks: f64,
    observer: AllocObserver,
    log_path: std::path::PathBuf,
    namespace: String,
    rss: RssSampler,
}

/// The program's peak RSS: the largest VmHWM read, every 100 ms and on demand. (VmHWM alone can read lower
/// later: the kernel folds the current RSS into the high-water mark lazily.)
pub struct RssSampler {
    pid: u32,
    max: std::sync::Arc<std::sync::Mutex<f64>>,
    pub task: tokio::task::JoinHandle<()>,
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let max = std::sync::Arc::new(std::sync::Mutex::new(0.0f64));
        let m = max.clone();
        let task = tokio::spawn(async move {
            loop {
                let now = peak_rss_mib(pid);
                {
                    let mut m = m.lock().unwrap();
                    *m = m.max(now);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        RssSampler { pid, max, task }
    }

    pub fn peak(&self) -> f64 {
        let mut m = self.max.lock().unwrap();
        *m = m.max(peak_rss_mib(self.pid));
        *m
    }
}

impl OpRun<'_> {
    fn cpu(&self) -> f64 {
        cpu_secs(self.pid, self.ticks)
    }

    fn why_not(&self) -> String {
        self.observer.obs.lock().unwrap().why_not()
    }

    /// Waits for convergence; says so when it does not come.
    async fn settle(&mut self, after: &str) -> bool {
        let ok = self
            .observer
            .wait_for(self.s.settle, AllocObs::converged)
            .await;
        if !ok {
            log(format!(
                "allocation: WARNING not converged after {after}: {}",
                self.why_not()
            ));
        }
        ok
    }

    /// Start-up: convergence, RSS, the requests until 3 s later, the status's summary fields.
    async fn startup(&mut self, t0: Instant, t0_wall: Timestamp, audit: AuditPos) -> Res<Value> {
        let s = self.s;
        let converged = self.observer.wait_for(s.settle, AllocObs::converged).await;
        let converge_secs = t0.elapsed().as_secs_f64();
        if !converged {
            let (settle, log_path) = (s.settle.as_secs(), self.log_path.display());
            let why = self.why_not();
            return Err(format!("not converged after {settle}s: {why} (see {log_path})").into());
        }
        let rss = self.rss.peak();
        log(format!(
            "allocation: operator converged in {converge_secs:.2}s, peak RSS {rss:.1} MiB"
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = Program::Operator.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, audit, ua, t0_wall, Timestamp::now());
        let summary = {
            let obs = self.observer.obs.lock().unwrap();
            summary_check(&obs.expected, obs.status.as_ref().expect("converged"))
        };
        Ok(json!({
            "sizes": self.sizes().await?,
            "converge_secs": converge_secs,
            "rss_converged_mib": rss,
            "startup_requests": requests,
            "summary": summary,
        }))
    }

    /// The JSON size of the inventory (whole, and its status) and of the ConfigMap, as the server holds them.
    async fn sizes(&self) -> Res<Value> {
        let resource = ApiResource::erase::<GpuInventory>(&());
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let inventory = api.get(INVENTORY).await?;
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let cm = cms.get("gpu-node-status").await?;
        Ok(json!({
            "inventory_bytes": serde_json::to_vec(&inventory)?.len(),
            "status_bytes": serde_json::to_vec(&inventory.data["status"])?.len(),
            "configmap_bytes": serde_json::to_vec(&cm)?.len(),
        }))
    }

    /// The timed single GPU-pod changes.
    async fn latency(&mut self, pods: &mut Pods) -> Res<Value> {
        let n = self.s.alloc.changes;
        log(format!("allocation: {n} single GPU-pod changes"));
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let lat = latency_run(self.client, pods, &mut self.observer, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = latency_json(&lat.timings);
        log(format!(
            "allocation: latency to status p50/p99 {:.0}/{:.0} ms, to ConfigMap {:.0}/{:.0} ms, {} lost",
            num(&latency["status"]["p50"]),
            num(&latency["status"]["p99"]),
            num(&latency["configmap"]["p50"]),
            num(&latency["configmap"]["p99"]),
            lat.lost
        ));
        self.settle("the latency changes").await;
        Ok(json!({
            "latency_ms": latency,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": { "binds": lat.binds, "deletes": lat.deletes, "lost": lat.lost },
        }))
    }

    /// Churn, then convergence: writes per object per second, CPU, requests.
    async fn churn(&mut self) -> Res<Value> {
        let (s, a) = (self.s, &self.s.alloc);
        log(format!(
            "allocation: churn {}/s for {}s",
            a.churn_rate, a.churn_secs
        ));
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = self.cpu();
        let run = churn(self.client, &self.observer.obs, a.churn_rate, a.churn_secs).await?;
        let t_sent = Instant::now();
        let converged = self.settle("churn").await;
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = self.cpu() - cpu_before;
        let to = Timestamp::now();
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ua = Program::Operator.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, offset, ua, from, to);
        let (status_t, cm_t) = writes(s, offset, from, to);
        let churn = json!({
            "changes": run.changes, "gpu_changes": run.gpu_changes, "failed": run.failed,
            "send_secs": run.secs, "changes_per_sec": run.changes as f64 / run.secs,
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / (run.secs + settle_secs),
            "status": rate_json(&status_t, run.secs), "configmap": rate_json(&cm_t, run.secs),
            "server_ms": server_ms(&status_t, &cm_t),
            "requests": requests,
        });
        log(format!(
            "allocation: churn {} changes in {:.0}s, writes/s status {:.2}, ConfigMap {:.2}, CPU {cpu:.2}s",
            run.changes,
            run.secs,
            num(&churn["status"]["per_sec"]),
            num(&churn["configmap"]["per_sec"]),
        ));
        Ok(churn)
    }
}

/// The operator on the fleet: start-up, latency, churn.
async fn run_operator(
    client: &Client,
    s: &Settings,
    recs: Vec<crate::alloc_pods::PodRec>,
    expected: Expected,
    ticks: f64,
) -> Res<Value> {
    let namespace = format!("bench-alloc-{}", Timestamp::now().as_second());
    cluster::fresh_namespace(client, &namespace, INVENTORY).await?;
    let observer = AllocObserver::start(client, INVENTORY, &namespace, expected);
    let mut pods = Pods::new(recs);
    std::fs::create_dir_all(&s.log_dir)?;
    let log_path = s.log_dir.join("allocation-operator.log");
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
        namespace: namespace.clone(),
        rss: RssSampler::start(child.id()),
    };
    let result = async {
        let mut out = run.startup(t0, t0_wall, audit).await?;
        let latency = run.latency(&mut pods).await?;
        for (k, v) in latency.as_object().into_iter().flatten() {
            out[k] = v.clone();
        }
        out["churn"] = run.churn().await?;
        out["rss_peak_mib"] = json!(run.rss.peak());
        out["total_cpu_secs"] = json!(run.cpu());
        out["alive_at_end"] = json!(matches!(child.try_wait(), Ok(None)));
        Ok(out)
    }
    .await;
    run.rss.task.abort();
    stop_program(&mut child);
    run.observer.stop();
    result
}
