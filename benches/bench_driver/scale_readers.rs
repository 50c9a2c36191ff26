//! The readers that issues #37 to #41 added, put on the scale fleet (issue #42) between the runs without them
//! and the runs with them (scale.rs): topology labels are the fleet's own (scale_fleet.rs, on every GPU node
//! from the start); this adds
//!
//! - **Kueue**: its CRDs (`hack/build-control-plane.sh kueue`'s copy of v0.17's, BENCH_KUEUE_CRDS), 20
//!   ResourceFlavors (one GKE block of the fleet's topology labels each), 50 ClusterQueues in 5 cohorts giving
//!   64 GPUs on two flavors each, a LocalQueue for each in a namespace of its own, and 2,000 pending Workloads
//!   (2 to 18 pods of 4 GPUs, every other one required in one subblock): the shape `make scan-cost` measures
//!   in process (benches/scan_cost.rs), here through the API server and the operator's watches. Nothing runs
//!   Kueue's controller: the Workloads stay pending, as 2,000 queued jobs do;
//! - **Prometheus** (BENCH_PROMETHEUS, promtool beside it): dcgm-exporter's series for every GPU of the fleet,
//!   back-filled (testkit::prometheus): `DCGM_FI_DEV_GPU_UTIL` per whole GPU (the time-sliced T4 once),
//!   `DCGM_FI_PROF_GR_ENGINE_ACTIVE` per MIG instance, labelled with the pod that holds it (the fleet's bound
//!   GPU pods, in the order of their GPUs) or the DRA claim; every tenth held unit idle, the rest busy. The
//!   history runs from the idle window (30 minutes) and 10 minutes before now to past the runs' end, a sample
//!   every 4 minutes (under the 5-minute lookback: a series is current at any instant);
//! - **the ClusterProperty CRD** (about-api's, tests/fixtures/fleet): the operator keeps its summary there.
//!
//! The runs with the readers get `--prometheus-url`; the runs without them run before any of this exists and
//! with `--cluster-property ""`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt, stream};
use jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use testkit::cluster::{BLOCK_RACKS, RACK_NODES};
use testkit::pods::PodRec;
use testkit::prometheus::{Binaries, DcgmLabels, PrometheusProcess, Series, dcgm_labels};
use testkit::settings::bench::Settings;

use crate::alloc_fleet::GpuNodeSpec;
use crate::dra_truth::DraTruth;
use crate::{Res, log};

/// Kueue's API group and the version written (v0.17's storage version).
const KUEUE_GROUP: &str = "kueue.x-k8s.io";
const KUEUE_VERSION: &str = "v1beta2";
const FLAVORS: usize = 20;
const QUEUES: usize = 50;
const COHORTS: usize = 5;
const WORKLOADS: usize = 2_000;
const GPU: &str = "nvidia.com/gpu";
const SUBBLOCK: &str = "cloud.google.com/gce-topology-subblock";
/// The ClusterProperty CRD, under BENCH_FIXTURES.
const CLUSTER_PROPERTY_CRD: &str = "fleet/about.k8s.io_clusterproperties.yaml";
/// A sample every this many seconds: under Prometheus's 5-minute lookback.
const STEP_SECS: i64 = 240;
/// The operator's idle window (its default), and the history before it.
const WINDOW_SECS: i64 = 30 * 60;
const BEFORE_WINDOW_SECS: i64 = 10 * 60;
/// One held unit in this many is idle.
const IDLE_EVERY: usize = 10;
/// MIG instances per GPU on the MIG nodes (`all-1g.10gb` on an H100).
const MIG_PER_GPU: u64 = 7;

/// The readers, in place: Prometheus runs until dropped.
pub struct Readers {
    prometheus: PrometheusProcess,
    /// What their set-up took and made.
    pub setup: Value,
}

impl Readers {
    /// The operator's flags for them. The query timeout is 30 s, not the default 10 s: this Prometheus shares
    /// the machine's two cores with the API server and the operator, and its idle query over 153,200 series
    /// takes 8-9 s of CPU alone (benches/RESULTS.md), so under the churn it passed 10 s and the rounds failed
    /// (#42, 2026-12-05). A cluster's Prometheus runs on nodes of its own.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--prometheus-url".into(),
            self.prometheus.url(),
            "--prometheus-timeout".into(),
            "30s".into(),
        ]
    }
}

/// The flags of a run without the readers: no ClusterProperty (no Prometheus URL and no Kueue need none).
pub fn without_args() -> Vec<String> {
    vec!["--cluster-property".into(), String::new()]
}

/// What the fleet holds, for the series: its device-plugin GPU nodes, its pods, its DRA nodes and claims.
pub struct FleetView<'a> {
    pub gpu_nodes: &'a [GpuNodeSpec],
    pub pods: &'a [PodRec],
    pub truth: &'a DraTruth,
}

/// Puts the readers on the cluster for a fleet of `n` nodes whose runs with them last about `runs_secs`.
pub async fn install(
    client: &Client,
    s: &Settings,
    n: usize,
    fleet: &FleetView<'_>,
    runs_secs: u64,
) -> Res<Readers> {
    let t0 = Instant::now();
    let kueue_crds = s.scale.kueue_crds.as_deref().ok_or(
        "the scale scenario's readers need BENCH_KUEUE_CRDS (hack/bench.sh sets it from `hack/build-control-plane.sh kueue`)",
    )?;
    let prometheus = s.scale.prometheus.clone().ok_or(
        "the scale scenario's readers need BENCH_PROMETHEUS (hack/bench.sh sets it from `hack/build-control-plane.sh prometheus`)",
    )?;
    apply_crds(&s.kubeconfig, kueue_crds)?;
    apply_crds(&s.kubeconfig, &s.fixtures.join(CLUSTER_PROPERTY_CRD))?;
    let crds_secs = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let made = kueue_objects(client, n, s.scale.create_concurrency).await?;
    let kueue_secs = t1.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let dir = s.log_dir.join(format!("scale-{n}-prometheus"));
    std::fs::create_dir_all(&dir)?;
    let history = dir.join("history.om");
    let now = Timestamp::now().as_second();
    let (from, to) = (
        now - WINDOW_SECS - BEFORE_WINDOW_SECS,
        now + runs_secs as i64 + 600,
    );
    let (series, idle_units) = series(fleet, from, to);
    // write_openmetrics buffers its own writes.
    testkit::prometheus::write_openmetrics(&series, &mut std::fs::File::create(&history)?)?;
    let history_mb = std::fs::metadata(&history)?.len() as f64 / 1e6;
    let series_count = series.len();
    drop(series);
    let binaries = Binaries::beside(prometheus)?;
    let log_path = s.log_dir.join(format!("scale-{n}-prometheus.log"));
    let prometheus = PrometheusProcess::start(binaries, &dir, &history, log_path)?;
    let _ = std::fs::remove_file(&history);
    let prometheus_secs = t2.elapsed().as_secs_f64();
    let setup = json!({
        "kueue": made, "series": series_count, "idle_units": idle_units, "history_mb": history_mb,
        "secs": { "crds": crds_secs, "kueue": kueue_secs, "prometheus": prometheus_secs },
    });
    log(format!("scale: {n} nodes: the readers in place: {setup}"));
    Ok(Readers { prometheus, setup })
}

/// `kubectl apply --server-side` of the CRDs at `path` (a file or a directory), then waits for them to be
/// Established.
fn apply_crds(kubeconfig: &Path, path: &Path) -> Res<()> {
    let kubectl = |args: &[&str]| -> Res<()> {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .arg("-f")
            .arg(path)
            .output()?;
        if !out.status.success() {
            return Err(format!(
                "kubectl {} -f {} failed ({}): {}",
                args.join(" "),
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )
            .into());
        }
        Ok(())
    };
    kubectl(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=gpuinv-bench",
    ])?;
    kubectl(&["wait", "--for=condition=Established", "--timeout=120s"])
}

/// Kueue's objects for a fleet of `n` nodes (its GKE blocks), `concurrency` creates in flight; how many of
/// each it made.
async fn kueue_objects(client: &Client, n: usize, concurrency: usize) -> Res<Value> {
    let blocks = (n / 5).div_ceil(RACK_NODES).div_ceil(BLOCK_RACKS).max(1);
    let mut objects: Vec<(&str, Option<String>, Value)> = Vec::new();
    for f in 0..FLAVORS {
        let labels =
            json!({ "cloud.google.com/gce-topology-block": format!("block-{}", f % blocks) });
        objects.push((
            "ResourceFlavor",
            None,
            json!({ "metadata": { "name": flavor(f) }, "spec": { "nodeLabels": labels } }),
        ));
    }
    let quota =
        |f: usize| json!({ "name": flavor(f), "resources": [{ "name": GPU, "nominalQuota": 64 }] });
    for q in 0..QUEUES {
        let spec = json!({
            "cohortName": format!("bench-org-{}", q % COHORTS),
            "namespaceSelector": {},
            "resourceGroups": [{ "coveredResources": [GPU], "flavors": [quota(q % FLAVORS), quota((q + 7) % FLAVORS)] }],
        });
        objects.push((
            "ClusterQueue",
            None,
            json!({ "metadata": { "name": format!("bench-team-{q}") }, "spec": spec }),
        ));
    }
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for q in 0..QUEUES {
        let ns = queue_namespace(q);
        let made = namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({ "metadata": { "name": ns } }))?,
            )
            .await;
        match made {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(format!("namespace {ns}: {e}").into()),
        }
        let spec = json!({ "clusterQueue": format!("bench-team-{q}") });
        objects.push((
            "LocalQueue",
            Some(ns),
            json!({ "metadata": { "name": "user" }, "spec": spec }),
        ));
    }
    for w in 0..WORKLOADS {
        let mut pod_set = json!({
            "name": "main",
            "count": 2 + w % 17,
            "template": { "spec": { "restartPolicy": "Never", "containers": [{
                "name": "train", "image": "registry.example.com/ml/train:v3.2",
                "resources": { "requests": { GPU: "4" }, "limits": { GPU: "4" } } }] } },
        });
        if w % 2 == 0 {
            pod_set["topologyRequest"] = json!({ "required": SUBBLOCK });
        }
        let spec = json!({ "queueName": "user", "podSets": [pod_set] });
        let name = format!("bench-job-{w:05}");
        objects.push((
            "Workload",
            Some(queue_namespace(w % QUEUES)),
            json!({ "metadata": { "name": name }, "spec": spec }),
        ));
    }
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for (kind, _, _) in &objects {
        *counts.entry(kind).or_default() += 1;
    }
    stream::iter(objects.into_iter().map(|(kind, ns, mut object)| {
        let client = client.clone();
        async move {
            object["apiVersion"] = json!(format!("{KUEUE_GROUP}/{KUEUE_VERSION}"));
            object["kind"] = json!(kind);
            let resource = ApiResource {
                group: KUEUE_GROUP.into(),
                version: KUEUE_VERSION.into(),
                api_version: format!("{KUEUE_GROUP}/{KUEUE_VERSION}"),
                kind: kind.into(),
                plural: format!("{}s", kind.to_lowercase()),
            };
            let api: Api<DynamicObject> = match &ns {
                Some(ns) => Api::namespaced_with(client, ns, &resource),
                None => Api::all_with(client, &resource),
            };
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let object: DynamicObject = serde_json::from_value(object)?;
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => Res::Ok(()),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                Err(e) => Err(format!(
                    "{kind} {}{name}: {e}",
                    ns.map(|n| n + "/").unwrap_or_default()
                )
                .into()),
            }
        }
    }))
    .buffer_unordered(concurrency.max(1))
    .try_collect::<Vec<()>>()
    .await?;
    Ok(json!(counts))
}

fn flavor(f: usize) -> String {
    format!("bench-gb200-{f}")
}

fn queue_namespace(q: usize) -> String {
    format!("bench-queue-{q}")
}

/// dcgm-exporter's series for every GPU of the fleet, a sample every [`STEP_SECS`] from `from` to `to` (unix
/// seconds); and how many held units are idle.
fn series(fleet: &FleetView<'_>, from: i64, to: i64) -> (Vec<Series>, usize) {
    let mut holders: HashMap<&str, Vec<&PodRec>> = HashMap::new();
    for p in fleet.pods.iter().filter(|p| p.gpus > 0) {
        if let Some(node) = &p.node {
            holders.entry(node.as_str()).or_default().push(p);
        }
    }
    let mut out = Vec::new();
    let mut held = 0usize;
    let mut idle = 0usize;
    let mut sample = |labels: DcgmLabels, metric_mig: bool, holder: bool| {
        let busy = !holder || {
            held += 1;
            !held.is_multiple_of(IDLE_EVERY)
        };
        idle += usize::from(!busy);
        let (series, value) = match (metric_mig, busy) {
            (true, busy) => (labels.gr_engine_active(), if busy { 0.62 } else { 0.0 }),
            (false, busy) => (labels.gpu_util(), if busy { 71.0 } else { 0.0 }),
        };
        out.push(with_samples(series, value, from, to));
    };
    for node in fleet.gpu_nodes {
        // Each holder takes the next units of the node, in the order of the fleet's pods.
        let units: Vec<Option<&PodRec>> = holders
            .get(node.name.as_str())
            .into_iter()
            .flatten()
            .flat_map(|p| std::iter::repeat_n(Some(*p), p.gpus as usize))
            .chain(std::iter::repeat(None))
            .take(node.allocatable as usize)
            .collect();
        let model = model_name(&node.product);
        let holder_labels = |labels: DcgmLabels, p: Option<&PodRec>| match p {
            Some(p) => labels.pod(&p.namespace, &p.name, "train"),
            None => labels,
        };
        if node.product.contains("-MIG-") {
            for (k, p) in units.iter().enumerate() {
                let gpu = (k as u64 / MIG_PER_GPU) as u32;
                let labels = dcgm_labels(&node.name, gpu)
                    .set("modelName", model)
                    .mig("1g.10gb", (k as u64 % MIG_PER_GPU) as u32 + 7);
                sample(holder_labels(labels, *p), true, p.is_some());
            }
        } else if node.product.ends_with("-SHARED") {
            // One T4 behind 8 replicas: one series, labelled with its first holder.
            let p = units.first().copied().flatten();
            let labels = dcgm_labels(&node.name, 0).set("modelName", model);
            sample(holder_labels(labels, p), false, p.is_some());
        } else {
            for (gpu, p) in units.iter().enumerate() {
                let labels = dcgm_labels(&node.name, gpu as u32).set("modelName", model);
                sample(holder_labels(labels, *p), false, p.is_some());
            }
        }
    }
    for (i, node) in fleet.truth.nodes.iter().enumerate() {
        for (d, claim) in fleet.truth.holder[i].iter().enumerate() {
            let labels = dcgm_labels(node, d as u32).set("modelName", "NVIDIA H100 80GB HBM3");
            let labels = match claim.map(|c| &fleet.truth.claims[c]) {
                Some(c) => labels.dra_claim(&c.namespace, &c.name, node, &format!("gpu-{d}")),
                None => labels,
            };
            sample(labels, false, claim.is_some());
        }
    }
    (out, idle)
}

/// `series` with `value` every [`STEP_SECS`] from `from` to `to`.
fn with_samples(mut series: Series, value: f64, from: i64, to: i64) -> Series {
    series.samples = (from..=to)
        .step_by(STEP_SECS as usize)
        .map(|t| (t, value))
        .collect();
    series
}

/// dcgm-exporter's `modelName` for a GFD product label.
fn model_name(product: &str) -> &'static str {
    match product {
        p if p.starts_with("NVIDIA-H200") => "NVIDIA H200",
        p if p.starts_with("NVIDIA-A100") => "NVIDIA A100-SXM4-80GB",
        p if p.starts_with("Tesla-T4") => "Tesla T4",
        _ => "NVIDIA H100 80GB HBM3",
    }
}

/// What the operator's outputs show of the readers after a run's start-up: the utilization state and the idle
/// units of the GpuInventory `inventory`, its topology levels, quota entries and workload issues, and whether
/// the ClusterProperty holds the summary. The runs with the readers must show them all (a reader that failed
/// quietly would make its run cheap, not good).
pub async fn seen(client: &Client, inventory: &str) -> Value {
    let inventories: Api<testkit::lib_api::GpuInventory> = Api::all(client.clone());
    let status = match inventories.get(inventory).await {
        Ok(inv) => serde_json::to_value(inv.status).unwrap_or(Value::Null),
        Err(e) => return json!({ "error": format!("GpuInventory {inventory}: {e}") }),
    };
    let idle: f64 = status["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|ns| ns["idle"].as_object().into_iter().flatten())
        .filter_map(|(_, units)| units.as_f64())
        .sum();
    let resource = testkit::lib_api::cluster_property_resource("v1beta1");
    let properties: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let property = properties
        .get_opt(testkit::lib_api::DEFAULT_CLUSTER_PROPERTY)
        .await
        .ok()
        .flatten()
        .and_then(|p| p.data["spec"]["value"].as_str().map(str::len));
    json!({
        "utilization": status["utilization"]["state"],
        "idle_units": idle,
        "topology_levels": status["topology"].as_array().map_or(0, Vec::len),
        "quotas": status["quotas"].as_array().map_or(0, Vec::len),
        "workload_issues": status["workloadIssueCount"],
        "cluster_property_chars": property,
    })
}

/// Why a run with the readers did not show them all (`seen`'s figures), if it did not.
pub fn missing(seen: &Value) -> Option<String> {
    let mut missing = Vec::new();
    if seen["utilization"] != "Current" {
        missing.push(format!("utilization {}", seen["utilization"]));
    }
    for key in [
        "idle_units",
        "topology_levels",
        "quotas",
        "cluster_property_chars",
    ] {
        if seen[key].as_f64().is_none_or(|v| v <= 0.0) {
            missing.push(format!("{key} {}", seen[key]));
        }
    }
    (!missing.is_empty()).then(|| {
        format!(
            "the readers not seen in the outputs: {}",
            missing.join(", ")
        )
    })
}
