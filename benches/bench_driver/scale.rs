//! The scale scenario (BENCH_SCENARIOS=scale, issue #26: 65,000 nodes in one process, on the local control
//! plane): for each node count of BENCH_SCALE_NODES (hack/bench.sh gives each its own fresh cluster,
//! target/bench-scale-cluster, one driver run per count), the fleet of scale_fleet.rs (a 65,000-node
//! cluster's make-up scaled to the count: device-plugin GPU nodes of five kinds, tainted and cordoned ones, DRA
//! nodes with a ResourceSlice each and allocated claims, pods bound with their status, pending GPU pods), the
//! time each part of its set-up took, then BENCH_SCALE_RUNS runs of the operator on it (scale_run.rs: start-up,
//! quiet, latency under churn, a forced relist of every watch, then `scan` against kubectl-view-allocations),
//! and the medians of the runs. With BENCH_SCALE_READERS=both (the default), first the runs without the
//! readers #37-#41 added, then, the readers put in place (scale_readers.rs: Kueue's objects, Prometheus, the
//! ClusterProperty), as many with them: the entry's `runs` and `median` are theirs, `without` the others'.
//!
//! results.json's `scale` section keeps every count's entry (`sizes.<count>`: the shape, the set-up, each run,
//! the medians, the failures) across driver runs; the table (scale_report.rs) has a column per count, and
//! target/bench/scale.png (scale_plot.rs) plots peak RSS and convergence time against the node count.

use std::time::Instant;

use jiff::Timestamp;
use kube::Client;
use serde_json::{Value, json};
use testkit::cluster::Templates;
use testkit::settings::bench::{Program, ScaleShape as Shape, Settings};

use crate::alloc_changes::Pods;
use crate::alloc_truth::Expected;
use crate::dra_truth::DraTruth;
use crate::scale_fleet::{Kinds, dra_settings};
use crate::scale_readers::{self, FleetView, Readers};
use crate::scale_run::{Fleet, run_once};
use crate::{Res, alloc_fleet, dra_fleet, log, scale_fit, scale_plot, scale_report};

/// Runs the scenario for every node count into `doc["scale"]`; returns how many parts failed.
pub async fn bench(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    ticks: f64,
    doc: &mut Value,
) -> usize {
    let sc = &s.scale;
    if !doc["scale"].is_object() {
        doc["scale"] = json!({});
    }
    doc["scale"]["settings"] = json!({
        "runs": sc.runs, "quiet_secs": sc.quiet_secs, "churn_rate": sc.churn_rate, "churn_secs": sc.churn_secs,
        "changes": sc.changes, "peer_runs": sc.peer_runs, "create_concurrency": sc.create_concurrency,
        "settle_secs": sc.settle.as_secs(), "node_images": s.node_images,
    });
    if !doc["scale"]["sizes"].is_object() {
        doc["scale"]["sizes"] = json!({});
    }
    let mut failed = 0;
    for &n in &sc.nodes {
        let started = Timestamp::now();
        let mut entry = size(client, s, templates, n, ticks)
            .await
            .unwrap_or_else(|e| {
                log(format!("FAILED scale at {n} nodes: {e}"));
                json!({ "nodes": n, "failures": [{ "part": "setup", "error": e.to_string() }] })
            });
        entry["started"] = json!(started.to_string());
        entry["finished"] = json!(Timestamp::now().to_string());
        failed += entry["failures"].as_array().map_or(0, Vec::len);
        doc["scale"]["sizes"][n.to_string()] = entry;
    }
    let png = s.out.with_file_name("scale.png");
    match scale_plot::png(&png, &doc["scale"]) {
        Ok(()) => doc["scale"]["plot"] = json!(png.display().to_string()),
        Err(e) => log(format!("scale: no plot: {e}")),
    }
    failed
}

/// One node count: the fleet, its set-up times, the runs, their medians.
async fn size(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    n: usize,
    ticks: f64,
) -> Res<Value> {
    let shape = Shape::at(n);
    log(format!(
        "=== scale: {n} nodes: {} GPU nodes ({} DRA, {} MIG, {} time-sliced; {} tainted, {} cordoned), {} pods ({} GPU, {} pending), {} claims",
        shape.gpu_nodes,
        shape.dra_nodes,
        shape.mig_nodes,
        shape.time_sliced_nodes,
        shape.tainted,
        shape.cordoned,
        shape.pods,
        shape.gpu_pods,
        shape.pending,
        shape.claims
    ));
    let t0 = Instant::now();
    alloc_fleet::clean(client).await?;
    dra_fleet::clean(client).await?;
    let kinds = Kinds::load(templates, &s.fixtures)?;
    let mut plan = crate::scale_fleet::plan(&shape, s, templates, &kinds);
    let concurrency = s.scale.create_concurrency;
    let (node_secs, pod_secs) = alloc_fleet::create(client, &plan, concurrency, "scale").await?;
    // The node objects are sent; at 65,000 nodes they are a good part of a GiB.
    plan.nodes = Vec::new();
    let d = dra_settings(&shape, s);
    let truth = DraTruth::new(d.nodes, d.gpus_per_node, d.claims());
    let dra_secs = dra_fleet::create(client, &d, templates, s.node_images, &truth).await?;
    let expected = Expected::new(&plan.gpu_nodes, &plan.pods);
    let setup = setup_json(&plan.gpu_nodes, &expected, &truth);
    let secs = json!({
        "nodes": node_secs, "pods": pod_secs, "dra_nodes": dra_secs.nodes, "slices": dra_secs.slices,
        "claims": dra_secs.claims, "all": t0.elapsed().as_secs_f64(),
    });
    log(format!("scale: {n} nodes: set-up took {secs}"));
    let mut failures = Vec::new();
    let mut fleet = Fleet {
        nodes: n,
        pods: Pods::new(plan.pods),
        expected,
        truth,
        cliques: scale_fit::cliques(&plan.gpu_nodes),
    };
    let readers_setting = s.scale.readers;
    let mut runs = serde_json::Map::new();
    if readers_setting.without() {
        let base = RunKind::without();
        let (done, after) = kind_runs(client, s, &base, fleet, ticks, &mut failures).await;
        fleet = after;
        runs.insert(base.name.into(), done);
    }
    let mut readers_setup = Value::Null;
    if readers_setting.with() {
        let view = FleetView {
            gpu_nodes: &plan.gpu_nodes,
            pods: &fleet.pods.recs,
            truth: &fleet.truth,
        };
        let runs_secs = s.scale.runs as u64 * (s.scale.quiet_secs + s.scale.churn_secs + 900);
        match scale_readers::install(client, s, n, &view, runs_secs).await {
            Ok(readers) => {
                readers_setup = readers.setup.clone();
                let kind = RunKind::with(&readers);
                let (done, _) = kind_runs(client, s, &kind, fleet, ticks, &mut failures).await;
                runs.insert(kind.name.into(), done);
            }
            Err(e) => {
                log(format!("FAILED scale at {n} nodes: the readers: {e}"));
                failures.push(json!({ "part": "readers", "error": e.to_string() }));
            }
        }
    }
    // The scenario's figures are the runs with the readers when there are any; `without` beside them.
    let main = runs
        .get("with")
        .or(runs.get("without"))
        .cloned()
        .unwrap_or(Value::Null);
    let without = runs
        .get("without")
        .filter(|_| runs.contains_key("with"))
        .cloned();
    Ok(json!({
        "nodes": n,
        "shape": shape,
        "setup": { "secs": secs, "fleet": setup, "readers": readers_setup },
        "runs": main["runs"],
        "median": main["median"],
        "without": without.map(|w| json!({ "runs": w["runs"], "median": w["median"] })),
        "failures": failures,
    }))
}

/// The runs with or without the readers: their name, the label prefix of their runs, the operator's flags.
struct RunKind {
    name: &'static str,
    args: Vec<String>,
}

impl RunKind {
    fn without() -> RunKind {
        RunKind {
            name: "without",
            args: scale_readers::without_args(),
        }
    }

    fn with(readers: &Readers) -> RunKind {
        RunKind {
            name: "with",
            args: readers.args(),
        }
    }
}

/// BENCH_SCALE_RUNS runs of `kind` on `fleet`: `{runs, median}`, and the fleet after them.
async fn kind_runs(
    client: &Client,
    s: &Settings,
    kind: &RunKind,
    fleet: Fleet,
    ticks: f64,
    failures: &mut Vec<Value>,
) -> (Value, Fleet) {
    let labels: Vec<(String, Program)> = (1..=s.scale.runs)
        .map(|k| (format!("{}{k}", kind.name), Program::Operator))
        .collect();
    let (mut by_label, fleet) = crate::program::each_run(
        client,
        s,
        "scale",
        &labels,
        fleet,
        failures,
        async |run, _, fleet| {
            let label = &labels[run - 1].0;
            run_once(client, s, run, label, &kind.args, fleet, ticks).await
        },
    )
    .await;
    let runs: Vec<Value> = labels
        .iter()
        .map(|(label, _)| by_label.remove(label).unwrap_or(Value::Null))
        .collect();
    for ((label, _), r) in labels.iter().zip(&runs) {
        if let Some(e) = r["peers"]["error"].as_str() {
            failures.push(json!({ "part": format!("{label} peers"), "error": e }));
        }
        if let Some(e) = r["fit"]["error"].as_str() {
            failures.push(json!({ "part": format!("{label} fit"), "error": e }));
        }
        if r["fit"]["differ"].as_u64().is_some_and(|d| d > 0) {
            let e = format!(
                "fit and the driver's count differ on {} domains: {}",
                r["fit"]["differ"], r["fit"]["first_differences"]
            );
            failures.push(json!({ "part": format!("{label} fit"), "error": e }));
        }
        let missing = scale_readers::missing(&r["readers_seen"]);
        if let Some(e) = missing.filter(|_| kind.name == "with" && r.is_object()) {
            log(format!("FAILED scale {label}: {e}"));
            failures.push(json!({ "part": format!("{label} readers"), "error": e }));
        }
    }
    let done: Vec<&Value> = runs.iter().filter(|r| r.is_object()).collect();
    let median = scale_report::medians(&done);
    (json!({ "runs": runs, "median": median }), fleet)
}

/// What the fleet holds, as made: GPU nodes by product, tainted and cordoned, the GPUs of both kinds.
fn setup_json(
    gpu_nodes: &[alloc_fleet::GpuNodeSpec],
    expected: &Expected,
    truth: &DraTruth,
) -> Value {
    let mut products = std::collections::BTreeMap::<&str, u64>::new();
    for g in gpu_nodes {
        *products.entry(g.product.as_str()).or_default() += 1;
    }
    let (allocatable, allocated, free) = expected.totals();
    let (d_allocatable, d_allocated, d_free) = truth.totals();
    json!({
        "device_plugin_nodes": gpu_nodes.len(), "by_product": products,
        "tainted": gpu_nodes.iter().filter(|g| g.tainted).count(),
        "cordoned": gpu_nodes.iter().filter(|g| g.cordoned).count(),
        "dra_nodes": truth.nodes.len(), "claims": truth.claims.len(),
        "nvidia_gpu": { "allocatable": allocatable, "allocated": allocated, "free": free },
        "pending_gpu_pods": expected.pending,
        "dra_gpu": { "allocatable": d_allocatable, "allocated": d_allocated, "free": d_free },
    })
}
