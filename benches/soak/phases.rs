//! The soak's phases, in order: set-up, the window (churn + faults + RSS samples), convergence, the quiet
//! period, the final comparison.

use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use testkit::audit::{AuditPos, audit_counts, audit_offset, is_write};
use testkit::rss::RssSample;
use testkit::settings::soak::Settings;
use testkit::{cluster, lib_api};
use tokio::sync::{Mutex, watch};

use crate::churn::{self, Churn, ChurnStats};
use crate::compare::{self, first_difference};
use crate::dra::DraFleet;
use crate::faults::{self, Injected};
use crate::fleet::{self, Fleet};
use crate::operators::{self, Operators, rss_mib};
use crate::report::Outcome;
use crate::rng::Rng;
use crate::{Res, log};

type Shared = Arc<Mutex<Operators>>;

pub async fn run(s: &Settings, client: &Client) -> Res<Outcome> {
    let started = Timestamp::now().to_string();
    let shortest = faults::shortest_window(&s.fault_kinds);
    if (s.secs as f64) < shortest {
        return Err(format!(
            "SOAK_SECS={} is shorter than one fault of each kind needs ({shortest:.0} s)",
            s.secs
        )
        .into());
    }
    let mut rng = Rng::new(s.seed());
    let (fault_rng, churn_rng) = (rng.split(), rng.split());
    let (fleet, dra, dra_text) = set_up(s, client).await?;
    let ops: Shared = Arc::new(Mutex::new(Operators::start(s)?));
    let initial = converge(s, client, &ops, s.settle).await;
    let initial =
        initial.map_err(|d| format!("the operators never matched the first scan: {d}"))?;
    log(format!(
        "operators converged on the fleet in {initial:.1}s; the soak window opens ({} s)",
        s.secs
    ));

    let window_start = Instant::now();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (stop_sampler, sampler_rx) = watch::channel(false);
    let sampler = tokio::spawn(sample(
        s.clone(),
        client.clone(),
        ops.clone(),
        window_start,
        sampler_rx,
    ));
    let churn = tokio::spawn(churn::run(
        Churn::new(client, &fleet, churn_rng, dra),
        s.churn_rate,
        stop_rx,
    ));
    let (faults, fault_error) = inject_all(s, client, &ops, window_start, fault_rng).await;
    let last_fault_end = Instant::now();
    let _ = stop_tx.send(true);
    let churn: ChurnStats = churn.await?;
    log(format!(
        "window closed: {} faults, {} changes; waiting for the outputs to equal a scan",
        faults.len(),
        churn.total_made()
    ));
    let after = match fault_error {
        None => after_window(s, client, &ops, last_fault_end).await,
        // A cluster a fault left broken (a component that died) cannot be compared; the report still says
        // what happened up to there.
        Some(e) => {
            log(format!("a fault failed: {e}; no convergence or comparison"));
            AfterWindow {
                converged_after: None,
                quiet_writes: 0,
                quiet_detail: "not measured".into(),
                final_difference: Some(format!("not compared: a fault failed: {e}")),
                status_omitted_nodes: 0,
            }
        }
    };
    let _ = stop_sampler.send(true);
    let rss = sampler.await?;
    let mut ops = ops.lock().await;
    ops.stop_all();
    Ok(Outcome {
        faults,
        churn,
        converged_after_last_fault: after.converged_after,
        final_difference: after.final_difference,
        status_omitted_nodes: after.status_omitted_nodes,
        quiet_writes: after.quiet_writes,
        quiet_detail: after.quiet_detail,
        panics: panics(&ops.logs),
        self_exits: ops.self_exits.clone(),
        rss,
        dra: dra_text,
        gpu_nodes: fleet.gpu_nodes.len(),
        initial_pods: fleet.pods.len(),
        started,
        finished: Timestamp::now().to_string(),
    })
}

/// What the phases after the window found.
struct AfterWindow {
    converged_after: Option<f64>,
    quiet_writes: u64,
    quiet_detail: String,
    final_difference: Option<String>,
    status_omitted_nodes: u64,
}

/// Convergence (timed from the end of the last fault), the quiet period, the final comparison.
async fn after_window(
    s: &Settings,
    client: &Client,
    ops: &Shared,
    last_fault_end: Instant,
) -> AfterWindow {
    let converged = converge(s, client, ops, s.settle).await;
    if let Err(d) = &converged {
        log(format!("not converged within {:?}: {d}", s.settle));
    }
    let converged_after = converged
        .ok()
        .map(|_| last_fault_end.elapsed().as_secs_f64());
    let (quiet_writes, quiet_detail) = quiet_period(s).await;
    let (final_difference, status_omitted_nodes) = final_comparison(s, client, ops).await;
    AfterWindow {
        converged_after,
        quiet_writes,
        quiet_detail,
        final_difference,
        status_omitted_nodes,
    }
}

/// The CRD, the namespaces, the fleet; the DRA fleet where DRA churn is possible (and SOAK_DRA_NODES > 0).
async fn set_up(s: &Settings, client: &Client) -> Res<(Fleet, Option<DraFleet>, String)> {
    let templates = cluster::load_templates(&s.fixtures)?;
    lib_api::install_crd(client, Duration::from_secs(60)).await?;
    fleet::create_namespaces(client, operators::NAMESPACE).await?;
    let fleet = fleet::plan(s, &templates)?;
    fleet::create(client, &fleet).await?;
    let help = std::process::Command::new(&s.operator_bin)
        .args(["run", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let (available, text) = churn::dra_available(client, &help).await;
    let dra = (available && s.dra_nodes > 0).then(|| DraFleet::plan(s));
    if let Some(dra) = &dra {
        dra.create(client).await?;
    }
    let text = match &dra {
        Some(d) => format!(
            "{text}; {} DRA nodes ({} GPUs each), {} claims; DRA changes in the churn",
            d.nodes(),
            s.dra_gpus_per_node,
            d.claims()
        ),
        None => format!("{text}; no DRA objects, no DRA changes"),
    };
    log(format!("DRA: {text}"));
    Ok((fleet, dra, text))
}

/// The faults of the schedule, each at its time; the last ends with the window. On a fault that fails (a
/// cluster component that will not come back), the faults done so far and the error.
async fn inject_all(
    s: &Settings,
    client: &Client,
    ops: &Shared,
    window_start: Instant,
    mut rng: Rng,
) -> (Vec<Injected>, Option<String>) {
    let plan = faults::plan(
        &mut rng,
        &s.fault_kinds,
        s.fault_every.as_secs_f64(),
        s.secs as f64,
    );
    log(format!("{} faults planned", plan.len()));
    let mut done = Vec::new();
    for fault in plan {
        tokio::time::sleep_until((window_start + Duration::from_secs_f64(fault.at)).into()).await;
        match faults::inject(fault, s, client, ops, window_start).await {
            Ok(injected) => done.push(injected),
            Err(e) => {
                return (
                    done,
                    Some(format!("{:?} at {:.0} s: {e}", fault.kind, fault.at)),
                );
            }
        }
    }
    tokio::time::sleep_until((window_start + s.window()).into()).await;
    (done, None)
}

/// Polls the outputs against one fresh pair of scans (the cluster no longer changes) until they are equal; Ok(seconds
/// it took) or Err(the last difference) after `timeout`.
async fn converge(
    s: &Settings,
    client: &Client,
    ops: &Shared,
    timeout: Duration,
) -> Result<f64, String> {
    let started = Instant::now();
    let truth = compare::scan(s).await.map_err(|e| e.to_string())?;
    let mut last = String::from("nothing read yet");
    let mut said = Instant::now();
    while started.elapsed() < timeout {
        if said.elapsed() > Duration::from_secs(15) {
            log(format!("not equal to the scan yet: {last}"));
            said = Instant::now();
        }
        let read = {
            let mut ops = ops.lock().await;
            let _ = ops.restart_exited(s);
            compare::outputs(client, &mut ops).await
        };
        match read.map(|out| first_difference(&truth, &out)) {
            Ok(None) => return Ok(started.elapsed().as_secs_f64()),
            Ok(Some(d)) => last = d,
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(last)
}

/// How long the operators must have written nothing (the Lease renewals aside) before the quiet period opens.
const SETTLED_FOR: Duration = Duration::from_secs(3);
/// The longest wait for that; past it the quiet period opens anyway, and writes that go on are counted in it.
const SETTLE_AT_MOST: Duration = Duration::from_secs(30);

/// The operators' writes (the Lease renewals aside) logged from `from` to `to`, by verb and resource.
fn operator_writes(
    audit: &std::path::Path,
    pos: AuditPos,
    from: Timestamp,
    to: Timestamp,
) -> Vec<(String, u64)> {
    audit_counts(audit, pos, "gpu-inventory-operator/", from, to)
        .into_iter()
        .filter(|(k, _)| is_write(k) && !k.ends_with(" leases"))
        .collect()
}

/// Waits until the operators have written nothing for [`SETTLED_FOR`] (at most [`SETTLE_AT_MOST`]). The outputs
/// equal a scan as soon as the last status write lands, but the events of that same pass follow it: on a
/// loaded machine they land a moment later, and were counted as quiet-period writes.
async fn settle(audit: &std::path::Path, pos: AuditPos) {
    let started = Instant::now();
    while started.elapsed() < SETTLE_AT_MOST {
        let now = Timestamp::now();
        let since = now - jiff::SignedDuration::try_from(SETTLED_FOR).unwrap_or_default();
        if started.elapsed() >= SETTLED_FOR && operator_writes(audit, pos, since, now).is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    log(format!(
        "the operators still write after {} s; the quiet period opens anyway",
        SETTLE_AT_MOST.as_secs()
    ));
}

/// The quiet period: the operators' writes in it (the Lease renewals aside), and which.
async fn quiet_period(s: &Settings) -> (u64, String) {
    let audit = s.cluster_dir.join("audit.log");
    settle(&audit, audit_offset(&audit)).await;
    let pos = audit_offset(&audit);
    let from = Timestamp::now();
    log(format!("quiet period: {} s", s.quiet.as_secs()));
    tokio::time::sleep(s.quiet).await;
    // The audit log is written as requests complete: a moment for the last lines.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let writes = operator_writes(&audit, pos, from, Timestamp::now());
    let detail: Vec<String> = writes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    (writes.iter().map(|(_, v)| v).sum(), detail.join(", "))
}

/// Fresh scans against the outputs: the first difference, if any, and the status's `omittedNodes` (how many
/// GPU nodes the cut left out of `nodes[]`; 0 when none).
async fn final_comparison(s: &Settings, client: &Client, ops: &Shared) -> (Option<String>, u64) {
    let truth = match compare::scan(s).await {
        Ok(t) => t,
        Err(e) => return (Some(format!("the final scan failed: {e}")), 0),
    };
    let mut ops = ops.lock().await;
    match compare::outputs(client, &mut ops).await {
        Ok(out) => (
            first_difference(&truth, &out),
            out.status["omittedNodes"].as_u64().unwrap_or(0),
        ),
        Err(e) => (Some(format!("reading the outputs: {e}")), 0),
    }
}

/// Every SOAK_RSS_EVERY_SECS until stopped (the window, the convergence, the quiet period): both replicas' RSS; every second: replicas that exited restarted.
async fn sample(
    s: Settings,
    client: Client,
    ops: Shared,
    window_start: Instant,
    mut stop: watch::Receiver<bool>,
) -> Vec<RssSample> {
    let mut samples = Vec::new();
    let mut next = Instant::now();
    let mut last_leader = None;
    while !*stop.borrow() {
        if Instant::now() >= next {
            let mut o = ops.lock().await;
            let _ = o.restart_exited(&s);
            last_leader = o.leader(&client).await.or(last_leader);
            let leader = last_leader.unwrap_or(0);
            samples.push(RssSample {
                t: window_start.elapsed().as_secs_f64(),
                leader_mib: rss_mib(o.pid(leader)),
                standby_mib: rss_mib(o.pid(1 - leader)),
                leader_pid: Some(o.pid(leader)),
                standby_pid: Some(o.pid(1 - leader)),
            });
            next += s.rss_every;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            _ = stop.changed() => {}
        }
    }
    samples
}

/// Lines of the logs that report a panic.
fn panics(logs: &[std::path::PathBuf]) -> Vec<String> {
    logs.iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .filter(|l| l.contains("panicked"))
                .map(|l| format!("{}: {l}", path.display()))
                .collect::<Vec<_>>()
        })
        .collect()
}
