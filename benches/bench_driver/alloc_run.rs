//! One program's run in the allocation scenario (allocation.rs runs each of BENCH_ALLOC_PROGRAMS in turn on
//! the same fleet): start-up (convergence of the status, the ConfigMap and, for the operator, every GpuNode;
//! peak RSS; requests), a quiet window (its writes, 0 expected), the timed single GPU-pod changes (to the
//! status, the ConfigMap and the node's GpuNode), churn (writes per resource and per object, the API
//! server's time per write, CPU).

use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::{Value, json};
use testkit::audit::{AuditPos, audit_counts, audit_offset};
use testkit::cluster;
use testkit::lib_api::GpuInventory;
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::alloc_changes::{Pods, churn, latency_run};
use crate::alloc_measure::{latency_json, rate_json, server_ms, summary_check, writes};
use crate::alloc_observe::AllocObserver;
use crate::alloc_truth::Expected;
use crate::audit_writes::{program_writes, writes_json};
use crate::measure::{cpu_secs, peak_rss_mib, rss_mib};
use crate::program::{spawn_program, stop_program};
use crate::{Res, log};

/// The inventory the operator creates by default.
pub const INVENTORY: &str = "cluster";
/// How long one timed change may take to show before it counts as lost.
const CHANGE_WAIT: Duration = Duration::from_secs(10);

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The program's peak RSS: the largest VmHWM read, every 100 ms and on demand. (VmHWM alone can read lower
/// later: the kernel folds the current RSS into the high-water mark lazily.) And the peak of each phase
/// ([`RssSampler::next_phase`]): at a phase's start VmHWM is reset to the RSS of the moment (`5` written to
/// /proc/<pid>/clear_refs), so what it reads after is that phase's peak; where the reset is refused, the
/// phase's peak is the largest VmRSS sampled in it.
pub struct RssSampler {
    pid: u32,
    peaks: std::sync::Arc<std::sync::Mutex<Peaks>>,
    pub task: tokio::task::JoinHandle<()>,
}

/// The peaks so far: of the whole run, and of the phase under way.
struct Peaks {
    max: f64,
    phase: f64,
    /// VmHWM was reset at the phase's start (or the phase began with the process).
    hwm_is_phase: bool,
}

impl Peaks {
    fn sample(&mut self, pid: u32) {
        let hwm = peak_rss_mib(pid);
        self.max = self.max.max(hwm);
        let now = if self.hwm_is_phase { hwm } else { rss_mib(pid) };
        self.phase = self.phase.max(now);
    }
}

impl RssSampler {
    pub fn start(pid: u32) -> Self {
        let peaks = std::sync::Arc::new(std::sync::Mutex::new(Peaks {
            max: 0.0,
            phase: 0.0,
            hwm_is_phase: true,
        }));
        let p = peaks.clone();
        let task = tokio::spawn(async move {
            loop {
                p.lock().unwrap().sample(pid);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        RssSampler { pid, peaks, task }
    }

    pub fn peak(&self) -> f64 {
        let mut p = self.peaks.lock().unwrap();
        p.sample(self.pid);
        p.max
    }

    /// Ends the phase under way (the first began with the process): returns its peak, and starts the next.
    pub fn next_phase(&self) -> f64 {
        let mut p = self.peaks.lock().unwrap();
        p.sample(self.pid);
        let ended = p.phase;
        p.hwm_is_phase = std::fs::write(format!("/proc/{}/clear_refs", self.pid), "5").is_ok();
        p.phase = 0.0;
        p.sample(self.pid);
        ended
    }

    /// How the phases' peaks are read.
    pub fn phase_method(&self) -> &'static str {
        match self.peaks.lock().unwrap().hwm_is_phase {
            true => "VmHWM, reset at each phase's start",
            false => "VmRSS sampled every 100 ms (VmHWM could not be reset)",
        }
    }
}

/// The writes of `program` and its requests in a quiet window of `secs` after convergence (0 writes
/// expected: nothing changes).
pub async fn quiet_window(s: &Settings, program: Program, secs: u64) -> Value {
    let (offset, from) = (audit_offset(&s.audit_log), Timestamp::now());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let to = Timestamp::now();
    // Requests received by `to` are in the audit log a moment later.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ua = program.user_agent_prefix();
    json!({
        "secs": secs,
        "writes": writes_json(&program_writes(s, program, offset, from, to), secs as f64),
        "requests": audit_counts(&s.audit_log, offset, ua, from, to),
    })
}

/// The program under test, with its watches.
struct Run<'a> {
    client: &'a Client,
    s: &'a Settings,
    program: Program,
    pid: u32,
    ticks: f64,
    observer: AllocObserver,
    log_path: std::path::PathBuf,
    namespace: String,
    rss: RssSampler,
}

impl Run<'_> {
    fn cpu(&self) -> f64 {
        cpu_secs(self.pid, self.ticks)
    }

    fn name(&self) -> &'static str {
        self.program.name()
    }

    /// Start-up: convergence, RSS, the requests until 3 s later, the status's summary fields.
    async fn startup(&mut self, t0: Instant, t0_wall: Timestamp, audit: AuditPos) -> Res<Value> {
        let s = self.s;
        let log_path = &self.log_path;
        let converged = self
            .observer
            .converge_or_fail(s.settle, Duration::ZERO, log_path);
        converged.await?;
        let converge_secs = t0.elapsed().as_secs_f64();
        let rss = self.rss.peak();
        log(format!(
            "allocation: {} converged in {converge_secs:.2}s, peak RSS {rss:.1} MiB",
            self.name()
        ));
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, audit, ua, t0_wall, Timestamp::now());
        let summary = {
            let obs = self.observer.obs.lock().unwrap();
            let status = obs.status.as_ref().ok_or("converged without a status")?;
            summary_check(&obs.expected, status)
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
        log(format!(
            "allocation: {}: {n} single GPU-pod changes",
            self.name()
        ));
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let lat = latency_run(self.client, pods, &mut self.observer, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = latency_json(&lat.timings, self.program.writes_gpunodes());
        log(format!(
            "allocation: {}: latency to status p50/p99 {:.0}/{:.0} ms, to ConfigMap {:.0}/{:.0} ms, to GpuNode {:.0}/{:.0} ms, {} lost",
            self.name(),
            num(&latency["status"]["p50"]),
            num(&latency["status"]["p99"]),
            num(&latency["configmap"]["p50"]),
            num(&latency["configmap"]["p99"]),
            num(&latency["gpunode"]["p50"]),
            num(&latency["gpunode"]["p99"]),
            lat.lost
        ));
        {
            let program = self.program.name();
            self.observer
                .settle(self.s.settle, "allocation", program, "the latency changes")
                .await
        };
        Ok(json!({
            "latency_ms": latency,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": {
                "binds": lat.binds, "creates": lat.creates, "deletes": lat.deletes, "lost": lat.lost,
            },
        }))
    }

    /// Churn, then convergence: writes per resource and per object per second, CPU, requests.
    async fn churn(&mut self) -> Res<Value> {
        let (s, a) = (self.s, &self.s.alloc);
        log(format!(
            "allocation: {}: churn {}/s for {}s",
            self.name(),
            a.churn_rate,
            a.churn_secs
        ));
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = self.cpu();
        let obs = &self.observer.obs;
        let run = churn(self.client, obs, a.churn_rate, a.churn_secs, self.name()).await?;
        let t_sent = Instant::now();
        let converged = {
            let program = self.program.name();
            self.observer
                .settle(self.s.settle, "allocation", program, "churn")
                .await
        };
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = self.cpu() - cpu_before;
        let to = Timestamp::now();
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, offset, ua, from, to);
        let (status_t, cm_t) = writes(s, offset, from, to);
        // The writes while the changes came (50/s): the window the targets are about.
        let sending_until = from
            .checked_add(jiff::SignedDuration::from_secs_f64(run.secs))
            .unwrap_or(to);
        let during = program_writes(s, self.program, offset, from, sending_until);
        let churn = json!({
            "changes": run.changes, "gpu_changes": run.gpu_changes, "failed": run.failed,
            "send_secs": run.secs, "changes_per_sec": run.changes as f64 / run.secs,
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / (run.secs + settle_secs),
            "status": rate_json(&status_t, run.secs), "configmap": rate_json(&cm_t, run.secs),
            "server_ms": server_ms(&status_t, &cm_t),
            "writes": writes_json(&during, run.secs),
            "requests": requests,
        });
        log(format!(
            "allocation: {}: churn {} changes in {:.0}s, writes/s status {:.2}, ConfigMap {:.2}, all {:.2}, CPU {cpu:.2}s",
            self.name(),
            run.changes,
            run.secs,
            num(&churn["status"]["per_sec"]),
            num(&churn["configmap"]["per_sec"]),
            num(&churn["writes"]["per_sec"]),
        ));
        Ok(churn)
    }
}

/// `program` on the fleet: start-up, quiet, latency, churn. `expected` is the fleet as it is now; it comes
/// back as the program's changes left it (for the next program), with the result.
pub async fn run_program(
    client: &Client,
    s: &Settings,
    program: Program,
    pods: &mut Pods,
    expected: Expected,
    ticks: f64,
) -> (Res<Value>, Expected) {
    let namespace = format!(
        "bench-alloc-{}-{}",
        program.name(),
        Timestamp::now().as_second()
    );
    if let Err(e) = cluster::fresh_namespace(client, &namespace, INVENTORY).await {
        return (Err(e), expected);
    }
    let gpunodes = program.writes_gpunodes();
    let observer = AllocObserver::start(client, INVENTORY, &namespace, expected.clone(), gpunodes);
    let log_path = s.log_dir.join(format!("allocation-{}.log", program.name()));
    let audit = audit_offset(&s.audit_log);
    let t0_wall = Timestamp::now();
    let t0 = Instant::now();
    let mut child = match spawn_program(s, program, &namespace, INVENTORY, &log_path) {
        Ok(c) => c,
        Err(e) => {
            observer.stop();
            return (Err(e), expected);
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
        log(format!(
            "allocation: {}: quiet window {}s",
            run.name(),
            s.alloc.quiet_secs
        ));
        out["quiet"] = quiet_window(s, program, s.alloc.quiet_secs).await;
        let latency = run.latency(pods).await?;
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
    let expected = run.observer.obs.lock().unwrap().expected.clone();
    run.observer.stop();
    (result, expected)
}
