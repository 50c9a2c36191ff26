//! One program's run on a scenario's fleet, shared by the allocation and DRA scenarios (alloc_run.rs,
//! dra_run.rs; the scale scenario's scale_run.rs uses the RSS sampler and the quiet window): the program
//! started with its watches, the scenario's phases, the figures every run ends with, the program stopped.
//! Also the two windows the scenarios measure alike: the start-up (convergence, peak RSS, requests) and
//! the churn (writes per resource and per object, the API server's time per write, CPU, requests).

use std::process::Child;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use serde_json::{Value, json};
use testkit::audit::{AuditPos, audit_counts, audit_offset};
use testkit::cluster;
use testkit::settings::bench::{Program, Settings};

use crate::alloc_measure::{rate_json, server_ms, writes};
use crate::audit_writes::{program_writes, writes_json};
use crate::measure::{cpu_secs, peak_rss_mib, rss_mib};
use crate::observe::{Converging, Watched};
use crate::program::{spawn_program, stop_program};
use crate::{Res, log};

/// The inventory the operator creates by default.
pub const INVENTORY: &str = "cluster";
/// How long one timed change may take to show before it counts as lost.
pub const CHANGE_WAIT: Duration = Duration::from_secs(10);

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

/// The program under test, with its watches (`O`: what they see, against what the driver expects).
pub struct ProgramRun<'a, O> {
    pub client: &'a Client,
    pub s: &'a Settings,
    /// The scenario's name, first on its log lines.
    pub scenario: &'a str,
    pub program: Program,
    pub pid: u32,
    pub ticks: f64,
    pub observer: Watched<O>,
    pub log_path: std::path::PathBuf,
    /// Where the program writes its ConfigMap.
    pub namespace: String,
    pub rss: RssSampler,
}

/// What the start-up measured.
pub struct Startup {
    pub converge_secs: f64,
    pub rss_mib: f64,
    /// The program's requests until 3 s after convergence.
    pub requests: Value,
}

/// What a churn sent: its changes, those that failed, how long sending took, and the scenario's own counts.
pub struct Sent {
    pub changes: usize,
    pub failed: usize,
    pub secs: f64,
    pub counts: Value,
}

impl<O: Converging> ProgramRun<'_, O> {
    pub fn cpu(&self) -> f64 {
        cpu_secs(self.pid, self.ticks)
    }

    pub fn name(&self) -> &'static str {
        self.program.name()
    }

    /// Start-up from `t0`: convergence (an error when it does not come), peak RSS, the requests until 3 s
    /// later.
    pub async fn startup(
        &mut self,
        t0: Instant,
        t0_wall: Timestamp,
        audit: AuditPos,
    ) -> Res<Startup> {
        let (settle, log_path) = (self.s.settle, &self.log_path);
        let converged = self
            .observer
            .converge_or_fail(settle, Duration::ZERO, log_path);
        converged.await?;
        let converge_secs = t0.elapsed().as_secs_f64();
        let rss_mib = self.rss.peak();
        tokio::time::sleep(Duration::from_secs(3)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&self.s.audit_log, audit, ua, t0_wall, Timestamp::now());
        Ok(Startup {
            converge_secs,
            rss_mib,
            requests: json!(requests),
        })
    }

    /// A quiet window of `secs` after convergence ([`quiet_window`]).
    pub async fn quiet(&self, secs: u64) -> Value {
        log(format!(
            "{}: {}: quiet window {secs}s",
            self.scenario,
            self.name()
        ));
        quiet_window(self.s, self.program, secs).await
    }

    /// Waits for convergence after `what`; a warning in the log when it does not come.
    pub async fn settle(&mut self, what: &str) -> bool {
        let (settle, scenario, program) = (self.s.settle, self.scenario, self.program.name());
        self.observer.settle(settle, scenario, program, what).await
    }

    /// Churn (`send`), then convergence: writes per resource and per object per second, CPU, requests.
    pub async fn churn(&mut self, send: impl AsyncFnOnce(&Self) -> Res<Sent>) -> Res<Value> {
        let s = self.s;
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = self.cpu();
        let sent = send(self).await?;
        let t_sent = Instant::now();
        let converged = self.settle("churn").await;
        let settle_secs = t_sent.elapsed().as_secs_f64();
        let cpu = self.cpu() - cpu_before;
        let to = Timestamp::now();
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let ua = self.program.user_agent_prefix();
        let requests = audit_counts(&s.audit_log, offset, ua, from, to);
        let (status_t, cm_t) = writes(s, offset, from, to);
        // The writes while the changes came: the window the targets are about.
        let sending_until = from
            .checked_add(jiff::SignedDuration::from_secs_f64(sent.secs))
            .unwrap_or(to);
        let during = program_writes(s, self.program, offset, from, sending_until);
        let mut churn = json!({
            "changes": sent.changes, "failed": sent.failed,
            "send_secs": sent.secs, "changes_per_sec": sent.changes as f64 / sent.secs,
            "settle_secs": settle_secs, "converged": converged,
            "cpu_secs": cpu, "cpu_pct_of_core": 100.0 * cpu / (sent.secs + settle_secs),
            "status": rate_json(&status_t, sent.secs), "configmap": rate_json(&cm_t, sent.secs),
            "server_ms": server_ms(&status_t, &cm_t),
            "writes": writes_json(&during, sent.secs),
            "requests": requests,
        });
        merge(&mut churn, sent.counts);
        let f = |k: &str| churn[k]["per_sec"].as_f64().unwrap_or(f64::NAN);
        log(format!(
            "{}: {}: churn {} changes in {:.0}s ({} failed), writes/s status {:.2}, ConfigMap {:.2}, all {:.2}, CPU {cpu:.2}s",
            self.scenario,
            self.name(),
            sent.changes,
            sent.secs,
            sent.failed,
            f("status"),
            f("configmap"),
            f("writes"),
        ));
        Ok(churn)
    }
}

/// `more`'s fields added to the object `out`.
pub fn merge(out: &mut Value, more: Value) {
    if let (Some(out), Value::Object(more)) = (out.as_object_mut(), more) {
        out.extend(more);
    }
}

/// Where and how a scenario runs a program: its name (log lines, the program's log file) and the prefix of
/// the namespace the program writes its ConfigMap in.
pub struct Place<'a> {
    pub scenario: &'a str,
    pub namespace_prefix: &'a str,
}

/// `program` on a scenario's fleet: a fresh namespace and inventory, the program started with its watches
/// (`watch` starts them on `fleet`, what the driver expects of the fleet now), `phases`, then the peak RSS,
/// the CPU and whether the program is still alive, and the program stopped. The fleet comes back as the
/// program's changes left it (`fleet_of` reads it from the watches' state; for the next program), with the
/// result.
#[allow(clippy::too_many_arguments)]
pub async fn run_program<O: Converging, F>(
    client: &Client,
    s: &Settings,
    place: Place<'_>,
    program: Program,
    ticks: f64,
    fleet: F,
    watch: impl FnOnce(&str, F) -> Watched<O>,
    fleet_of: impl Fn(&O) -> F,
    phases: impl AsyncFnOnce(&mut ProgramRun<'_, O>, Started) -> Res<Value>,
) -> (Res<Value>, F) {
    let namespace = format!(
        "{}-{}-{}",
        place.namespace_prefix,
        program.name(),
        Timestamp::now().as_second()
    );
    if let Err(e) = cluster::fresh_namespace(client, &namespace, INVENTORY).await {
        return (Err(e), fleet);
    }
    let observer = watch(&namespace, fleet);
    let log_name = format!("{}-{}.log", place.scenario, program.name());
    let log_path = s.log_dir.join(log_name);
    let started = Started {
        audit: audit_offset(&s.audit_log),
        wall: Timestamp::now(),
        at: Instant::now(),
    };
    let mut child = match spawn_program(s, program, &namespace, INVENTORY, &log_path) {
        Ok(c) => c,
        Err(e) => {
            let fleet = fleet_of(&observer.obs.lock().unwrap());
            observer.stop();
            return (Err(e), fleet);
        }
    };
    let mut run = ProgramRun {
        client,
        s,
        scenario: place.scenario,
        program,
        pid: child.id(),
        ticks,
        observer,
        log_path,
        namespace,
        rss: RssSampler::start(child.id()),
    };
    let result = async {
        let mut out = phases(&mut run, started).await?;
        out["writes_gpunodes"] = json!(program.writes_gpunodes());
        out["rss_peak_mib"] = json!(run.rss.peak());
        out["total_cpu_secs"] = json!(run.cpu());
        out["alive_at_end"] = json!(is_alive(&mut child));
        Ok(out)
    }
    .await;
    run.rss.task.abort();
    stop_program(&mut child);
    let fleet = fleet_of(&run.observer.obs.lock().unwrap());
    run.observer.stop();
    (result, fleet)
}

/// When the program started: the audit log's end, the wall clock, the monotonic clock.
pub struct Started {
    pub audit: AuditPos,
    pub wall: Timestamp,
    pub at: Instant,
}

fn is_alive(child: &mut Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}
