//! The `flood` scenario (issue #16, item 6): the operator's change -> status latency while another client
//! hammers the API server, against the same without the flood; hack/bench.sh runs it once with API Priority
//! and Fairness on (its default configuration) and once with it off (the local cluster's default).
//!
//! Both the operator and the flooder are service accounts, as in a cluster (impersonated with their groups;
//! bound to `cluster-admin` by RBAC only): APF's `service-accounts` FlowSchema puts both in the `workload-low`
//! priority level, as two flows of it — the noisy-neighbour controller case. The driver's own requests (the
//! changes and the polling that times them) are `system:masters`, exempt, so they do not queue behind the
//! flood. The flood: BENCH_FLOOD_TASKS loops of LIST pods, LIST nodes (the bench nodes with their images) and a
//! ConfigMap apply. Knobs: BENCH_FLOOD_NODES (500), BENCH_FLOOD_TASKS (64), BENCH_FLOOD_CHANGES (40),
//! BENCH_FLOOD_APF (1 or 0: what the cluster runs with, set by hack/bench.sh; recorded in the report).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};
use testkit::cluster::{self, Templates};
use testkit::lib_api::GpuInventory;
use testkit::settings::bench::Settings;
use tokio::sync::watch;

use crate::measure::percentile;
use crate::program::stop_program;
use crate::{Res, log};

const NAMESPACE: &str = "bench-flood";
const INVENTORY: &str = "bench-flood";
/// Service accounts (the namespaces need not exist: only the names matter to RBAC and APF).
const OPERATOR_USER: &str = "system:serviceaccount:gpu-inventory-system:gpu-inventory-operator";
const FLOODER_USER: &str = "system:serviceaccount:bench-flooder:flooder";
/// The longest a change may take to show before it counts as lost.
const CHANGE_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the scenario; the section for BENCH_OUT under `flood.apf_on` / `flood.apf_off`, and failures.
pub async fn bench(client: &Client, s: &Settings, templates: &Templates) -> Res<(String, Value)> {
    let (nodes, tasks, changes, apf) = (s.flood.nodes, s.flood.tasks, s.flood.changes, s.flood.apf);
    cluster::clean_slate(client, NAMESPACE, INVENTORY).await?;
    let created = cluster::create_nodes(client, templates, nodes, s.node_images).await?;
    log(format!("flood: {nodes} nodes created in {created:?}"));
    for user in [OPERATOR_USER, FLOODER_USER] {
        bind_cluster_admin(client, user).await?;
    }
    let mut operator = spawn_operator(s, &impersonating(s, OPERATOR_USER)?)?;
    let gpu = cluster::list_gpu_nodes(client).await?;
    let names: Vec<String> = gpu.nodes.keys().cloned().collect();
    let expected = names.len() as u32;
    let converged = wait_status(client, Duration::from_secs(s.settle.as_secs()), |st| {
        st.total_gpu_nodes == expected
    })
    .await;
    if !converged {
        stop_program(&mut operator);
        return Err(format!("flood: the operator did not converge on {expected} GPU nodes").into());
    }
    let quiet = latencies(client, &names, changes, "quiet").await?;

    let flood_client = impersonated_client(s, FLOODER_USER).await?;
    let (stop, stopped) = watch::channel(false);
    let flooding = tokio::spawn(flood(flood_client, tasks, stopped));
    tokio::time::sleep(Duration::from_secs(5)).await;
    let flood_started = Instant::now();
    let loaded = latencies(client, &names, changes, "flood").await?;
    let flood_secs = flood_started.elapsed().as_secs_f64() + 5.0;
    stop.send_replace(true);
    let (requests, throttled) = flooding.await?;
    stop_program(&mut operator);
    cluster::tear_down(client, NAMESPACE, INVENTORY).await?;

    let summary = |ms: &[f64]| {
        json!({ "median_ms": percentile(ms, 50.0), "p90_ms": percentile(ms, 90.0),
                "max_ms": ms.last().copied().unwrap_or(f64::NAN), "changes": ms.len() })
    };
    let key = if apf { "apf_on" } else { "apf_off" };
    log(format!(
        "flood ({key}): quiet median {:.0} ms, flood median {:.0} ms; flood {requests} requests ({:.0}/s), {throttled} refused 429",
        percentile(&quiet, 50.0),
        percentile(&loaded, 50.0),
        requests as f64 / flood_secs
    ));
    Ok((
        key.to_owned(),
        json!({ "apf": apf, "nodes": nodes, "gpu_nodes": expected, "flood_tasks": tasks,
            "quiet": summary(&quiet), "flood": summary(&loaded),
            "flood_requests": requests, "flood_requests_per_sec": requests as f64 / flood_secs,
            "flood_throttled_429": throttled }),
    ))
}

/// `changes` GPU-product label changes, one at a time: from the patch's response until the operator's status
/// shows it (polled every 10 ms); sorted milliseconds.
async fn latencies(
    client: &Client,
    names: &[String],
    changes: usize,
    phase: &str,
) -> Res<Vec<f64>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut ms = Vec::with_capacity(changes);
    for i in 0..changes {
        let node = &names[i % names.len()];
        let product = format!("BENCH-FLOOD-{phase}-{i}");
        let body = json!({ "metadata": { "labels": { "nvidia.com/gpu.product": product } } });
        nodes
            .patch(node, &PatchParams::default(), &Patch::Merge(body))
            .await?;
        let started = Instant::now();
        let seen = wait_status(client, CHANGE_TIMEOUT, |st| {
            st.nodes
                .iter()
                .any(|n| &n.name == node && n.product.as_deref() == Some(product.as_str()))
        })
        .await;
        if !seen {
            return Err(format!(
                "flood ({phase}): change {i} on {node} not in the status within {CHANGE_TIMEOUT:?}"
            )
            .into());
        }
        ms.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    Ok(ms)
}

async fn wait_status(
    client: &Client,
    timeout: Duration,
    check: impl Fn(&gpu_inventory_operator::crd::GpuInventoryStatus) -> bool,
) -> bool {
    let api: Api<GpuInventory> = Api::all(client.clone());
    let started = Instant::now();
    while started.elapsed() < timeout {
        if let Ok(inv) = api.get(INVENTORY).await
            && inv.status.as_ref().is_some_and(&check)
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// `tasks` loops of LIST pods, LIST nodes and a ConfigMap apply until `stop`: (requests, refused with 429).
async fn flood(client: Client, tasks: usize, stop: watch::Receiver<bool>) -> (u64, u64) {
    let loops = (0..tasks).map(|i| {
        let (client, mut stop) = (client.clone(), stop.clone());
        async move {
            let pods: Api<Pod> = Api::all(client.clone());
            let nodes: Api<Node> = Api::all(client.clone());
            let configmaps: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
            let (mut requests, mut throttled) = (0u64, 0u64);
            let name = format!("flood-{i}");
            let apply = PatchParams::apply("bench-flooder").force();
            let mut round = 0u64;
            while !*stop.borrow_and_update() {
                round += 1;
                let body = json!({ "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": { "name": name }, "data": { "round": round.to_string() } });
                let results = [
                    pods.list(&ListParams::default()).await.map(drop),
                    nodes.list(&ListParams::default()).await.map(drop),
                    configmaps
                        .patch(&name, &apply, &Patch::Apply(body))
                        .await
                        .map(drop),
                ];
                for result in results {
                    requests += 1;
                    if matches!(result, Err(kube::Error::Api(ref s)) if s.code == 429) {
                        throttled += 1;
                    }
                }
            }
            (requests, throttled)
        }
    });
    futures::future::join_all(loops)
        .await
        .into_iter()
        .fold((0, 0), |(r, t), (r2, t2)| (r + r2, t + t2))
}

async fn bind_cluster_admin(client: &Client, user: &str) -> Res<()> {
    let name = format!("bench-flood-{}", user.rsplit(':').next().unwrap_or(user));
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }] }))?;
    let api: Api<ClusterRoleBinding> = Api::all(client.clone());
    let _ = api.delete(&name, &DeleteParams::default()).await;
    api.patch(
        &name,
        &PatchParams::apply("bench-driver").force(),
        &Patch::Apply(&binding),
    )
    .await?;
    Ok(())
}

/// BENCH_KUBECONFIG impersonating the service account `user` with its groups (the admin credentials stay; APF
/// classifies the impersonated identity).
fn impersonating(s: &Settings, user: &str) -> Res<PathBuf> {
    let mut config = Kubeconfig::read_from(&s.kubeconfig)?;
    let namespace = user.split(':').nth(2).unwrap_or_default();
    for named in &mut config.auth_infos {
        if let Some(auth) = named.auth_info.as_mut() {
            auth.impersonate = Some(user.to_owned());
            auth.impersonate_groups = Some(vec![
                "system:serviceaccounts".to_owned(),
                format!("system:serviceaccounts:{namespace}"),
            ]);
        }
    }
    std::fs::create_dir_all(&s.log_dir)?;
    let short = user.rsplit(':').next().unwrap_or(user);
    let path = s.log_dir.join(format!("flood-{short}-kubeconfig.json"));
    std::fs::write(&path, serde_json::to_vec(&config)?)?;
    Ok(path)
}

async fn impersonated_client(s: &Settings, user: &str) -> Res<Client> {
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(impersonating(s, user)?)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    Ok(Client::try_from(config)?)
}

fn spawn_operator(s: &Settings, kubeconfig: &PathBuf) -> Res<Child> {
    let log_file = std::fs::File::create(s.log_dir.join("flood-operator.log"))?;
    Ok(Command::new(&s.operator_bin)
        .args([
            "run",
            "--namespace",
            NAMESPACE,
            "--default-inventory",
            INVENTORY,
            "--kubeconfig",
        ])
        .arg(kubeconfig)
        .env("GPUINV_METRICS_ADDR", "")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()?)
}

/// The flood lines of the results table.
pub fn append_table(table: &mut String, doc: &Value) {
    let Some(flood) = doc.get("flood") else {
        return;
    };
    table.push_str("\nflood: operator change -> status latency (ms), another client hammering the API server\n");
    table.push_str("  APF   phase   median     p90     max   flood req/s   429s\n");
    for key in ["apf_on", "apf_off"] {
        let Some(run) = flood.get(key) else { continue };
        for phase in ["quiet", "flood"] {
            let p = &run[phase];
            let (rate, throttled) = match phase {
                "flood" => (
                    format!(
                        "{:.0}",
                        run["flood_requests_per_sec"].as_f64().unwrap_or(f64::NAN)
                    ),
                    run["flood_throttled_429"].to_string(),
                ),
                _ => ("-".to_owned(), "-".to_owned()),
            };
            table.push_str(&format!(
                "  {:<5} {:<6} {:>7.0} {:>7.0} {:>7.0} {:>13} {:>6}\n",
                if run["apf"] == json!(true) {
                    "on"
                } else {
                    "off"
                },
                phase,
                p["median_ms"].as_f64().unwrap_or(f64::NAN),
                p["p90_ms"].as_f64().unwrap_or(f64::NAN),
                p["max_ms"].as_f64().unwrap_or(f64::NAN),
                rate,
                throttled
            ));
        }
    }
}
