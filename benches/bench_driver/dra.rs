//! The DRA scenario (BENCH_SCENARIOS=dra): the DRA accounting on BENCH_DRA_NODES nodes, each publishing
//! one ResourceSlice of BENCH_DRA_GPUS_PER_NODE whole GPUs, and BENCH_DRA_CLAIMS ResourceClaims allocated one
//! device each (dra_fleet.rs), on the etcd + kube-apiserver cluster where nothing else touches them.
//!
//! 1. the fleet: nodes, slices, the DeviceClass, claims (create + allocation through the status subresource);
//! 2. the one-shot `gpu-inventory-operator scan -o json`, BENCH_DRA_SCAN_RUNS times: wall time, peak RSS,
//!    CPU, and its per-node `gpu.nvidia.com/gpu` numbers against the truth, node by node;
//! 3. each program of BENCH_DRA_PROGRAMS (`operator`, and `previous`: an earlier revision's operator,
//!    BENCH_PREVIOUS_BIN) in turn on the same fleet, each from the same state (the GpuNodes of the one before
//!    deleted; dra_run.rs), `run` with default inventory `cluster`: time until the status shows the truth
//!    (the `resources[]` row and every entry of `nodes[]`) and (operator) every GpuNode does, peak RSS then
//!    (VmHWM sampled every 100 ms), requests at start-up;
//! 4. every node's detail readable: as many GpuNodes as DRA nodes, each with all its devices in
//!    `status.devices`; `omittedNodes` of the status and of the ConfigMap summary;
//! 5. a quiet window of BENCH_DRA_QUIET_SECS: the program's writes by resource (0 expected);
//! 6. BENCH_DRA_CHANGES single claim changes (deallocate, allocate), one at a time, each on a node listed in
//!    `nodes[]`: latency from the write's response to the status and to the node's GpuNode showing it;
//! 7. churn: BENCH_DRA_CHURN_RATE claim changes/s for BENCH_DRA_CHURN_SECS anywhere in the fleet, then until
//!    converged: status and ConfigMap writes per second (mean and busiest second), every write by resource
//!    and per object while the changes came (audit_writes.rs), CPU; peak RSS at the end.

use kube::Client;
use serde_json::{Value, json};
use testkit::cluster::Templates;
use testkit::settings::bench::Settings;

use crate::dra_fleet::{self, SetupSecs};
use crate::dra_observe::{SeenDra, mismatch};
use crate::dra_run::run_program;
use crate::dra_truth::DraTruth;
use crate::peers::{measured, medians};
use crate::program::each_program;
use crate::{Res, log};

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
        d.nodes,
        d.gpus_per_node,
        d.claims()
    ));
    let programs = s.operator_programs(&d.programs)?;
    dra_fleet::clean(client).await?;
    let truth = DraTruth::new(d.nodes, d.gpus_per_node, d.claims());
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
    let run = async |program, truth| run_program(client, s, program, truth, ticks).await;
    let runs = each_program(client, s, "dra", &programs, truth, &mut failures, run).await;
    let mut section = json!({
        "settings": {
            "nodes": d.nodes, "gpus_per_node": d.gpus_per_node, "claims": d.claims(),
            "changes": d.changes, "churn_rate": d.churn_rate, "churn_secs": d.churn_secs,
            "scan_runs": d.scan_runs, "create_concurrency": d.create_concurrency,
            "quiet_secs": d.quiet_secs,
        },
        "programs": programs.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "previous_label": s.previous_label,
        "setup": setup_json(secs, (allocatable, allocated, free)),
        "scan": scan,
        "failures": failures,
    });
    // Each program's results under its name (`operator`, `previous`).
    for (name, run) in runs {
        section[name] = run;
    }
    let failed = section["failures"].as_array().map_or(0, Vec::len);
    Ok((section, failed))
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
