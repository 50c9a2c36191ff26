//! The allocation scenario (BENCH_SCENARIOS=allocation): GPU allocation accounting on a fleet of
//! BENCH_ALLOC_NODES nodes and BENCH_ALLOC_PODS pods created already bound with their status set
//! (alloc_fleet.rs), on the etcd + kube-apiserver cluster where nothing else touches them.
//!
//! 1. the fleet: nodes, then pods (create + status subresource, BENCH_ALLOC_CREATE_CONCURRENCY in flight);
//! 2. peers, before the operator runs: `gpu-inventory-operator scan -o json` and `kubectl-view-allocations`
//!    (BENCH_VIEW_ALLOCATIONS_BIN), BENCH_ALLOC_PEER_RUNS each, alternating: wall time, peak RSS, CPU, and
//!    their per-node nvidia.com/gpu numbers against each other and the truth (peers.rs);
//! 3. each program of BENCH_ALLOC_PROGRAMS (`operator`, and `previous`: an earlier revision's operator,
//!    BENCH_PREVIOUS_BIN) in turn on the same fleet, each from the same state (the GpuNodes of the one before
//!    deleted; alloc_run.rs), `run` with default inventory `cluster`: time until the status, the ConfigMap
//!    and (operator) every GpuNode show the expected allocation of every GPU node (and the totals and
//!    pending count), peak RSS then, requests at start-up, the status's products, freeGpus and
//!    GpusAvailable condition against the truth;
//! 4. a quiet window of BENCH_ALLOC_QUIET_SECS: the program's writes by resource (0 expected);
//! 5. BENCH_ALLOC_CHANGES single GPU-pod changes (bind a pending pod, delete a running one): latency from
//!    the write's response to the status (node entry and pendingGpuPods), to the ConfigMap entry and to the
//!    node's GpuNode (`n/a` for a program that writes none);
//! 6. churn: BENCH_ALLOC_CHURN_RATE pod changes/s for BENCH_ALLOC_CHURN_SECS (alloc_changes.rs), then until
//!    converged: status and ConfigMap writes per second (mean over the window and the busiest second), and
//!    from the audit log while the changes came every write by resource (`gpuinventories/status`,
//!    `gpunodes`, `gpunodes/status`, `configmaps`, `events`): writes/s, the most one object got in one
//!    second, writes per object per second, the API server's time per write (audit_writes.rs); CPU
//!    seconds, requests; peak RSS at the end.

use kube::Client;
use serde_json::{Value, json};
use testkit::cluster::Templates;
use testkit::settings::bench::Settings;

use crate::alloc_changes::Pods;
use crate::alloc_fleet;
use crate::alloc_run::run_program;
use crate::alloc_truth::Expected;
use crate::program::each_program;
use crate::{Res, log, peers};

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
    let programs = s.operator_programs(&a.programs)?;
    alloc_fleet::clean(client).await?;
    let plan = alloc_fleet::plan(a, templates, s.node_images)?;
    let (node_secs, pod_secs) =
        alloc_fleet::create(client, &plan, a.create_concurrency, "allocation").await?;
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
        Some(bin) => match peers::compare(s, bin, &expected, a.peer_runs).await {
            Ok(v) => v,
            Err(e) => {
                log(format!("FAILED peers: {e}"));
                failures.push(json!({ "part": "peers", "error": e.to_string() }));
                Value::Null
            }
        },
        None => json!({ "skipped": "BENCH_VIEW_ALLOCATIONS_BIN not set" }),
    };
    let mut pods = Pods::new(plan.pods);
    let run =
        async |program, expected| run_program(client, s, program, &mut pods, expected, ticks).await;
    let runs = each_program(
        client,
        s,
        "allocation",
        &programs,
        expected.clone(),
        &mut failures,
        run,
    )
    .await;
    let failed = failures.len();
    let tainted = plan.gpu_nodes.iter().filter(|n| n.tainted).count();
    let mut section = json!({
        "settings": {
            "nodes": a.nodes, "gpu_every": a.gpu_every, "gpus_per_node": a.gpus_per_node, "pods": a.pods,
            "gpu_pods": a.gpu_pods, "pending": a.pending, "taint_every": a.taint_every,
            "changes": a.changes, "churn_rate": a.churn_rate, "churn_secs": a.churn_secs,
            "peer_runs": a.peer_runs, "create_concurrency": a.create_concurrency,
            "quiet_secs": a.quiet_secs,
        },
        "programs": programs.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "previous_label": s.previous_label,
        "setup": {
            "gpu_nodes": plan.gpu_nodes.len(), "tainted_gpu_nodes": tainted,
            "node_create_secs": node_secs, "pod_create_secs": pod_secs,
            "gpus": { "allocatable": allocatable, "allocated": allocated, "free": free },
            "pending_gpu_pods": expected.pending,
            "products": expected.products(false),
        },
        "peers": peers,
        "failures": failures,
    });
    // Each program's results under its name (`operator`, `previous`).
    for (name, run) in runs {
        section[name] = run;
    }
    Ok((section, failed))
}
