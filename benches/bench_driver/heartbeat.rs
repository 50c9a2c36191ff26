//! The heartbeat scenario: a fleet of KWOK nodes (BENCH_HEARTBEAT_NODES, every BENCH_HEARTBEAT_GPU_EVERY-th
//! a GPU node) on a cluster with KWOK and the controllers (LOCAL_CLUSTER_COMPONENTS=all), where nothing
//! changes but the heartbeats: KWOK renews every node's Lease every 5 s and rewrites its status (conditions'
//! heartbeat times) every LOCAL_CLUSTER_NODE_STATUS_SECS..2x seconds.
//!
//! 1. creates the fleet once (KWOK-annotated, Ready, phase Running), waits until KWOK has taken every node
//!    (a Lease in kube-node-lease each), removes the not-ready taint admission put on them (see `set_up`),
//!    and waits until KWOK has heartbeated each node's status once (so the window starts from KWOK's steady
//!    state, not from the fixtures' conditions);
//! 2. for each program, on the same fleet: a fresh namespace, the program started, convergence (the same
//!    watches as the steady scenario), 3 s, then a window of BENCH_HEARTBEAT_SECS: the program's writes and
//!    API requests by verb and resource (audit log, by User-Agent), its CPU seconds and CPU % of one core,
//!    peak RSS; and what the fleet did in the same window (audit log): KWOK's node status updates and Lease
//!    renewals (count, rate, gaps between a node's consecutive ones, failures), writes of the node lifecycle
//!    controller to node status (a node turning Unknown when its Lease renewals lag) and to nodes (taints),
//!    nodes not Ready at the end,
//!    and the CPU % of kube-apiserver, etcd and KWOK (pid files in BENCH_CLUSTER_DIR);
//! 3. deletes the fleet.

use std::time::{Duration, Instant};

use jiff::Timestamp;
use kube::Client;
use serde_json::{Value, json};
use testkit::audit::{
    AuditTail, audit_counts, audit_offset, count_where, is_write, writes_to_outputs,
};
use testkit::cluster::{self, Templates};
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::measure::{
    Fleet, KWOK_UA, NODE_CONTROLLER, component_cpu_secs, cpu_secs, fleet_event, peak_rss_mib,
    percentile,
};
use crate::observe::{Obs, Observer};
use crate::program::{spawn_program, stop_program};
use crate::{Res, log};

/// KWOK renews a Lease every --node-lease-duration-seconds / 4 = 20 / 4 s (hack/local-cluster.sh).
pub const LEASE_RENEW_SECS: f64 = 5.0;
/// The cluster components whose CPU the report shows (their pid files in BENCH_CLUSTER_DIR).
const COMPONENTS: [&str; 4] = ["kube-apiserver", "etcd", "kwok", "kube-controller-manager"];

/// Runs the scenario for every program of BENCH_PROGRAMS; returns results.json's `heartbeat` section and
/// how many runs failed.
pub async fn bench(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    ticks: f64,
) -> Res<(Value, usize)> {
    let n = s.heartbeat_nodes;
    let setup = set_up(client, s, templates).await?;
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for &program in &s.programs {
        match run_program(client, s, program, ticks).await {
            Ok(r) => results.push(r),
            Err(e) => {
                log(format!(
                    "FAILED heartbeat {} at {n} nodes: {e}",
                    program.name()
                ));
                failures
                    .push(json!({ "program": program.name(), "nodes": n, "error": e.to_string() }));
            }
        }
    }
    log("heartbeat: deleting the fleet");
    cluster::delete_bench_nodes(client).await?;
    let failed = failures.len();
    let section = json!({
        "settings": {
            "nodes": n,
            "gpu_every": s.heartbeat_gpu_every,
            "window_secs": s.heartbeat_secs,
            "node_status_secs": s.heartbeat_status_secs,
            "lease_renew_secs": LEASE_RENEW_SECS,
            "node_images": s.node_images,
        },
        "setup": setup,
        "results": results,
        "failures": failures,
    });
    Ok((section, failed))
}

/// The fleet: created, taken by KWOK (Leases), heartbeated once.
async fn set_up(client: &Client, s: &Settings, templates: &Templates) -> Res<Value> {
    let n = s.heartbeat_nodes;
    let gpu_templates = cluster::kwok_gpu_templates(templates);
    if gpu_templates.is_empty() {
        return Err("no GPU fixture with GFD labels and an nvidia.com/gpu capacity".into());
    }
    log(format!(
        "=== heartbeat: {n} KWOK nodes (every {}th a GPU node, from {} GPU templates), window {}s",
        s.heartbeat_gpu_every,
        gpu_templates.len(),
        s.heartbeat_secs
    ));
    cluster::delete_bench_nodes(client).await?;
    let mut tail = AuditTail::at(&s.audit_log, audit_offset(&s.audit_log));
    let create = cluster::create_nodes_with(client, n, |i| {
        cluster::make_kwok_node(
            &gpu_templates,
            templates,
            i,
            s.heartbeat_gpu_every,
            s.node_images,
        )
    })
    .await?;
    log(format!(
        "heartbeat: created {n} nodes in {:.1}s",
        create.as_secs_f64()
    ));

    // KWOK has taken a node when it has created its Lease.
    let t0 = Instant::now();
    let lease_timeout = Duration::from_secs(120 + n as u64 / 20);
    let mut leases = 0;
    while t0.elapsed() < lease_timeout {
        leases = cluster::bench_node_leases(client).await?;
        if leases >= n {
            break;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let leases_secs = t0.elapsed().as_secs_f64();
    log(format!(
        "heartbeat: {leases} of {n} Leases after {leases_secs:.1}s (after the creates)"
    ));

    // Admission (TaintNodesByCondition) gives every new node the not-ready:NoSchedule taint; the node
    // lifecycle controller removes it from Ready nodes, but only ~10 nodes/s (its client's 20 QPS, a get and a
    // patch each): 8 minutes for 5,000 nodes, which would still be going on in the windows. The driver removes
    // it the same way (a patch of spec.taints), 32 in flight.
    let t2 = Instant::now();
    cluster::untaint_kwok_nodes(client, n, s.heartbeat_gpu_every).await?;
    let untaint_secs = t2.elapsed().as_secs_f64();
    log(format!(
        "heartbeat: removed the not-ready taint from {n} nodes in {untaint_secs:.1}s"
    ));

    // One status heartbeat per node, so the window starts from what KWOK writes, not the fixtures' conditions.
    let t1 = Instant::now();
    let warm_timeout = Duration::from_secs(4 * s.heartbeat_status_secs + 60);
    let mut heartbeated = std::collections::HashSet::new();
    while t1.elapsed() < warm_timeout && heartbeated.len() < n {
        tokio::time::sleep(Duration::from_secs(2)).await;
        tail.read_new(&[KWOK_UA], |v| {
            if let Some(crate::measure::FleetEvent::Status(name, _, true)) = fleet_event(v) {
                heartbeated.insert(name);
            }
        });
    }
    let warm_secs = t1.elapsed().as_secs_f64();
    let (not_ready, total) = cluster::bench_nodes_not_ready(client).await?;
    log(format!(
        "heartbeat: {} of {n} nodes heartbeated once after {warm_secs:.1}s more; {not_ready} of {total} not Ready",
        heartbeated.len()
    ));
    Ok(json!({
        "node_create_secs": create.as_secs_f64(),
        "leases": leases,
        "leases_secs": leases_secs,
        "untaint_secs": untaint_secs,
        "nodes_heartbeated_once": heartbeated.len(),
        "warm_up_secs": warm_secs,
        "nodes_not_ready_before_first_run": not_ready,
    }))
}

/// One program on the fleet: start, convergence, the window.
async fn run_program(client: &Client, s: &Settings, program: Program, ticks: f64) -> Res<Value> {
    let n = s.heartbeat_nodes;
    let tag = format!("heartbeat-{}-{n}", program.name());
    let namespace = format!("bench-{tag}-{}", Timestamp::now().as_second());
    let inventory = format!("bench-{tag}");
    cluster::fresh_namespace(client, &namespace, &inventory).await?;
    let gpu = cluster::list_gpu_nodes(client).await?;
    let gpu_nodes = gpu.truth.len();
    let gpu_ready = gpu.truth.values().filter(|e| e.ready).count();
    log(format!(
        "{tag}: {gpu_nodes} GPU nodes ({gpu_ready} Ready); starting {}",
        program.name()
    ));
    let mut observer = Observer::start(client, &inventory, &namespace, gpu.truth);
    std::fs::create_dir_all(&s.log_dir)?;
    let log_path = s.log_dir.join(format!("{tag}.log"));
    let t0 = Instant::now();
    let mut child = spawn_program(s, program, &namespace, &inventory, &log_path)?;
    let pid = child.id();
    let result = async {
        // A fleet KWOK cannot keep Ready changes under the driver's snapshot of it (nodes turn Unknown and back):
        // then there is no convergence to wait for, and the window still shows what the program did about it.
        let converged = observer.wait_for(s.settle, Obs::converged).await;
        let converge_secs = t0.elapsed().as_secs_f64();
        if converged {
            log(format!(
                "{tag}: converged in {converge_secs:.2}s; window {}s",
                s.heartbeat_secs
            ));
        } else {
            log(format!(
                "{tag}: WARNING not converged after {}s (nodes changing Ready? see {}); measuring the window anyway",
                s.settle.as_secs(),
                log_path.display()
            ));
        }
        tokio::time::sleep(Duration::from_secs(3)).await;

        let offset = audit_offset(&s.audit_log);
        let from = Timestamp::now();
        let started = Instant::now();
        let cpu_before = cpu_secs(pid, ticks);
        let components_before = components_cpu(s, ticks);
        tokio::time::sleep(Duration::from_secs(s.heartbeat_secs)).await;
        let cpu = cpu_secs(pid, ticks) - cpu_before;
        let components_after = components_cpu(s, ticks);
        let secs = started.elapsed().as_secs_f64();
        let to = Timestamp::now();
        let rss_mib = peak_rss_mib(pid);
        let alive = matches!(child.try_wait(), Ok(None));
        let matches_at_end = observer.obs.lock().unwrap().converged();
        // Requests received by `to` are in the log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;

        let requests = audit_counts(&s.audit_log, offset, program.user_agent_prefix(), from, to);
        let mut fleet = Fleet::default();
        AuditTail::at(&s.audit_log, offset).read_new(&[KWOK_UA, NODE_CONTROLLER], |v| {
            if let Some(e) = fleet_event(v) {
                fleet.add(e, from, to);
            }
        });
        let (not_ready, total) = cluster::bench_nodes_not_ready(client).await?;
        let component_pct: serde_json::Map<String, Value> = COMPONENTS
            .iter()
            .filter_map(|&c| {
                let before = components_before.get(c)?;
                let after = components_after.get(c)?;
                Some((c.to_owned(), json!(100.0 * (after - before) / secs)))
            })
            .collect();
        let writes = writes_to_outputs(&requests);
        let total_requests: u64 = requests.values().sum();
        let lists = count_where(&requests, |k| k.starts_with("list "));
        let cpu_pct = 100.0 * cpu / secs;
        let fleet_json = fleet_json(&fleet, s, secs, not_ready, total, component_pct);
        log(format!(
            "{tag}: window {secs:.0}s: writes {writes} (all writes {}), requests {total_requests}, lists {lists}, cpu {cpu:.2}s = {cpu_pct:.2}% of a core, rss {rss_mib:.1} MiB; KWOK status {:.1}/s, Leases {:.1}/s, lifecycle status writes {} (Unknown), taint writes {}, not Ready at end {not_ready}",
            count_where(&requests, is_write),
            fleet_json["status_writes_per_sec"].as_f64().unwrap_or(f64::NAN),
            fleet_json["lease_writes_per_sec"].as_f64().unwrap_or(f64::NAN),
            fleet.lifecycle_status_writes,
            fleet.lifecycle_taint_writes,
        ));
        Ok(json!({
            "program": program.name(),
            "nodes": n,
            "gpu_nodes": gpu_nodes,
            "gpu_nodes_ready": gpu_ready,
            "converged": converged,
            "converge_secs": if converged { json!(converge_secs) } else { Value::Null },
            "window_secs": secs,
            "writes": writes,
            "all_writes": count_where(&requests, is_write),
            "requests_total": total_requests,
            "lists": lists,
            "requests": requests,
            "cpu_secs": cpu,
            "cpu_pct_of_core": cpu_pct,
            "rss_mib": rss_mib,
            "alive_at_end": alive,
            "inventory_matches_at_end": matches_at_end,
            "fleet": fleet_json,
        }))
    }
    .await;
    stop_program(&mut child);
    observer.stop();
    cluster::remove_outputs(client, &namespace, &inventory).await;
    result
}

/// CPU seconds of each cluster component now (those with a pid file in BENCH_CLUSTER_DIR).
fn components_cpu(s: &Settings, ticks: f64) -> std::collections::BTreeMap<&'static str, f64> {
    COMPONENTS
        .iter()
        .filter_map(|&c| Some((c, component_cpu_secs(s.cluster_dir.as_deref(), c, ticks)?)))
        .collect()
}

fn gap_json(gaps: &[f64]) -> Value {
    json!({
        "p50": percentile(gaps, 50.0),
        "p99": percentile(gaps, 99.0),
        "max": gaps.last().copied().unwrap_or(f64::NAN),
    })
}

/// The fleet's part of a window: KWOK's rates against what it was asked for, and the nodes' health.
fn fleet_json(
    fleet: &Fleet,
    s: &Settings,
    secs: f64,
    not_ready: usize,
    total: usize,
    component_pct: serde_json::Map<String, Value>,
) -> Value {
    let n = s.heartbeat_nodes as f64;
    let (status, status_nodes) = fleet.status_writes();
    let (leases, leases_renewed) = fleet.lease_writes();
    json!({
        "status_writes": status,
        "status_writes_per_sec": status as f64 / secs,
        // KWOK waits N..2N s between a node's status writes: N * 1.5 on average.
        "status_writes_per_sec_asked": n / (1.5 * s.heartbeat_status_secs as f64),
        "nodes_heartbeated": status_nodes,
        "status_gap_secs": gap_json(&fleet.status_gaps()),
        "status_failed": fleet.status_failed,
        "lease_writes": leases,
        "lease_writes_per_sec": leases as f64 / secs,
        "lease_writes_per_sec_asked": n / LEASE_RENEW_SECS,
        "leases_renewed": leases_renewed,
        "lease_gap_secs": gap_json(&fleet.lease_gaps()),
        "lease_failed": fleet.lease_failed,
        "lifecycle_status_writes": fleet.lifecycle_status_writes,
        "lifecycle_taint_writes": fleet.lifecycle_taint_writes,
        "nodes_not_ready_at_end": not_ready,
        "nodes_at_end": total,
        "cpu_pct_of_core": component_pct,
    })
}
