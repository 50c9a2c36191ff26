//! `make bench` driver (a `harness = false` bench target: `cargo build --release --bench bench-driver`; run by
//! hack/bench.sh).
//!
//! For every node count N and for each of the two programs — the operator (`gpu-inventory-operator run`) and
//! the article-style baseline (benches/baseline_operator.rs) — in the same run, on the same control plane:
//!
//! 1. creates N nodes (1 in 5 a GPU node cloned from the fixtures in tests/fixtures, some NotReady; the rest
//!    CPU nodes), 32 creates in flight, before the program starts; a fresh namespace for the ConfigMap;
//! 2. starts the program and measures the time until converged: the inventory status totals and entries and
//!    the ConfigMap's keys all match what the scanner says about the created nodes (seen through watches);
//! 3. peak RSS (VmHWM) after convergence;
//! 4. API requests per verb and resource from the audit log (by User-Agent prefix) at start-up and in a quiet
//!    period (BENCH_QUIET_SECS), with CPU seconds (utime+stime) in the quiet period;
//! 5. reaction latency over BENCH_CHANGES single-node changes (alternating a GPU label change and a Ready
//!    flip through the status subresource): from the write's response to the change visible in the inventory
//!    status AND in the ConfigMap, both observed by watches;
//! 6. a churn period (BENCH_CHURN_RATE label changes per second for BENCH_CHURN_SECS, then until converged):
//!    CPU seconds and the writes (status / ConfigMap patches) in it;
//! 7. BENCH_BURST_CHANGES (1,000) label changes as fast as possible, then peak RSS again;
//!
//! then stops the program and deletes the nodes and the namespace. Writes results JSON (BENCH_OUT) and a
//! table (BENCH_TABLE) with ratios operator / baseline.
//!
//! Environment (hack/bench.sh sets the paths): BENCH_KUBECONFIG, BENCH_AUDIT_LOG, BENCH_OPERATOR_BIN,
//! BENCH_BASELINE_BIN, BENCH_FIXTURES (tests/fixtures), BENCH_OUT, BENCH_TABLE, BENCH_LOG_DIR, BENCH_NODES
//! ("1000 5000"), BENCH_QUIET_SECS (300), BENCH_CHURN_SECS (60), BENCH_CHURN_RATE (20), BENCH_CHANGES (200),
//! BENCH_BURST_CHANGES (1000), BENCH_CHANGE_GAP_MS (500: the longest wait before the next latency change when
//! the previous one is not visible yet), BENCH_NODE_IMAGES (20 container images per node, as kubelets report),
//! BENCH_SETTLE_SECS (120: the longest wait for convergence), BENCH_PROGRAMS ("operator baseline").
//!
//! Scenarios (BENCH_SCENARIOS, default "steady heartbeat"; hack/bench.sh runs each on its own cluster): `steady`
//! is the above; `heartbeat` (heartbeat.rs) puts BENCH_HEARTBEAT_NODES (5000) KWOK nodes, every
//! BENCH_HEARTBEAT_GPU_EVERY-th (5) a GPU node, on a cluster with KWOK and the controllers and measures each
//! program for BENCH_HEARTBEAT_SECS (300) while only the heartbeats change anything: its writes (should be 0),
//! API requests, CPU, RSS, and the rate KWOK reached; `allocation` (allocation.rs) puts BENCH_ALLOC_NODES
//! (5000) nodes and BENCH_ALLOC_PODS (50000) bound pods, BENCH_ALLOC_GPU_PODS (10000) of them requesting
//! nvidia.com/gpu, on the etcd + kube-apiserver cluster and measures the operator's allocation accounting
//! (convergence, RSS, pod change -> status latency, churn writes and CPU) and compares a one-shot `scan`
//! with kubectl-view-allocations; `flood` (flood.rs) times the operator's change -> status latency while another
//! client hammers the API server, with and without API Priority and Fairness.
//! with kubectl-view-allocations; `dra` (dra.rs) puts BENCH_DRA_NODES (5000) nodes, each with a ResourceSlice
//! of BENCH_DRA_GPUS_PER_NODE (8) whole GPUs, and BENCH_DRA_CLAIMS (10000) allocated ResourceClaims on the
//! etcd + kube-apiserver cluster and measures the operator's DRA accounting (convergence, RSS, claim change
//! -> status latency, churn writes and CPU) and a one-shot `scan`; `scale` (scale.rs, issue #26) puts a
//! 65,000-node cluster's make-up, scaled to each count of BENCH_SCALE_NODES (1000 5000 20000 65000), on the
//! etcd + kube-apiserver cluster (device-plugin GPU nodes of five kinds, tainted and cordoned ones, DRA nodes,
//! bound pods, pending GPU pods) and runs the operator BENCH_SCALE_RUNS (2) times on it: convergence, peak RSS
//! per phase, a quiet window, latency under churn, a forced relist of every watch, `scan` against
//! kubectl-view-allocations; medians per count in a table column each and target/bench/scale.png. BENCH_OUT
//! keeps the sections of earlier driver runs.
//!
//! The allocation and dra scenarios run each program of BENCH_ALLOC_PROGRAMS / BENCH_DRA_PROGRAMS (default
//! "operator"; "previous operator" adds BENCH_PREVIOUS_BIN, an earlier revision's operator hack/bench.sh
//! builds from BENCH_PREVIOUS_REV, labelled BENCH_PREVIOUS_LABEL) one after the other on the same fleet, with
//! a quiet window each (BENCH_ALLOC_QUIET_SECS, BENCH_DRA_QUIET_SECS: 60), and report them side by side.
//!
//! Modules: `program` (the processes under test), `observe` (the watches that decide convergence), `changes`
//! (the node writes), `measure` (CPU, RSS, percentiles, KWOK's and the node lifecycle controller's audit
//! events), `audit_writes` (a program's writes per resource and per object from the audit log),
//! `gpunode_watch` (the GpuNodes: watch, delete, detail check), `scenario` (one run's phases), `run_results`
//! (what they measured), `object_watch` (one named object's watch), `heartbeat` (the heartbeat scenario),
//! `report` (JSON and table), `table` (cells, rows, program columns side by side); for the allocation
//! scenario `alloc_fleet` (its nodes and pods), `alloc_truth` (the expected allocation), `alloc_observe` (its
//! watches), `alloc_changes` (pod changes), `peers` (scan against kubectl-view-allocations), `allocation`
//! (its phases, the programs in turn), `alloc_run` (one program's run, on `program_run`: the run's skeleton
//! shared with `dra_run`), `alloc_measure` (its figures), `alloc_report` (its table); for the DRA scenario
//! `dra_fleet` (nodes, slices, claims), `dra_truth` (which claim holds which device), `dra_observe` (the
//! status and GpuNode watches), `dra_changes` (claim changes), `dra` (its phases, the programs in turn),
//! `dra_run` (one program's run), `dra_report` (its table); for the scale scenario `scale_fleet` (its fleet's
//! kinds and slots, on the allocation and DRA fleets' code), `scale_observe` (both truths' watches at once),
//! `scale_run` (one run's phases), `scale_relist` (the forced relist), `scale` (its sizes and runs),
//! `scale_report` (medians and its table), `scale_plot` (the PNG).
//!
//! From the test kit (`testkit/`, shared with the soak and the integration tests): `cluster` (nodes,
//! namespace, inventory), `nodes` (the Ready condition), `pods` (pod objects and writes), `dra_objects` (the
//! DRA objects), `audit` (API requests by verb and resource from the audit log), `lib_api` (every import from
//! the operator library), `settings::bench` (the knobs, above: each a BENCH_* variable and an option;
//! `--help` lists them with their defaults).

mod alloc_changes;
mod alloc_fleet;
mod alloc_measure;
mod alloc_observe;
mod alloc_report;
mod alloc_run;
mod alloc_truth;
mod allocation;
mod audit_writes;
mod changes;
mod dra;
mod dra_changes;
mod dra_fleet;
mod dra_observe;
mod dra_report;
mod dra_run;
mod dra_truth;
mod flood;
mod gpunode_watch;
mod heartbeat;
mod measure;
mod object_watch;
mod observe;
mod peers;
mod program;
mod program_run;
mod report;
mod run_results;
mod scale;
mod scale_fit;
mod scale_fleet;
mod scale_observe;
mod scale_plot;
mod scale_readers;
mod scale_relist;
mod scale_report;
mod scale_run;
mod scenario;
mod table;

use std::time::Duration;

use jiff::Timestamp;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use testkit::settings::bench::{Scenario, Settings};
use testkit::{cluster, lib_api};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

const DRIVER_UA: &str = "gpu-inventory-bench-driver/0.1.0";

fn log(msg: impl AsRef<str>) {
    eprintln!(
        "[bench {}] {}",
        Timestamp::now().strftime("%H:%M:%S"),
        msg.as_ref()
    );
}

#[tokio::main]
async fn main() -> Res<()> {
    // A plain `cargo bench` runs every bench target with `--bench`; this one needs the cluster hack/bench.sh sets up.
    if std::env::args().skip(1).any(|a| a == "--bench") {
        eprintln!(
            "bench-driver: run by hack/bench.sh (`make bench`), not by `cargo bench`; skipping"
        );
        return Ok(());
    }
    let s: Settings = testkit::settings::parse();
    let client = client(&s).await?;
    let templates = cluster::load_templates(&s.fixtures)?;
    log(format!(
        "{} GPU and {} CPU node templates from {}",
        templates.gpu.len(),
        templates.cpu.len(),
        s.fixtures.display()
    ));
    // The CRD is installed once, up front, so neither program pays for its establishment at start-up.
    lib_api::install_crd(&client, Duration::from_secs(60)).await?;
    let ticks = measure::clock_ticks();
    // hack/bench.sh runs one scenario per driver run, each on its own cluster, into the same BENCH_OUT: a
    // later run keeps the sections of the earlier ones (bench.sh deletes BENCH_OUT before the first).
    let mut doc = report::load(&s.out);
    let mut failed = 0;
    if s.scenarios.contains(&Scenario::Steady) {
        let started = Timestamp::now();
        let mut results = Vec::new();
        let mut failures = Vec::new();
        for &n in &s.nodes {
            for &program in &s.programs {
                match scenario::bench_one(&client, &s, &templates, n, program, ticks).await {
                    Ok(r) => results.push(r),
                    Err(e) => {
                        log(format!("FAILED {} at {n} nodes: {e}", program.name()));
                        failures.push(
                            json!({ "program": program.name(), "nodes": n, "error": e.to_string() }),
                        );
                    }
                }
            }
        }
        failed += failures.len();
        report::set_steady(&mut doc, &s, started, &results, &failures);
    }
    if s.scenarios.contains(&Scenario::Heartbeat) {
        let started = Timestamp::now();
        let mut section = match heartbeat::bench(&client, &s, &templates, ticks).await {
            Ok((section, f)) => {
                failed += f;
                section
            }
            Err(e) => {
                log(format!("FAILED heartbeat: {e}"));
                failed += 1;
                json!({ "failures": [{ "error": e.to_string() }] })
            }
        };
        section["started"] = json!(started.to_string());
        section["finished"] = json!(Timestamp::now().to_string());
        doc["heartbeat"] = section;
    }
    if s.scenarios.contains(&Scenario::Allocation) {
        let started = Timestamp::now();
        let mut section = match allocation::bench(&client, &s, &templates, ticks).await {
            Ok((section, f)) => {
                failed += f;
                section
            }
            Err(e) => {
                log(format!("FAILED allocation: {e}"));
                failed += 1;
                json!({ "failures": [{ "error": e.to_string() }] })
            }
        };
        section["started"] = json!(started.to_string());
        section["finished"] = json!(Timestamp::now().to_string());
        doc["allocation"] = section;
    }
    if s.scenarios.contains(&Scenario::Dra) {
        let started = Timestamp::now();
        let mut section = match dra::bench(&client, &s, &templates, ticks).await {
            Ok((section, f)) => {
                failed += f;
                section
            }
            Err(e) => {
                log(format!("FAILED dra: {e}"));
                failed += 1;
                json!({ "failures": [{ "error": e.to_string() }] })
            }
        };
        section["started"] = json!(started.to_string());
        section["finished"] = json!(Timestamp::now().to_string());
        doc["dra"] = section;
    }
    if s.scenarios.contains(&Scenario::Flood) {
        let started = Timestamp::now();
        match flood::bench(&client, &s, &templates).await {
            Ok((key, mut run)) => {
                run["started"] = json!(started.to_string());
                run["finished"] = json!(Timestamp::now().to_string());
                if !doc["flood"].is_object() {
                    doc["flood"] = json!({});
                }
                doc["flood"][key] = run;
            }
            Err(e) => {
                log(format!("FAILED flood: {e}"));
                failed += 1;
            }
        }
    }
    if s.scenarios.contains(&Scenario::Scale) {
        failed += scale::bench(&client, &s, &templates, ticks, &mut doc).await;
    }
    report::set_machine(&mut doc);
    if let Some(dir) = s.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&s.out, serde_json::to_string_pretty(&doc)?)?;
    let mut table = report::table(&doc);
    alloc_report::append(&mut table, &doc);
    dra_report::append(&mut table, &doc);
    flood::append_table(&mut table, &doc);
    scale_report::append(&mut table, &doc);
    std::fs::write(&s.table, table)?;
    log(format!(
        "results: {}, table: {}",
        s.out.display(),
        s.table.display()
    ));
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} run(s) failed").into())
    }
}

/// A client for BENCH_KUBECONFIG whose requests carry the driver's User-Agent (the audit counts skip it).
async fn client(s: &Settings) -> Res<Client> {
    let mut config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&s.kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(DRIVER_UA),
    ));
    Ok(Client::try_from(config)?)
}
