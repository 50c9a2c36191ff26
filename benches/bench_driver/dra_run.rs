//! One program's run in the DRA scenario (dra.rs runs each of BENCH_DRA_PROGRAMS in turn on the same fleet):
//! start-up (convergence of the status and, for the operator, every GpuNode; peak RSS; requests), every
//! node's detail readable (one GpuNode per node with all its devices; `omittedNodes` of the status and of
//! the ConfigMap summary), a quiet window (its writes, 0 expected), the timed claim changes (to the status
//! and to the node's GpuNode), churn (writes per resource and per object, the API server's time per write,
//! CPU).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, Client};
use serde_json::{Value, json};
use testkit::audit::audit_offset;
use testkit::settings::bench::{Program, Settings};

use crate::alloc_measure::{ms_stats, server_ms, writes};
use crate::alloc_observe::int;
use crate::dra_changes::{churn, latency_run};
use crate::dra_observe::{DraObs, DraObserver};
use crate::dra_truth::DraTruth;
use crate::gpunode_watch;
use crate::program_run::{self, CHANGE_WAIT, INVENTORY, Place, ProgramRun, Sent, Started, merge};
use crate::{Res, log};

fn ms(durations: &[Duration]) -> Vec<f64> {
    durations.iter().map(|t| t.as_secs_f64() * 1000.0).collect()
}

impl ProgramRun<'_, DraObs> {
    /// Start-up: convergence, RSS, the requests until 3 s later, the node entries the status lists.
    async fn dra_startup(&mut self, started: &Started) -> Res<Value> {
        let up = self
            .startup(started.at, started.wall, started.audit)
            .await?;
        let (listed, omitted, updates) = {
            let obs = self.observer.obs.lock().unwrap();
            let status = obs.status.as_ref().ok_or("converged without a status")?;
            (status.nodes.len(), status.omitted, obs.updates)
        };
        log(format!(
            "dra: {} converged in {:.2}s ({updates} status versions seen), peak RSS {:.1} MiB; {listed} node entries, {omitted} omitted",
            self.name(),
            up.converge_secs,
            up.rss_mib
        ));
        Ok(json!({
            "converge_secs": up.converge_secs,
            "rss_converged_mib": up.rss_mib,
            "nodes_listed": listed, "nodes_omitted": omitted,
            "startup_requests": up.requests,
        }))
    }

    /// Every node's detail readable: the GpuNodes (one per DRA node, each with all its devices) and what
    /// the status and the ConfigMap summary leave out.
    async fn detail(&self) -> Res<Value> {
        let omitted = {
            let obs = self.observer.obs.lock().unwrap();
            obs.status.as_ref().map(|s| s.omitted)
        };
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let summary: Value = cms
            .get("gpu-node-status")
            .await?
            .data
            .and_then(|d| d.get("_summary").cloned())
            .and_then(|v| serde_json::from_str(&v).ok())
            .unwrap_or(Value::Null);
        let gpunodes = if self.program.writes_gpunodes() {
            let nodes = self.observer.obs.lock().unwrap().truth.nodes.clone();
            gpunode_watch::detail_check(self.client, &nodes, self.s.dra.gpus_per_node).await?
        } else {
            json!("n/a")
        };
        let detail = json!({
            "status_omitted_nodes": omitted,
            "configmap_omitted_nodes": if summary.is_object() { json!(int(&summary["omittedNodes"]).unwrap_or(0)) } else { Value::Null },
            "configmap_truncated": summary["truncated"],
            "gpunodes": gpunodes,
        });
        log(format!("dra: {}: detail {detail}", self.name()));
        Ok(detail)
    }

    /// The timed single claim changes.
    async fn latency(&mut self) -> Res<Value> {
        let n = self.s.dra.changes;
        log(format!("dra: {}: {n} single claim changes", self.name()));
        let listed = self.observer.obs.lock().unwrap().listed_nodes();
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let run = latency_run(self.client, &mut self.observer, &listed, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = ms_stats(ms(&run.timings));
        let gpunode = match self.program.writes_gpunodes() {
            true => ms_stats(ms(&run.gpunode_timings)),
            false => json!("n/a"),
        };
        let p = |v: &Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        log(format!(
            "dra: {}: claim change -> status p50/p99 {:.0}/{:.0} ms, -> GpuNode {:.0}/{:.0} ms, {} lost",
            self.name(),
            p(&latency, "p50"),
            p(&latency, "p99"),
            p(&gpunode, "p50"),
            p(&gpunode, "p99"),
            run.lost
        ));
        self.settle("the latency changes").await;
        Ok(json!({
            "latency_ms": latency,
            "latency_gpunode_ms": gpunode,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": {
                "allocations": run.allocations, "deallocations": run.deallocations, "lost": run.lost,
            },
        }))
    }

    /// Claim churn at BENCH_DRA_CHURN_RATE for BENCH_DRA_CHURN_SECS, then convergence.
    async fn dra_churn(&mut self) -> Res<Value> {
        let d = &self.s.dra;
        log(format!(
            "dra: {}: churn {} claim changes/s for {}s",
            self.name(),
            d.churn_rate,
            d.churn_secs
        ));
        self.churn(async |run| {
            let sent = churn(run.client, &run.observer.obs, d.churn_rate, d.churn_secs).await?;
            Ok(Sent {
                changes: sent.changes,
                failed: sent.failed,
                secs: sent.secs,
                counts: json!({ "allocations": sent.allocations }),
            })
        })
        .await
    }
}

/// `program` on the fleet: start-up, detail, quiet, latency, churn. `truth` is the fleet as it is now; it
/// comes back as the program's changes left it (for the next program), with the result.
pub async fn run_program(
    client: &Client,
    s: &Settings,
    program: Program,
    truth: DraTruth,
    ticks: f64,
) -> (Res<Value>, DraTruth) {
    // Not bench-dra-N: those hold the claims.
    let place = Place {
        scenario: "dra",
        namespace_prefix: "bench-dra-out",
    };
    let gpunodes = program.writes_gpunodes();
    let watch = |_: &str, truth| DraObserver::start(client, INVENTORY, truth, gpunodes);
    let truth_of = |obs: &DraObs| obs.truth.clone();
    let phases = async |run: &mut ProgramRun<'_, DraObs>, started: Started| {
        let mut out = run.dra_startup(&started).await?;
        out["detail"] = run.detail().await?;
        out["quiet"] = run.quiet(s.dra.quiet_secs).await;
        merge(&mut out, run.latency().await?);
        out["churn"] = run.dra_churn().await?;
        Ok(out)
    };
    program_run::run_program(
        client, s, place, program, ticks, truth, watch, truth_of, phases,
    )
    .await
}
