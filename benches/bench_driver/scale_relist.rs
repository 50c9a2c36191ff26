//! The scale scenario's forced relist: every watch of the operator told 410 Gone at once, as after a long API
//! server outage with etcd compacted meanwhile. The cluster's script (BENCH_SCALE_CLUSTER_SCRIPT,
//! hack/local-cluster.sh, for the cluster of LOCAL_CLUSTER_STATE_DIR) stops kube-apiserver, writes a revision
//! no watch has seen and compacts etcd up to it (`compact-etcd`), and starts kube-apiserver again: its watch
//! cache starts at the new revision, so a watch that resumes from what it saw before is too old (410) and
//! relists. The operator's `gpu_inventory_watch_relists_total{watch="..."}` (its /metrics) says which watches
//! did; the writes it sent meanwhile (the fleet did not change: 0 expected) come from the audit log, and the
//! outputs whose resourceVersion moved from a list before and after.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use testkit::lib_api::GpuInventory;
use testkit::settings::bench::Settings;

use crate::{Res, gpunode_watch, log};

/// The operator's metrics endpoint, as its log names it (it listens on a free port).
pub fn metrics_addr(log_path: &std::path::Path) -> Res<String> {
    let log = std::fs::read_to_string(log_path)?;
    testkit::http::addr_in_log(&log)
        .ok_or_else(|| format!("no metrics address in {}", log_path.display()).into())
}

/// The operator's /metrics at `addr`.
pub async fn metrics(addr: &str) -> Res<String> {
    testkit::http::get_ok(addr, "/metrics", Duration::from_secs(10)).await
}

/// Runs the cluster script with `verb`, its output going to the driver's stderr.
fn cluster_script(s: &Settings, verb: &str) -> Res<()> {
    let script = &s.scale.cluster_script;
    let status = Command::new(script)
        .arg(verb)
        .status()
        .map_err(|e| format!("{} {verb}: {e}", script.display()))?;
    match status.success() {
        true => Ok(()),
        false => Err(format!("{} {verb}: {status}", script.display()).into()),
    }
}

/// Stops kube-apiserver, compacts etcd past every revision a watch saw, starts kube-apiserver again. Returns
/// the seconds it was away, from the stop to its readiness.
pub async fn restart_apiserver(s: &Settings) -> Res<f64> {
    let t0 = Instant::now();
    tokio::task::block_in_place(|| {
        cluster_script(s, "stop-apiserver")?;
        cluster_script(s, "compact-etcd")?;
        cluster_script(s, "start-apiserver")
    })?;
    Ok(t0.elapsed().as_secs_f64())
}

/// The resourceVersion of each output: every GpuNode, the inventory and the ConfigMap in `namespace`.
pub async fn versions(
    client: &Client,
    inventory: &str,
    namespace: &str,
) -> Res<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut lp = ListParams::default().limit(500);
    let gpunodes = gpunode_watch::api(client);
    loop {
        let page = gpunodes.list_metadata(&lp).await?;
        for o in &page.items {
            let rv = o.resource_version().unwrap_or_default();
            out.insert(format!("gpunodes/{}", o.name_any()), rv);
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => break,
        }
    }
    let resource = ApiResource::erase::<GpuInventory>(&());
    let inventories: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    if let Some(i) = inventories.get_opt(inventory).await? {
        out.insert(
            format!("gpuinventories/{inventory}"),
            i.resource_version().unwrap_or_default(),
        );
    }
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    if let Some(cm) = cms.get_opt("gpu-node-status").await? {
        let rv = cm.resource_version().unwrap_or_default();
        out.insert(format!("configmaps/{namespace}/gpu-node-status"), rv);
    }
    Ok(out)
}

/// The outputs whose resourceVersion differs between `before` and `after` (or that came or went), by
/// resource: what the operator's writes in the relist changed.
pub fn changed(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Value {
    let mut by_resource: BTreeMap<&str, u64> = BTreeMap::new();
    let mut names = Vec::new();
    for key in before
        .keys()
        .chain(after.keys().filter(|k| !before.contains_key(*k)))
    {
        if before.get(key) != after.get(key) {
            let resource = key.split('/').next().unwrap_or("?");
            *by_resource.entry(resource).or_default() += 1;
            if names.len() < 10 {
                names.push(key.clone());
            }
        }
    }
    json!({ "objects": by_resource.values().sum::<u64>(), "by_resource": by_resource, "first": names })
}

/// Polls the operator's relist counts until every watch of `before` counts one more (or `timeout` passes):
/// the counts then (the last read on a timeout), and when the last watch got there.
pub async fn wait_relisted(
    addr: &str,
    before: &BTreeMap<String, f64>,
    timeout: Duration,
) -> (BTreeMap<String, f64>, Option<Instant>) {
    let deadline = Instant::now() + timeout;
    let mut last = BTreeMap::new();
    loop {
        match metrics(addr).await {
            Ok(text) => last = testkit::http::watch_relists(&text),
            Err(e) if Instant::now() > deadline => log(format!("scale: relist: {e}")),
            Err(_) => {}
        }
        let all = !before.is_empty()
            && before
                .iter()
                .all(|(w, n)| last.get(w).is_some_and(|m| *m >= n + 1.0));
        if all {
            return (last, Some(Instant::now()));
        }
        if Instant::now() > deadline {
            return (last, None);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
