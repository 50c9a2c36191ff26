//! One program's run in the allocation scenario (allocation.rs runs each of BENCH_ALLOC_PROGRAMS in turn on
//! the same fleet): start-up (convergence of the status, the ConfigMap and, for the operator, every GpuNode;
//! peak RSS; requests), a quiet window (its writes, 0 expected), the timed single GPU-pod changes (to the
//! status, the ConfigMap and the node's GpuNode), churn (writes per resource and per object, the API
//! server's time per write, CPU).

use std::time::Duration;

use jiff::Timestamp;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::{Value, json};
use testkit::audit::audit_offset;
use testkit::lib_api::GpuInventory;
use testkit::settings::bench::{Program, Settings};

use crate::alloc_changes::{Pods, churn, latency_run};
use crate::alloc_measure::{latency_json, server_ms, summary_check, writes};
use crate::alloc_observe::{AllocObs, AllocObserver};
use crate::alloc_truth::Expected;
use crate::program_run::{self, CHANGE_WAIT, INVENTORY, Place, ProgramRun, Sent, Started, merge};
use crate::{Res, log};

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

impl ProgramRun<'_, AllocObs> {
    /// Start-up: convergence, RSS, the requests until 3 s later, the status's summary fields, the sizes.
    async fn alloc_startup(&mut self, started: &Started) -> Res<Value> {
        let up = self
            .startup(started.at, started.wall, started.audit)
            .await?;
        log(format!(
            "allocation: {} converged in {:.2}s, peak RSS {:.1} MiB",
            self.name(),
            up.converge_secs,
            up.rss_mib
        ));
        let summary = {
            let obs = self.observer.obs.lock().unwrap();
            let status = obs.status.as_ref().ok_or("converged without a status")?;
            summary_check(&obs.expected, status)
        };
        Ok(json!({
            "sizes": self.sizes().await?,
            "converge_secs": up.converge_secs,
            "rss_converged_mib": up.rss_mib,
            "startup_requests": up.requests,
            "summary": summary,
        }))
    }

    /// The JSON size of the inventory (whole, and its status) and of the ConfigMap, as the server holds them.
    async fn sizes(&self) -> Res<Value> {
        let resource = ApiResource::erase::<GpuInventory>(&());
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let inventory = api.get(INVENTORY).await?;
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), &self.namespace);
        let cm = cms.get("gpu-node-status").await?;
        Ok(json!({
            "inventory_bytes": serde_json::to_vec(&inventory)?.len(),
            "status_bytes": serde_json::to_vec(&inventory.data["status"])?.len(),
            "configmap_bytes": serde_json::to_vec(&cm)?.len(),
        }))
    }

    /// The timed single GPU-pod changes.
    async fn latency(&mut self, pods: &mut Pods) -> Res<Value> {
        let n = self.s.alloc.changes;
        log(format!(
            "allocation: {}: {n} single GPU-pod changes",
            self.name()
        ));
        let (offset, from) = (audit_offset(&self.s.audit_log), Timestamp::now());
        let lat = latency_run(self.client, pods, &mut self.observer, n, CHANGE_WAIT).await?;
        let to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(2)).await;
        let (status_w, cm_w) = writes(self.s, offset, from, to);
        let latency = latency_json(&lat.timings, self.program.writes_gpunodes());
        log(format!(
            "allocation: {}: latency to status p50/p99 {:.0}/{:.0} ms, to ConfigMap {:.0}/{:.0} ms, to GpuNode {:.0}/{:.0} ms, {} lost",
            self.name(),
            num(&latency["status"]["p50"]),
            num(&latency["status"]["p99"]),
            num(&latency["configmap"]["p50"]),
            num(&latency["configmap"]["p99"]),
            num(&latency["gpunode"]["p50"]),
            num(&latency["gpunode"]["p99"]),
            lat.lost
        ));
        self.settle("the latency changes").await;
        Ok(json!({
            "latency_ms": latency,
            "latency_server_ms": server_ms(&status_w, &cm_w),
            "latency_changes": {
                "binds": lat.binds, "creates": lat.creates, "deletes": lat.deletes, "lost": lat.lost,
            },
        }))
    }

    /// Pod churn at BENCH_ALLOC_CHURN_RATE for BENCH_ALLOC_CHURN_SECS, then convergence.
    async fn alloc_churn(&mut self) -> Res<Value> {
        let a = &self.s.alloc;
        log(format!(
            "allocation: {}: churn {}/s for {}s",
            self.name(),
            a.churn_rate,
            a.churn_secs
        ));
        self.churn(async |run| {
            let obs = &run.observer.obs;
            let sent = churn(run.client, obs, a.churn_rate, a.churn_secs, run.name()).await?;
            Ok(Sent {
                changes: sent.changes,
                failed: sent.failed,
                secs: sent.secs,
                counts: json!({ "gpu_changes": sent.gpu_changes }),
            })
        })
        .await
    }
}

/// `program` on the fleet: start-up, quiet, latency, churn. `expected` is the fleet as it is now; it comes
/// back as the program's changes left it (for the next program), with the result.
pub async fn run_program(
    client: &Client,
    s: &Settings,
    program: Program,
    pods: &mut Pods,
    expected: Expected,
    ticks: f64,
) -> (Res<Value>, Expected) {
    let place = Place {
        scenario: "allocation",
        namespace_prefix: "bench-alloc",
    };
    let gpunodes = program.writes_gpunodes();
    let watch = |namespace: &str, expected| {
        AllocObserver::start(client, INVENTORY, namespace, expected, gpunodes)
    };
    let expected_of = |obs: &AllocObs| obs.expected.clone();
    let phases = async |run: &mut ProgramRun<'_, AllocObs>, started: Started| {
        let mut out = run.alloc_startup(&started).await?;
        out["quiet"] = run.quiet(s.alloc.quiet_secs).await;
        merge(&mut out, run.latency(pods).await?);
        out["churn"] = run.alloc_churn().await?;
        Ok(out)
    };
    program_run::run_program(
        client,
        s,
        place,
        program,
        ticks,
        expected,
        watch,
        expected_of,
        phases,
    )
    .await
}
