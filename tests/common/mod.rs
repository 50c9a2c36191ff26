//! Integration test harness: a real API server, per-test isolation, fixture loading, node mutation, and the
//! operator binary run as a child process scoped to the test's own nodes and inventories.
//!
//! The cluster is the one named by `GPUINV_TEST_KUBECONFIG`, else the local control plane that `make test`
//! starts (`target/local-cluster/kubeconfig`). No cluster is a test failure with instructions, never a skip.

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod allocation;
pub mod dra;
pub mod exec_plugin;
pub mod fresh_scan;
pub mod helm;
pub mod pool_counts;
pub mod pool_status;
pub mod proxy;
pub mod rbac;
pub mod tmux;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gpu_inventory_operator::crd::{GpuInventory, GpuNode, GpuNodeStatus};
use gpu_inventory_operator::sources::dump::parse_node_dump;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use testkit::nodes::{KWOK_ANNOTATION, is_ready};

/// The label every object a test creates carries, with the test's id as value.
pub const TEST_LABEL: &str = "gpuinv-test";

/// The holder the tests put on a node's Lease to silence its (simulated) kubelet.
const SILENCED_HOLDER: &str = "gpuinv-test-silenced-kubelet";

/// Path of the kubeconfig the tests use.
pub fn kubeconfig_path() -> PathBuf {
    match std::env::var_os("GPUINV_TEST_KUBECONFIG") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/local-cluster/kubeconfig"),
    }
}

/// Whether the tests run against the local control plane (whose API server they may stop and start).
pub fn is_local_cluster() -> bool {
    std::env::var_os("GPUINV_TEST_KUBECONFIG").is_none_or(|p| p.is_empty())
}

fn no_cluster(reason: String) -> ! {
    panic!(
        "no Kubernetes cluster for the integration tests: {reason}.\n\
         Start the local control plane with `make cluster-up` (or run everything with `make test`), \
         or point GPUINV_TEST_KUBECONFIG at the kubeconfig of a cluster you may create nodes in."
    )
}

/// A client for the test cluster; panics with instructions when there is none.
pub async fn client() -> Client {
    let path = kubeconfig_path();
    let kubeconfig = Kubeconfig::read_from(&path)
        .unwrap_or_else(|e| no_cluster(format!("cannot read kubeconfig {}: {e}", path.display())));
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| no_cluster(format!("kubeconfig {}: {e}", path.display())));
    let client = Client::try_from(config).unwrap_or_else(|e| no_cluster(e.to_string()));
    if let Err(e) = client.apiserver_version().await {
        no_cluster(format!(
            "API server from {} unreachable: {e}",
            path.display()
        ));
    }
    client
}

/// The article's home lab as the operator must report it: 4 GPU nodes, 0 Ready, 1 GPU.
pub fn is_homelab(s: &gpu_inventory_operator::crd::GpuInventoryStatus) -> bool {
    (s.total_gpu_nodes, s.ready_gpu_nodes, s.total_gpus) == (4, 0, 1)
}

/// A kubeconfig for the test cluster that impersonates `user` (the admin credentials stay; every request
/// carries `Impersonate-User`, so RBAC judges it as `user`).
pub fn impersonating_kubeconfig(user: &str, id: &str) -> PathBuf {
    let mut config = Kubeconfig::read_from(kubeconfig_path()).expect("read the test kubeconfig");
    for named in &mut config.auth_infos {
        if let Some(auth) = named.auth_info.as_mut() {
            auth.impersonate = Some(user.to_owned());
        }
    }
    write_kubeconfig(&config, &format!("{id}-as"))
}

/// Writes a kubeconfig under target/test-logs and returns its path.
pub fn write_kubeconfig(config: &Kubeconfig, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-kubeconfig.json"));
    // JSON is YAML: every kubeconfig reader takes it.
    std::fs::write(&path, serde_json::to_vec_pretty(config).unwrap()).unwrap();
    path
}

/// Runs `hack/local-cluster.sh <verb> [args]` (fault tests stop and start the local API server).
pub fn local_cluster(verb_and_args: &str) {
    assert!(
        is_local_cluster(),
        "this fault test stops and starts the API server, which only the local control plane allows; \
         unset GPUINV_TEST_KUBECONFIG (or skip tests matching fault_apiserver on other clusters)"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/local-cluster.sh");
    let status = Command::new(script)
        .args(verb_and_args.split_whitespace())
        .status()
        .expect("run hack/local-cluster.sh");
    assert!(
        status.success(),
        "hack/local-cluster.sh {verb_and_args} failed"
    );
}

/// Runs `hack/local-cluster.sh <verb> [args]` with extra environment variables (the opt-in flags).
pub fn local_cluster_with(verb_and_args: &str, env: &[(&str, &str)]) {
    assert!(
        is_local_cluster(),
        "this fault test restarts the API server with other flags, which only the local control plane allows; \
         unset GPUINV_TEST_KUBECONFIG"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/local-cluster.sh");
    let status = Command::new(script)
        .args(verb_and_args.split_whitespace())
        .envs(env.iter().copied())
        .status()
        .expect("run hack/local-cluster.sh");
    assert!(
        status.success(),
        "hack/local-cluster.sh {verb_and_args} ({env:?}) failed"
    );
}

/// The local cluster's state directory (target/local-cluster): args, audit log, token file.
pub fn local_cluster_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/local-cluster")
}

/// The value of one series (`name{labels}` exactly) in an OpenMetrics text, if it is there.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Polls `check` every 100 ms until it returns `Some`, or panics with `what` after `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if started.elapsed() > timeout {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a progress check saw: done (with the value), or how far along the thing awaited is.
pub enum Progress<T> {
    /// The thing awaited happened.
    Done(T),
    /// Not yet; this much of it is there (a count that grows while it progresses).
    Partly(usize),
}

/// Waits for something that advances in steps (thousands of objects written): polls `check` every `every`,
/// and fails only when it made no progress for `stall`, so a slow but working machine passes and a stuck one
/// fails as soon as it stops.
pub async fn eventually_progressing<T, F, Fut>(
    stall: Duration,
    every: Duration,
    what: &str,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Progress<T>>,
{
    let (mut best, mut since) = (None::<usize>, Instant::now());
    loop {
        match check().await {
            Progress::Done(value) => return value,
            Progress::Partly(n) => {
                if best.is_none_or(|b| n > b) {
                    (best, since) = (Some(n), Instant::now());
                }
            }
        }
        if since.elapsed() > stall {
            panic!(
                "waiting for {what}: no progress for {stall:?} (stuck at {})",
                best.unwrap_or(0)
            );
        }
        tokio::time::sleep(every).await;
    }
}

/// The nodes of a fixture file in tests/fixtures.
pub fn fixture_nodes(file: &str) -> Vec<Node> {
    let path = fixture_path(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading fixture {path}: {e}"));
    parse_node_dump(&bytes, &path).expect("fixture parses")
}

/// The path of a fixture file in tests/fixtures.
pub fn fixture_path(file: &str) -> String {
    format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// One test's slice of the cluster: a unique id, a namespace, and the nodes and inventories it made.
pub struct TestEnv {
    /// The client.
    pub client: Client,
    /// Unique id, also the value of [`TEST_LABEL`] and the prefix of node names.
    pub id: String,
    /// The test's namespace (holds the ConfigMap).
    pub namespace: String,
}

impl TestEnv {
    /// Creates the namespace of a new test environment.
    pub async fn new(test: &str) -> TestEnv {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nonce = (std::process::id() as u64 * 1000
            + COUNTER.fetch_add(1, Ordering::Relaxed) as u64)
            ^ (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64);
        let id = format!("t-{}-{:x}", test.replace('_', "-"), nonce % 0xffffff);
        let id: String = id
            .chars()
            .take(40)
            .collect::<String>()
            .trim_end_matches('-')
            .to_owned();
        let client = client().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": { "name": id, "labels": { TEST_LABEL: id } }
        }))
        .unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create test namespace");
        TestEnv {
            client,
            namespace: id.clone(),
            id,
        }
    }

    /// The test's name for a fixture node.
    pub fn node_name(&self, fixture_name: &str) -> String {
        format!("{}-{fixture_name}", self.id)
    }

    /// The name of the test's default inventory.
    pub fn inventory_name(&self) -> String {
        self.id.clone()
    }

    /// Creates the nodes of a fixture file (renamed and labelled for this test), status included.
    pub async fn load_fixture(&self, file: &str) -> Vec<String> {
        self.load_fixture_only(file, &[]).await
    }

    /// Like [`load_fixture`](Self::load_fixture), but only the named nodes (all when `only` is empty).
    pub async fn load_fixture_only(&self, file: &str, only: &[&str]) -> Vec<String> {
        let mut names = Vec::new();
        for node in fixture_nodes(file) {
            let name = node.metadata.name.clone().unwrap_or_default();
            if only.is_empty() || only.contains(&name.as_str()) {
                names.push(self.create_node(node).await);
            }
        }
        names
    }

    /// Creates one node, renamed and labelled for this test. The API server keeps the status on create.
    ///
    /// On a cluster with controllers (the local cluster, kind) a node whose kubelet never reports goes
    /// `Unknown` after the node lifecycle controller's grace period. So a node created Ready is handed to KWOK
    /// (annotation [`KWOK_ANNOTATION`]), which renews its Lease like a kubelet and keeps it Ready; a node
    /// created NotReady is left alone and stays NotReady (becoming `Unknown`, as a dead kubelet's node does).
    /// KWOK only takes nodes that carry the annotation when they are created: annotating one later does
    /// nothing (KWOK v0.8.0), so `set_ready(.., "True")` on such a node holds only until the grace period.
    pub async fn create_node(&self, mut node: Node) -> String {
        let name = self.node_name(node.metadata.name.as_deref().unwrap_or("node"));
        node.metadata.name = Some(name.clone());
        node.metadata.resource_version = None;
        node.metadata.uid = None;
        node.metadata.creation_timestamp = None;
        node.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(TEST_LABEL.to_owned(), self.id.clone());
        // The hostname label follows the new name where a label value can hold it (63 characters); longer
        // names (some real nodes' are) keep the node's own hostname.
        if let Some(labels) = node.metadata.labels.as_mut()
            && name.len() <= 63
        {
            labels.insert("kubernetes.io/hostname".to_owned(), name.clone());
        }
        if is_ready(&node) {
            let (key, value) = KWOK_ANNOTATION;
            node.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(key.to_owned(), value.to_owned());
        }
        let api: Api<Node> = Api::all(self.client.clone());
        api.create(&PostParams::default(), &node)
            .await
            .unwrap_or_else(|e| panic!("creating node {name}: {e}"));
        name
    }

    /// Sets a node's Ready condition through the status subresource. On a KWOK-managed node the simulated
    /// kubelet is silenced first for anything but `True` (it would report the node Ready again) and given
    /// back for `True` (so the node keeps renewing its Lease).
    pub async fn set_ready(&self, node: &str, status: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        if status != "True" {
            self.silence_kubelet(node).await;
        }
        let mut current = nodes.get_status(node).await.expect("get node status");
        let conditions = current
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "Ready");
        conditions.push(k8s_openapi::api::core::v1::NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            reason: Some(
                if status == "True" {
                    "KubeletReady"
                } else {
                    "KubeletNotReady"
                }
                .into(),
            ),
            message: Some(format!("set to {status} by the test")),
            last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::now(),
            )),
            last_heartbeat_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::now(),
            )),
        });
        let body = json!({ "status": { "conditions": conditions } });
        nodes
            .patch_status(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("patching Ready of {node}: {e}"));
        if status == "True" {
            self.resume_kubelet(node).await;
        }
    }

    /// Silences a node's kubelet the way a crashed kubelet does: its Lease stops being renewed, and KWOK
    /// stops touching the node. Done by taking the Lease over (KWOK never renews a Lease held by someone
    /// else until it expires); the renew time is left as it was, so the node lifecycle controller's grace
    /// period counts from the kubelet's last renewal. No-op for a node without a Lease (no kubelet).
    pub async fn silence_kubelet(&self, node: &str) {
        let annotated = Api::<Node>::all(self.client.clone())
            .get(node)
            .await
            .unwrap_or_else(|e| panic!("reading node {node}: {e}"))
            .metadata
            .annotations
            .is_some_and(|a| {
                a.get(KWOK_ANNOTATION.0).map(String::as_str) == Some(KWOK_ANNOTATION.1)
            });
        if annotated {
            // KWOK creates the Lease a moment after the node: wait for it, or the takeover would miss it.
            let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
            eventually(
                Duration::from_secs(30),
                &format!("KWOK's Lease for {node}"),
                || async { leases.get_opt(node).await.ok().flatten() },
            )
            .await;
        }
        let body =
            json!({ "spec": { "holderIdentity": SILENCED_HOLDER, "leaseDurationSeconds": 86400 } });
        self.patch_node_lease(node, body).await;
    }

    /// Cordons `node` (`spec.unschedulable`), or uncordons it with `false`, as `kubectl cordon` does.
    pub async fn cordon(&self, node: &str, cordon: bool) {
        Api::<Node>::all(self.client.clone())
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "unschedulable": cordon } })),
            )
            .await
            .unwrap_or_else(|e| panic!("cordoning node {node} ({cordon}): {e}"));
    }

    /// Gives a silenced node's Lease back: it expires at once, KWOK takes it over within its renew interval
    /// (about 5 s), renews it, and reports the node as a live kubelet does (Ready when it was not).
    pub async fn resume_kubelet(&self, node: &str) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let held_by_us = leases
            .get_opt(node)
            .await
            .ok()
            .flatten()
            .is_some_and(|lease| {
                lease.spec.and_then(|s| s.holder_identity).as_deref() == Some(SILENCED_HOLDER)
            });
        if held_by_us {
            self.patch_node_lease(node, json!({ "spec": { "leaseDurationSeconds": 1 } }))
                .await;
        }
    }

    async fn patch_node_lease(&self, node: &str, body: serde_json::Value) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        match leases
            .patch(node, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => panic!("patching the Lease of node {node}: {e}"),
        }
    }
    /// Merges `resources` into a node's capacity or allocatable (`field`) through the status subresource.
    pub async fn set_resources(&self, node: &str, field: &str, resources: &[(&str, &str)]) {
        let map: serde_json::Map<String, serde_json::Value> = resources
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let body = json!({ "status": { field: map } });
        Api::<Node>::all(self.client.clone())
            .patch_status(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("patching {field} of {node}: {e}"));
    }

    /// Sets (or with `None` removes) a node label.
    pub async fn set_label(&self, node: &str, key: &str, value: Option<&str>) {
        let body = json!({ "metadata": { "labels": { key: value } } });
        Api::<Node>::all(self.client.clone())
            .patch(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("labelling {node}: {e}"));
    }

    /// Deletes a node.
    pub async fn delete_node(&self, node: &str) {
        Api::<Node>::all(self.client.clone())
            .delete(node, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("deleting {node}: {e}"));
    }

    /// The test's inventory `name`, if it exists and can be read. Right after the operator starts on a fresh
    /// cluster its CRD may not be served yet: that reads as "not there yet", and callers poll.
    pub async fn inventory(&self, name: &str) -> Option<GpuInventory> {
        match Api::<GpuInventory>::all(self.client.clone())
            .get_opt(name)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                eprintln!("reading GpuInventory {name}: {e} (retrying)");
                None
            }
        }
    }

    /// The test's node-status ConfigMap, if it exists.
    pub async fn configmap(&self) -> Option<ConfigMap> {
        Api::<ConfigMap>::namespaced(self.client.clone(), &self.namespace)
            .get_opt("gpu-node-status")
            .await
            .expect("get ConfigMap")
    }

    /// The events regarding the object `name` (cluster-scoped objects' events live in `default`), oldest first.
    pub async fn events_about(&self, name: &str) -> Vec<k8s_openapi::api::core::v1::Event> {
        let api: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), "default");
        let params = ListParams::default().fields(&format!("involvedObject.name={name}"));
        let mut events = api.list(&params).await.expect("list events").items;
        events.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
        events
    }

    /// Waits until the default inventory's status satisfies `check`.
    pub async fn wait_inventory(
        &self,
        name: &str,
        timeout: Duration,
        what: &str,
        check: impl Fn(&gpu_inventory_operator::crd::GpuInventoryStatus) -> bool,
    ) -> GpuInventory {
        eventually(timeout, what, || async {
            let inv = self.inventory(name).await?;
            check(inv.status.as_ref()?).then_some(inv)
        })
        .await
    }

    /// The GpuNode of node `name`, if it exists.
    pub async fn gpunode(&self, name: &str) -> Option<GpuNode> {
        match Api::<GpuNode>::all(self.client.clone()).get_opt(name).await {
            Ok(found) => found,
            Err(e) => {
                eprintln!("reading GpuNode {name}: {e} (retrying)");
                None
            }
        }
    }

    /// The GpuNodes of this test's nodes (they carry the test's label, copied from their nodes).
    pub async fn gpunodes(&self) -> Vec<GpuNode> {
        let params = ListParams::default().labels(&format!("{TEST_LABEL}={}", self.id));
        Api::<GpuNode>::all(self.client.clone())
            .list(&params)
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// Waits until the GpuNode of `name` exists and its status satisfies `check`.
    pub async fn wait_gpunode(
        &self,
        name: &str,
        timeout: Duration,
        what: &str,
        check: impl Fn(&GpuNodeStatus) -> bool,
    ) -> GpuNode {
        eventually(timeout, what, || async {
            let node = self.gpunode(name).await?;
            check(node.status.as_ref()?).then_some(node)
        })
        .await
    }

    /// Waits until the ConfigMap's data satisfies `check`.
    pub async fn wait_configmap(
        &self,
        timeout: Duration,
        what: &str,
        check: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> ConfigMap {
        eventually(timeout, what, || async {
            let cm = self.configmap().await?;
            check(cm.data.as_ref()?).then_some(cm)
        })
        .await
    }

    /// The operator's arguments that scope it to this test (kubeconfig, namespace, selectors, requeue).
    pub fn operator_args(&self, requeue: &str) -> Vec<String> {
        let selector = format!("{TEST_LABEL}={}", self.id);
        vec![
            "run".into(),
            "--kubeconfig".into(),
            kubeconfig_path().display().to_string(),
            "--namespace".into(),
            self.namespace.clone(),
            "--node-label-selector".into(),
            selector.clone(),
            "--inventory-label-selector".into(),
            selector,
            "--default-inventory".into(),
            self.inventory_name(),
            "--requeue".into(),
            requeue.into(),
            "--metrics-addr".into(),
            "127.0.0.1:0".into(),
        ]
    }

    /// Starts the operator binary scoped to this test.
    pub fn start_operator(&self, requeue: &str) -> OperatorProcess {
        OperatorProcess::start(&self.id, &self.operator_args(requeue))
    }

    /// Starts the operator scoped to this test, with extra flags (`--flag value` pairs replace the defaults).
    pub fn start_operator_with(&self, requeue: &str, extra: &[&str]) -> OperatorProcess {
        let mut args = self.operator_args(requeue);
        let mut extra = extra.iter().peekable();
        while let Some(arg) = extra.next() {
            let value = extra.next_if(|v| !v.starts_with("--"));
            match (args.iter().position(|a| a == arg), value) {
                (Some(at), Some(value)) => args[at + 1] = (*value).to_owned(),
                (_, value) => args.extend(
                    std::iter::once(*arg)
                        .chain(value.copied())
                        .map(str::to_owned),
                ),
            }
        }
        OperatorProcess::start(&self.id, &args)
    }

    /// Waits until the node lifecycle controller has lifted the `not-ready` taint admission puts on a new
    /// node (until then the scheduler rightly calls GPU pods Unschedulable).
    pub async fn wait_schedulable(&self, node: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        eventually(
            Duration::from_secs(60),
            &format!("node {node} without taints"),
            || async {
                let node = nodes.get(node).await.ok()?;
                node.spec?
                    .taints
                    .unwrap_or_default()
                    .is_empty()
                    .then_some(())
            },
        )
        .await;
    }

    /// Deletes what the test created (nodes, inventories, namespace). Runs from `Drop` too.
    pub async fn cleanup(&self) {
        let selector = ListParams::default().labels(&format!("{TEST_LABEL}={}", self.id));
        let nodes: Api<Node> = Api::all(self.client.clone());
        let _ = nodes
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        let inventories: Api<GpuInventory> = Api::all(self.client.clone());
        let _ = inventories
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        // The garbage collector removes a deleted node's GpuNode; without a controller manager
        // (LOCAL_CLUSTER_COMPONENTS=apiserver) nobody would.
        let gpunodes: Api<GpuNode> = Api::all(self.client.clone());
        let _ = gpunodes
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(&self.namespace, &DeleteParams::default())
            .await;
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let (id, namespace) = (self.id.clone(), self.namespace.clone());
        // Drop cannot await, and the test's client is bound to the test's (now blocked) runtime: a short-lived
        // runtime on its own thread makes a fresh client and does the deletes, also after a panic.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let env = TestEnv {
                    client: client().await,
                    id,
                    namespace,
                };
                env.cleanup().await;
                std::mem::forget(env);
            });
        })
        .join();
    }
}

/// An API a test needs: the cluster must serve it from Kubernetes `since_minor` on (the local cluster turns on
/// what it takes). On an older server the test does not apply: `make integration-test` does not run it there
/// (tests/version-gates.txt lists it), and run by hand there it fails saying so.
pub struct RequiredApi<'a> {
    /// e.g. `resource.k8s.io/v1`.
    pub group_version: &'a str,
    /// A resource of it that must be listed.
    pub resource: &'a str,
    /// The first minor version that must serve it.
    pub since_minor: u32,
    /// Completes "Kubernetes vX.Y.Z ..." when a server that should serve it does not.
    pub missing: &'a str,
    /// Why the test does not apply to an older server.
    pub too_old: &'a str,
}

/// Fails the test unless the server serves `api`: on a server older than `since_minor` with why the test does
/// not apply there (it is gated in tests/version-gates.txt), on a newer one with what is missing.
pub async fn require_api(client: &Client, api: &RequiredApi<'_>, test: &str) {
    let served = client
        .list_api_group_resources(api.group_version)
        .await
        .is_ok_and(|list| list.resources.iter().any(|r| r.name == api.resource));
    if served {
        return;
    }
    let version = client.apiserver_version().await.expect("server version");
    let minor: u32 = version
        .minor
        .trim_end_matches('+')
        .parse()
        .expect("minor version");
    assert!(
        minor < api.since_minor,
        "Kubernetes {} {}",
        version.git_version,
        api.missing
    );
    panic!(
        "{test} does not apply to Kubernetes {}: {}; `make integration-test` does not run it there \
         (tests/version-gates.txt), run it on 1.{}+",
        version.git_version, api.too_old, api.since_minor
    );
}

/// A minimal HTTP/1.0 GET (the operator's endpoint is plain HTTP on loopback; `testkit::http`): (status code,
/// body). Panics when the exchange fails.
pub async fn http_get(addr: &str, path: &str) -> (u16, String) {
    testkit::http::get(addr, path)
        .await
        .unwrap_or_else(|e| panic!("GET http://{addr}{path}: {e}"))
}

/// The operator binary running as a child process, its output captured to `target/test-logs/<id>.log`.
pub struct OperatorProcess {
    child: Child,
    /// Where its stderr/stdout go.
    pub log_path: PathBuf,
}

impl OperatorProcess {
    /// Spawns the binary with `args` (RUST_LOG from the environment, else the binary's default filter).
    pub fn start(id: &str, args: &[String]) -> OperatorProcess {
        Self::start_with_env(id, args, &[])
    }

    /// Like [`start`](Self::start), with extra environment variables (e.g. `RUST_LOG`).
    pub fn start_with_env(id: &str, args: &[String], env: &[(&str, &str)]) -> OperatorProcess {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
        std::fs::create_dir_all(&dir).unwrap();
        static N: AtomicU32 = AtomicU32::new(0);
        let log_path = dir.join(format!("{id}-{}.log", N.fetch_add(1, Ordering::Relaxed)));
        let log = std::fs::File::create(&log_path).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
            .args(args)
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn the operator binary");
        OperatorProcess { child, log_path }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The address of its HTTP endpoint (from its log; waits up to 30 s for it to appear).
    pub async fn http_addr(&self) -> String {
        eventually(
            Duration::from_secs(30),
            "the operator's HTTP address in its log",
            || async { testkit::http::addr_in_log(&self.log()) },
        )
        .await
    }

    /// GET `path` on its HTTP endpoint: (status code, body).
    pub async fn http_get(&self, path: &str) -> (u16, String) {
        let addr = self.http_addr().await;
        http_get(&addr, path).await
    }

    /// Sends a signal (`TERM`, `KILL`, `INT`).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for exit up to `timeout`; returns the exit code (None: killed by a signal or still running).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<Option<i32>> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.code());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows what the operator said: the end of its log, where the cause usually is.
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(OPERATOR_LOG_TAIL)..];
            eprintln!(
                "--- the operator's log, last {} of {} lines ---\n{}\n--- end of the operator's log ---",
                tail.len(),
                lines.len(),
                tail.join("\n")
            );
        }
    }
}

/// How many lines of an operator's log a failing test prints.
const OPERATOR_LOG_TAIL: usize = 80;
