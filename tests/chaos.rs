//! Chaos against the real local control plane (issue #16): nothing is lost. After the faults, once the
//! cluster is quiet, the status, ConfigMap and metrics equal a fresh `scan`. These tests restart the API
//! server with other flags, so they run one at a time after the others, like tests/faults.rs (`make test`);
//! every name starts with `fault_`.

mod common;

use std::time::Duration;

use common::fresh_scan::wait_equal_to_fresh_scan;
use common::proxy::ApiProxy;
use common::{
    Deadline, OperatorPeriods, OperatorProcess, TestEnv, WATCH_BACKOFF, eventually,
    local_cluster_dir, local_cluster_with, metric,
};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams};
use serde_json::json;

/// The local API server restarted with opt-in flags (hack/local-cluster.sh: `LOCAL_CLUSTER_*=1`); restarted
/// without them when dropped, also when the test fails.
struct ApiServerWith {
    off: Vec<(&'static str, &'static str)>,
}

impl ApiServerWith {
    fn flags(opt_ins: &[&'static str]) -> ApiServerWith {
        let on: Vec<(&str, &str)> = opt_ins.iter().map(|v| (*v, "1")).collect();
        local_cluster_with("stop-apiserver", &[]);
        local_cluster_with("start-apiserver", &on);
        ApiServerWith {
            off: opt_ins.iter().map(|v| (*v, "0")).collect(),
        }
    }
}

impl Drop for ApiServerWith {
    fn drop(&mut self) {
        local_cluster_with("stop-apiserver", &[]);
        local_cluster_with("start-apiserver", &self.off);
    }
}

fn apiserver_args() -> String {
    std::fs::read_to_string(local_cluster_dir().join("kube-apiserver.args"))
        .expect("the local cluster's kube-apiserver.args")
}

/// The API server's `--etcd-compaction-interval` (hack/local-cluster.sh sets it with LOCAL_CLUSTER_WATCH_EXPIRY).
fn compaction_interval(args: &str) -> Duration {
    let value = args
        .split("--etcd-compaction-interval=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .expect("--etcd-compaction-interval in kube-apiserver.args");
    Duration::from_secs(
        value
            .trim_end_matches('s')
            .parse()
            .expect("an interval in seconds"),
    )
}

/// A Ready H100 node (KWOK keeps it Ready) with `gpus` GPUs.
fn h100_node(name: &str, gpus: u32) -> Node {
    let resources = json!({ "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string() });
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": gpus.to_string(),
            "nvidia.com/gpu.memory": "81559" } },
        "status": { "capacity": resources, "allocatable": resources,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
                             "message": "kubelet is posting ready status" }] }
    }))
    .unwrap()
}

/// Creates a pod bound to `node` (no scheduler involved) holding `gpus` GPUs, once the namespace's default
/// ServiceAccount exists.
async fn bound_gpu_pod(env: &TestEnv, name: &str, node: &str, gpus: u32) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": { "nodeName": node, "automountServiceAccountToken": false,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }] }
    }))
    .unwrap();
    env.create_pod(pod).await;
}

fn relists(metrics: &str, watch: &str) -> f64 {
    metric(
        metrics,
        &format!("gpu_inventory_watch_relists_total{{watch=\"{watch}\"}}"),
    )
    .unwrap_or_else(|| panic!("no relist series for the {watch} watch:\n{metrics}"))
}

/// Item 1: the API server without a watch cache for nodes and pods and etcd compacting every 2 s; the
/// operator's connections are cut (a proxy in between) while nodes and pods change and etcd compacts past the
/// operator's resourceVersions. On reconnect its watches get 410 Gone, relist, and the result equals a fresh
/// scan; the relists are in the metric and the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_watch_expiry_relists_and_equals_a_fresh_scan() {
    let _apiserver = ApiServerWith::flags(&["LOCAL_CLUSTER_WATCH_EXPIRY"]);
    let args_text = apiserver_args();
    assert!(
        args_text.contains("--watch-cache-sizes=nodes#0,pods#0")
            && args_text.contains("--etcd-compaction-interval=2s"),
        "the API server runs without the expiry flags:\n{args_text}"
    );
    let env = TestEnv::new("fault-expiry").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let h100 = env.create_node(h100_node("h100", 8)).await;
    bound_gpu_pod(&env, "kept", &h100, 2).await;
    bound_gpu_pod(&env, "deleted", &h100, 1).await;

    let proxy = ApiProxy::start().await;
    let mut args = env.operator_args("30s");
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args[at + 1] = proxy.kubeconfig(&env.id).display().to_string();
    let operator = OperatorProcess::start(&env.id, &args);
    let periods = operator.periods();
    wait_equal_to_fresh_scan(&env, &operator, periods.converge()).await;
    let (_, before) = operator.http_get("/metrics").await;
    assert_eq!(
        (relists(&before, "nodes"), relists(&before, "pods")),
        (0.0, 0.0),
        "the first lists are no relists"
    );

    proxy.cut();
    let nodes: Api<Node> = Api::all(env.client.clone());
    env.set_label(&h100, "nvidia.com/gpu.product", Some("NVIDIA-H200"))
        .await;
    env.set_resources(
        &env.node_name("nuc1"),
        "allocatable",
        &[("nvidia.com/gpu", "2")],
    )
    .await;
    nodes
        .delete(&env.node_name("omen"), &DeleteParams::default())
        .await
        .expect("delete a node");
    let added = env.create_node(h100_node("h100-b", 4)).await;
    bound_gpu_pod(&env, "added", &added, 3).await;
    Api::<Pod>::namespaced(env.client.clone(), &env.namespace)
        .delete("deleted", &DeleteParams::default().grace_period(0))
        .await
        .expect("delete a pod");
    // Every revision the operator saw compacted away: each compaction removes what the one before it saw, so
    // two intervals after the last change, and one more for a compaction running late on a busy machine
    // (KWOK's Lease renewals keep the revision moving).
    tokio::time::sleep(3 * compaction_interval(&args_text)).await;
    proxy.restore();
    // The watches reconnect within their backoff cap, are told 410 Gone and relist (one reaction).
    let relist = Deadline::new(
        WATCH_BACKOFF.cap,
        "the watches' reconnect (WATCH backoff cap)",
    )
    .then(Deadline::reaction("the relists"));
    let relisted = eventually(relist, "both watches relisted", || async {
        let (_, metrics) = operator.http_get("/metrics").await;
        (relists(&metrics, "nodes") >= 1.0 && relists(&metrics, "pods") >= 1.0).then_some(metrics)
    })
    .await;
    wait_equal_to_fresh_scan(&env, &operator, periods.follow()).await;
    let log = operator.log();
    for watch in ["nodes", "pods"] {
        assert!(
            log.lines()
                .any(|l| l.contains("watch expired") && l.contains("410") && l.contains(watch)),
            "the {watch} watch's 410 in the log:\n{log}"
        );
    }
    assert!(log.contains("watch relisted"), "{log}");
    println!(
        "relists: nodes {}, pods {}",
        relists(&relisted, "nodes"),
        relists(&relisted, "pods")
    );
}

/// Another client hammering the API server: `tasks` loops of LIST pods (all namespaces), LIST nodes and a
/// ConfigMap patch, until `stop`. Returns (requests, of which refused with 429).
async fn flood(
    client: kube::Client,
    namespace: String,
    tasks: usize,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (u64, u64) {
    use kube::api::{ListParams, Patch, PatchParams};
    let loops = (0..tasks).map(|i| {
        let (client, namespace, mut stop) = (client.clone(), namespace.clone(), stop.clone());
        async move {
            let pods: Api<Pod> = Api::all(client.clone());
            let nodes: Api<Node> = Api::all(client.clone());
            let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
                Api::namespaced(client, &namespace);
            let (mut requests, mut throttled) = (0u64, 0u64);
            let mut count = |result: Result<(), kube::Error>| {
                requests += 1;
                if matches!(result, Err(kube::Error::Api(ref s)) if s.code == 429) {
                    throttled += 1;
                }
            };
            let name = format!("flood-{i}");
            let apply = PatchParams::apply("flooder").force();
            let mut round = 0u64;
            while !*stop.borrow_and_update() {
                round += 1;
                count(pods.list(&ListParams::default()).await.map(drop));
                count(nodes.list(&ListParams::default()).await.map(drop));
                let body = json!({ "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": { "name": name }, "data": { "round": round.to_string() } });
                count(
                    configmaps
                        .patch(&name, &apply, &Patch::Apply(body))
                        .await
                        .map(drop),
                );
            }
            (requests, throttled)
        }
    });
    futures::future::join_all(loops)
        .await
        .into_iter()
        .fold((0, 0), |(r, t), (r2, t2)| (r + r2, t + t2))
}

/// Item 6: with API Priority and Fairness on (its default configuration) and another, non-exempt client
/// flooding the API server with LISTs and patches, the operator, running as an ordinary user with deploy/'s
/// RBAC, still converges on a change; its requests carry its user agent (audit log). The latency figures
/// under a flood come from `make bench` (scenario `flood`, benches/RESULTS.md); this asserts a generous bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_under_a_flood_with_apf_the_operator_still_converges() {
    use common::exec_plugin::DeployRbac;
    use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
    use kube::api::{Patch, PatchParams};

    let _apiserver = ApiServerWith::flags(&["LOCAL_CLUSTER_APF"]);
    let args = apiserver_args();
    assert!(
        args.contains("--enable-priority-and-fairness=true"),
        "APF is off:\n{args}"
    );
    let env = TestEnv::new("fault-apf").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator_user = format!("{}-operator", env.id);
    let rbac = DeployRbac::grant(&env, &operator_user).await;
    let flooder = format!("{}-flooder", env.id);
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": flooder, "labels": { common::TEST_LABEL: env.id } },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": flooder }] }))
    .unwrap();
    let bindings: Api<ClusterRoleBinding> = Api::all(env.client.clone());
    bindings
        .patch(
            &flooder,
            &PatchParams::apply("gpuinv-test").force(),
            &Patch::Apply(&binding),
        )
        .await
        .unwrap();

    let mut args = env.operator_args("30s");
    let at = args.iter().position(|a| a == "--kubeconfig").unwrap();
    args[at + 1] = common::impersonating_kubeconfig(&operator_user, &env.id)
        .display()
        .to_string();
    let operator = OperatorProcess::start(&env.id, &args);
    let periods = OperatorPeriods::of(&args);
    let inv = env.inventory_name();
    env.wait_inventory(
        &inv,
        periods.converge(),
        "converged before the flood",
        common::is_homelab,
    )
    .await;

    let flood_kubeconfig = common::impersonating_kubeconfig(&flooder, &format!("{}-flood", env.id));
    let flood_client = {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&flood_kubeconfig).unwrap(),
            &kube::config::KubeConfigOptions::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let flooding = tokio::spawn(flood(flood_client, env.namespace.clone(), 48, stopped));
    // The flood under way before the change: each of its 48 loops has written its ConfigMap (one reaction).
    let flood_started = Deadline::reaction("the flood's loops");
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.client.clone(), &env.namespace);
    eventually(&flood_started, "the flood's 48 ConfigMaps", || async {
        let list = configmaps.list(&Default::default()).await.ok()?;
        let flooding = list
            .items
            .iter()
            .filter(|c| {
                c.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with("flood-"))
            })
            .count();
        (flooding == 48).then_some(())
    })
    .await;
    let nuc1 = env.node_name("nuc1");
    env.set_ready(&nuc1, "True").await;
    let changed = std::time::Instant::now();
    // Under the flood the operator's requests queue with the flooder's (APF shares the seats): one reaction
    // and a pass, and the flood's own reaction as the queueing.
    let under_flood = periods.follow().then(flood_started.clone());
    env.wait_inventory(
        &inv,
        &under_flood,
        "the change in the status under the flood",
        |s| s.ready_gpu_nodes == 1,
    )
    .await;
    let status_after = changed.elapsed();
    env.wait_configmap(
        &under_flood,
        "the change in the ConfigMap under the flood",
        |d| d.get(&nuc1).is_some_and(|v| v.contains("\"ready\":true")),
    )
    .await;
    let configmap_after = changed.elapsed();
    stop.send_replace(true);
    let (requests, throttled) = flooding.await.unwrap();
    println!(
        "under a flood of {requests} requests ({throttled} refused 429): status after {status_after:?}, \
         ConfigMap after {configmap_after:?}"
    );
    assert!(requests > 100, "the flood made only {requests} requests");
    wait_equal_to_fresh_scan(&env, &operator, periods.follow()).await;
    let audit = std::fs::read_to_string(local_cluster_dir().join("audit.log")).unwrap();
    let agent = format!(
        "\"userAgent\":\"gpu-inventory-operator/{}\"",
        env!("CARGO_PKG_VERSION")
    );
    assert!(
        audit.lines().any(|l| l.contains(&format!("\"username\":\"{operator_user}\"")) && l.contains(&agent)),
        "no request of {operator_user} with {agent} in the audit log"
    );
    let _ = bindings.delete(&flooder, &DeleteParams::default()).await;
    rbac.revoke().await;
}
