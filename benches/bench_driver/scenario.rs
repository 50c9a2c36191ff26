//! One run: one program at one node count, from a clean slate through start-up, quiet period, latency
//! changes, churn and burst, to tear-down.

use std::collections::BTreeMap;
use std::process::Child;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use serde_json::Value;
use testkit::audit::{
    AuditPos, audit_counts, audit_offset, count_where, is_write, writes_to_outputs,
};
use testkit::cluster::{self, GpuNodes, Templates};
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::changes::{Changer, label_changes, latency_run};
use crate::measure::{cpu_secs, peak_rss_mib, percentile};
use crate::observe::{Obs, Observer};
use crate::program::{spawn_program, stop_program};
use crate::report;
use crate::run_results::{Burst, Churn, Latency, Phases, Quiet, Setup, Startup};
use crate::{BoxError, Res, log};

/// Runs `program` against `n` fresh nodes and returns its results (one element of results.json's `results`).
pub async fn bench_one(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    n: usize,
    program: Program,
    ticks: f64,
) -> Res<Value> {
    let tag = format!("{}-{n}", program.name());
    let stamp = Timestamp::now().as_second();
    let namespace = format!("bench-{tag}-{stamp}");
    let inventory = format!("bench-{tag}");
    log(format!(
        "=== {tag}: cleaning up, creating namespace {namespace} and {n} nodes"
    ));
    let (
        setup,
        GpuNodes {
            nodes,
            truth,
            scope,
        },
    ) = set_up(client, s, templates, n, &tag, &namespace, &inventory).await?;
    let mut observer = Observer::start(client, &inventory, &namespace, truth);
    let mut changer = Changer::new(client, nodes, scope);

    // -- start-up
    std::fs::create_dir_all(&s.log_dir)?;
    let audit_start = audit_offset(&s.audit_log);
    let t0_wall = Timestamp::now();
    let t0 = Instant::now();
    let log_path = s.log_dir.join(format!("{tag}.log"));
    let mut child = spawn_program(s, program, &namespace, &inventory, &log_path)?;
    let run = Run {
        s,
        program,
        tag: &tag,
        pid: child.id(),
        ticks,
    };
    let result = async {
        let startup = run.startup(&mut observer, audit_start, t0_wall, t0).await?;
        let quiet = run.quiet().await;
        let latency = run.latency(&mut changer, &mut observer).await?;
        let churn = run.churn(&mut changer, &mut observer).await?;
        let burst = run.burst(&mut changer, &mut observer, &mut child).await?;
        let phases = Phases {
            startup,
            quiet,
            latency,
            churn,
            burst,
        };
        run.log_summary(&phases);
        Ok(report::run_json(s, program, &setup, &phases))
    }
    .await;
    stop_program(&mut child);
    observer.stop();
    log(format!(
        "{tag}: stopped; deleting nodes, namespace and inventory"
    ));
    cluster::tear_down(client, &namespace, &inventory).await?;
    result
}

/// A clean slate, a fresh namespace, `n` nodes; the GPU nodes among them as stored.
async fn set_up(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    n: usize,
    tag: &str,
    namespace: &str,
    inventory: &str,
) -> Res<(Setup, GpuNodes)> {
    cluster::clean_slate(client, namespace, inventory).await?;
    let create_time = cluster::create_nodes(client, templates, n, s.node_images).await?;
    log(format!(
        "{tag}: created {n} nodes in {:.1}s",
        create_time.as_secs_f64()
    ));
    // What the scanner says about the nodes as the API server stores them.
    let gpu = cluster::list_gpu_nodes(client).await?;
    let gpu_count = gpu.truth.len();
    let ready_count = gpu.truth.values().filter(|e| e.ready).count();
    log(format!(
        "{tag}: {gpu_count} GPU nodes ({ready_count} Ready)"
    ));
    let setup = Setup {
        nodes: n,
        create_secs: create_time.as_secs_f64(),
        gpu_nodes: gpu_count,
        gpu_nodes_ready: ready_count,
    };
    Ok((setup, gpu))
}

/// The phases of a run, with the running program's pid.
struct Run<'a> {
    s: &'a Settings,
    program: Program,
    tag: &'a str,
    pid: u32,
    ticks: f64,
}

impl Run<'_> {
    fn cpu(&self) -> f64 {
        cpu_secs(self.pid, self.ticks)
    }

    /// The program's requests received in [from, to], from the audit log after `offset`.
    fn requests(&self, offset: AuditPos, from: Timestamp, to: Timestamp) -> BTreeMap<String, u64> {
        let prefix = self.program.user_agent_prefix();
        audit_counts(&self.s.audit_log, offset, prefix, from, to)
    }

    /// Time to convergence after the start, peak RSS then, and the requests until 3 s later.
    async fn startup(
        &self,
        observer: &mut Observer,
        audit_start: AuditPos,
        t0_wall: Timestamp,
        t0: Instant,
    ) -> Res<Startup> {
        let (s, tag) = (self.s, self.tag);
        let converged = observer.wait_for(s.settle, Obs::converged).await;
        let converge_secs = t0.elapsed().as_secs_f64();
        if !converged {
            return Err(BoxError::from(format!(
                "{tag}: not converged after {}s (see {}/{tag}.log)",
                s.settle.as_secs(),
                s.log_dir.display()
            )));
        }
        log(format!("{tag}: converged in {converge_secs:.2}s"));
        let rss_mib = peak_rss_mib(self.pid);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let startup_end = Timestamp::now();
        let requests = self.requests(audit_start, t0_wall, startup_end);
        Ok(Startup {
            converge_secs,
            rss_mib,
            requests,
        })
    }

    /// BENCH_QUIET_SECS of nothing: CPU seconds and requests.
    async fn quiet(&self) -> Quiet {
        log(format!("{}: quiet period {}s", self.tag, self.s.quiet_secs));
        let offset = audit_offset(&self.s.audit_log);
        let from = Timestamp::now();
        let cpu_before = self.cpu();
        tokio::time::sleep(Duration::from_secs(self.s.quiet_secs)).await;
        let cpu_secs = self.cpu() - cpu_before;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let requests = self.requests(offset, from, to);
        Quiet { cpu_secs, requests }
    }

    /// BENCH_CHANGES single-node changes, then convergence.
    async fn latency(&self, changer: &mut Changer, observer: &mut Observer) -> Res<Latency> {
        let (s, tag) = (self.s, self.tag);
        log(format!("{tag}: {} single-node changes", s.changes));
        let from = Instant::now();
        let (latencies, lost) =
            latency_run(changer, observer, s.changes, s.change_gap, s.settle).await?;
        let run_secs = from.elapsed().as_secs_f64();
        let mut ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if !observer.wait_for(s.settle, Obs::converged).await {
            log(format!(
                "{tag}: WARNING not converged after the latency changes"
            ));
        }
        Ok(Latency { ms, lost, run_secs })
    }

    /// BENCH_CHURN_RATE label changes per second for BENCH_CHURN_SECS, then until converged.
    async fn churn(&self, changer: &mut Changer, observer: &mut Observer) -> Res<Churn> {
        let (s, tag) = (self.s, self.tag);
        log(format!(
            "{tag}: churn {}/s for {}s",
            s.churn_rate, s.churn_secs
        ));
        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let cpu_before = self.cpu();
        let t0 = Instant::now();
        let total = (s.churn_rate * s.churn_secs) as usize;
        let changes = label_changes(changer, observer, total, s.churn_rate).await?;
        let send_secs = t0.elapsed().as_secs_f64();
        let converged = observer.wait_for(s.settle, Obs::converged).await;
        let settle_secs = t0.elapsed().as_secs_f64() - send_secs;
        let cpu_secs = self.cpu() - cpu_before;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let requests = self.requests(offset, from, to);
        if !converged {
            log(format!("{tag}: WARNING not converged after churn"));
        }
        Ok(Churn {
            changes,
            send_secs,
            settle_secs,
            converged,
            cpu_secs,
            requests,
        })
    }

    /// BENCH_BURST_CHANGES label changes as fast as they go, then peak RSS.
    async fn burst(
        &self,
        changer: &mut Changer,
        observer: &mut Observer,
        child: &mut Child,
    ) -> Res<Burst> {
        log(format!(
            "{}: {} label changes (burst)",
            self.tag, self.s.burst_changes
        ));
        let t0 = Instant::now();
        label_changes(changer, observer, self.s.burst_changes, 0).await?;
        let converged = observer.wait_for(self.s.settle, Obs::converged).await;
        let secs = t0.elapsed().as_secs_f64();
        Ok(Burst {
            converged,
            secs,
            rss_after_mib: peak_rss_mib(self.pid),
            total_cpu_secs: self.cpu(),
            alive: matches!(child.try_wait(), Ok(None)),
        })
    }

    fn log_summary(&self, p: &Phases) {
        let quiet_writes = count_where(&p.quiet.requests, is_write);
        let quiet_lists = count_where(&p.quiet.requests, |k| k.starts_with("list "));
        let churn_writes = writes_to_outputs(&p.churn.requests);
        log(format!(
            "{}: converge {:.2}s, rss {:.1}/{:.1} MiB, p50/p99 {:.0}/{:.0} ms, quiet writes {quiet_writes} lists {quiet_lists}, churn writes {churn_writes} cpu {:.2}s",
            self.tag,
            p.startup.converge_secs,
            p.startup.rss_mib,
            p.burst.rss_after_mib,
            percentile(&p.latency.ms, 50.0),
            percentile(&p.latency.ms, 99.0),
            p.churn.cpu_secs,
        ));
    }
}
