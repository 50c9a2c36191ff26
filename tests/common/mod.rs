//! Integration test harness: a real API server, per-test isolation, fixture loading, node mutation, and the
//! operator binary run as a child process scoped to the test's own nodes and inventories.
//!
//! The cluster is the one named by `GPUINV_TEST_KUBECONFIG`, else the local control plane that `make test`
//! starts (`target/local-cluster/kubeconfig`, or under `LOCAL_CLUSTER_STATE_DIR` as hack/local-cluster.sh
//! takes it). No cluster is a test failure with instructions, never a skip.
//!
//! Every wait follows the thing it waits for, on a deadline derived from its cause ([`wait_for`],
//! [`ClusterPeriods`], [`OperatorProcess::periods`], testkit::waits).

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
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;
use testkit::nodes::{KWOK_ANNOTATION, is_ready};
#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use testkit::waits::{
    API_SERVER_STARTUP_BACKOFF, CRD_REINSTALL_BACKOFF, Deadline, GC_RESYNC, LOAD_ALLOWANCE,
    OperatorPeriods, PLUGIN_FIRST_LIST_TIMEOUT, RECONCILE_BACKOFF, SCHEDULER_MAX_BACKOFF,
    WATCH_BACKOFF,
};

/// The label every object a test creates carries, with the test's id as value.
pub const TEST_LABEL: &str = "gpuinv-test";

/// The holder the tests put on a node's Lease to silence its (simulated) kubelet.
const SILENCED_HOLDER: &str = "gpuinv-test-silenced-kubelet";

/// Path of the kubeconfig the tests use.
pub fn kubeconfig_path() -> PathBuf {
    match std::env::var_os("GPUINV_TEST_KUBECONFIG") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => local_cluster_dir().join("kubeconfig"),
    }
}

/// Cluster-scoped objects a test made outside its namespace (DeviceClasses), deleted with kubectl when the
/// guard goes, so a failed test leaves none behind: `kind/name` each.
pub struct DeleteOnDrop(pub Vec<String>);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["delete", "--ignore-not-found", "--wait=false"])
            .args(&self.0)
            .status();
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
    note_restart(verb_and_args);
}

/// When this process last started the local API server again (a fault test): the cluster's controllers
/// catch up with it afterwards ([`ClusterPeriods::after_restart`]).
static API_SERVER_STARTED: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);

fn note_restart(verb_and_args: &str) {
    if verb_and_args.starts_with("start-apiserver") {
        *API_SERVER_STARTED.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
    }
}

/// client-go's reflectors retry a failed list or watch after a backoff of 800 ms doubling to 30 s
/// (k8s.io/client-go/tools/cache): the informers of a controller that kept running through an API-server
/// outage are current again at most this long after the server is back.
pub const CLIENT_GO_RELIST_MAX: Duration = Duration::from_secs(30);

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
    note_restart(verb_and_args);
}

/// The local cluster's state directory: args, audit log, token file. `LOCAL_CLUSTER_STATE_DIR` as
/// hack/local-cluster.sh reads it (relative to the repository), else target/local-cluster; the fault tests'
/// calls of the script pass the variable on, so they stop and start that same cluster.
pub fn local_cluster_dir() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    match std::env::var_os("LOCAL_CLUSTER_STATE_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target/local-cluster"),
    }
}

/// The value of one series (`name{labels}` exactly) in an OpenMetrics text, if it is there.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// Polls `check` every 100 ms until it returns `Some`; after `deadline`, panics with `what` and the deadline's
/// cause. A check that can say what it saw meanwhile uses [`wait_for`], whose panic shows it.
pub async fn eventually<T, F, Fut>(deadline: impl Into<Deadline>, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    wait_for(deadline, what, || {
        let checked = check();
        async move {
            checked
                .await
                .ok_or_else(|| "not yet (the check shows no more)".to_owned())
        }
    })
    .await
}

/// Polls `check` every 100 ms until it returns `Ok`; `Err` says what it saw instead. After `deadline`, panics
/// with what was awaited, what was last seen, and the deadline with its cause (testkit::waits: deadlines are
/// derived from the periods of what is awaited, never guessed).
pub async fn wait_for<T, F, Fut>(deadline: impl Into<Deadline>, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = deadline.into();
    let started = Instant::now();
    loop {
        let seen = match check().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        if started.elapsed() > deadline.limit() {
            panic!(
                "waited {:.1?} for {what}, past the deadline of {deadline}.\nLast seen: {seen}",
                started.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The state directory of the test cluster when hack/local-cluster.sh made it (the local cluster, or one of
/// its other state directories named by GPUINV_TEST_KUBECONFIG): its kubeconfig's directory, which holds the
/// components' arguments.
pub fn cluster_state_dir() -> Option<PathBuf> {
    let dir = kubeconfig_path().parent()?.to_path_buf();
    dir.join("kube-apiserver.args").exists().then_some(dir)
}

/// The periods of the cluster's own components that tests wait on. On a cluster of hack/local-cluster.sh they
/// are read from the arguments it wrote for them ([`cluster_state_dir`]); on another cluster (kind with KWOK
/// and the stages in hack/kwok/, as .github/workflows/ci.yml runs it) they are Kubernetes' and KWOK's defaults
/// and hack/kwok/'s stages.
#[derive(Clone, Debug)]
pub struct ClusterPeriods {
    /// kube-controller-manager's `--node-monitor-period`: how often the node lifecycle controller looks at the
    /// nodes (lifts a Ready node's not-ready taint, marks a silent node Unknown).
    pub node_monitor_period: Duration,
    /// kube-controller-manager's `--node-monitor-grace-period`: how long a node may miss Lease renewals before
    /// it is marked Unknown.
    pub node_monitor_grace: Duration,
    /// The longest gap between two status heartbeats of a KWOK node (the heartbeat stage's jitter bound).
    pub kwok_heartbeat_max: Duration,
    /// How often KWOK renews a node's Lease (a quarter of `--node-lease-duration-seconds`).
    pub kwok_lease_renew: Duration,
    /// kube-controller-manager's `--leader-elect-lease-duration`: a controller-manager started again (after a
    /// long API-server outage, hack/local-cluster.sh start-apiserver) runs its controllers once its dead
    /// predecessor's lease has run out.
    pub controller_manager_lease: Duration,
}

impl ClusterPeriods {
    /// The periods of the test cluster.
    pub fn get() -> ClusterPeriods {
        let state = cluster_state_dir();
        let local = state.is_some();
        let read = |file: &str| {
            let dir = state
                .clone()
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("hack"));
            std::fs::read_to_string(dir.join(file)).unwrap_or_default()
        };
        let controller_manager = if local {
            read("kube-controller-manager.args")
        } else {
            String::new()
        };
        let flag = |text: &str, name: &str| -> Option<u64> {
            let value = text.split(&format!("{name}=")).nth(1)?;
            value
                .split_whitespace()
                .next()?
                .trim_end_matches('s')
                .parse()
                .ok()
        };
        let heartbeat = read("kwok/node-heartbeat-with-lease.yaml");
        let heartbeat_ms: Option<u64> = heartbeat
            .split("jitterDurationMilliseconds:")
            .nth(1)
            .and_then(|v| v.split_whitespace().next()?.parse().ok());
        let kwok_args = if local {
            read("kwok.args")
        } else {
            String::new()
        };
        ClusterPeriods {
            // Kubernetes' defaults: 5 s and 50 s.
            node_monitor_period: Duration::from_secs(
                flag(&controller_manager, "--node-monitor-period").unwrap_or(5),
            ),
            node_monitor_grace: Duration::from_secs(
                flag(&controller_manager, "--node-monitor-grace-period").unwrap_or(50),
            ),
            kwok_heartbeat_max: Duration::from_millis(
                heartbeat_ms.expect("the KWOK heartbeat stage's jitterDurationMilliseconds"),
            ),
            // KWOK's default lease is 40 s.
            kwok_lease_renew: Duration::from_secs(
                flag(&kwok_args, "--node-lease-duration-seconds").unwrap_or(40) / 4,
            ),
            // Kubernetes' default: 15 s.
            controller_manager_lease: Duration::from_secs(
                flag(&controller_manager, "--leader-elect-lease-duration").unwrap_or(15),
            ),
        }
    }

    /// A controller of kube-controller-manager acting on a new object, also when the controller-manager has
    /// just been started again: its predecessor's lease running out, then its reaction.
    pub fn controller_manager_reaction(&self, controller: &str) -> Deadline {
        Deadline::new(
            self.controller_manager_lease,
            format!(
                "a restarted kube-controller-manager taking the lease over (--leader-elect-lease-duration {:?})",
                self.controller_manager_lease
            ),
        )
        .then(Deadline::reaction(controller))
    }

    /// While the cluster's controllers catch up with an API server this process started again: a restarted
    /// kube-controller-manager or kube-scheduler takes its lease over once its predecessor's has run out, a
    /// running one's informers are current within client-go's relist backoff. `None` once that is over (or
    /// without a restart).
    pub fn after_restart(&self) -> Option<Deadline> {
        let since = API_SERVER_STARTED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|at| at.elapsed())?;
        let lease = self.controller_manager_lease;
        let left = lease.max(CLIENT_GO_RELIST_MAX).checked_sub(since)?;
        Some(Deadline::new(
            left,
            format!(
                "the controllers catching up with the API server started again {since:.0?} ago (a restarted one's \
                 lease, --leader-elect-lease-duration {lease:?}; a running one's informers, client-go's relist \
                 backoff, at most {CLIENT_GO_RELIST_MAX:?})"
            ),
        ))
    }

    /// One reaction of a controller of the cluster (kube-controller-manager's, kube-scheduler), once they have
    /// caught up with a restart of the API server ([`Self::after_restart`]).
    pub fn controller_reaction(&self, controller: &str) -> Deadline {
        match self.after_restart() {
            Some(catch_up) => catch_up.then(Deadline::reaction(controller)),
            None => Deadline::reaction(controller),
        }
    }

    /// One look of the node lifecycle controller, and its reaction.
    pub fn node_monitor_pass(&self) -> Deadline {
        Deadline::new(
            self.node_monitor_period,
            format!(
                "the node lifecycle controller's next look (--node-monitor-period {:?})",
                self.node_monitor_period
            ),
        )
        .then(self.controller_reaction("the node lifecycle controller"))
    }

    /// Until every KWOK node has sent a status heartbeat, and KWOK's reaction.
    pub fn kwok_heartbeat(&self) -> Deadline {
        Deadline::new(
            self.kwok_heartbeat_max,
            format!(
                "the longest gap between two KWOK status heartbeats ({:?}, its heartbeat stage)",
                self.kwok_heartbeat_max
            ),
        )
        .then(Deadline::reaction("KWOK"))
    }

    /// A silent node marked Unknown: the grace period, counted from the kubelet's last word, which may still be
    /// one heartbeat KWOK had scheduled; then the node lifecycle controller's next look.
    pub fn node_goes_unknown(&self) -> Deadline {
        Deadline::new(
            self.node_monitor_grace,
            format!(
                "the node lifecycle controller's grace (--node-monitor-grace-period {:?})",
                self.node_monitor_grace
            ),
        )
        .then(Deadline::new(
            self.kwok_heartbeat_max,
            "one status heartbeat KWOK had already scheduled",
        ))
        .then(self.node_monitor_pass())
    }

    /// The scheduler placing (or giving up on) a pod on a new node: the not-ready taint lifted by the node
    /// lifecycle controller, then the scheduler's retry of the pod (at most its backoff) and its reaction.
    pub fn scheduling(&self) -> Deadline {
        self.node_monitor_pass()
            .then(Deadline::new(
                SCHEDULER_MAX_BACKOFF,
                "kube-scheduler's retry of the pod (podMaxBackoffSeconds)",
            ))
            .then(self.controller_reaction("kube-scheduler"))
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
    stall: impl Into<Deadline>,
    every: Duration,
    what: &str,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Progress<T>>,
{
    let stall = stall.into();
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
        if since.elapsed() > stall.limit() {
            panic!(
                "waiting for {what}: no progress for {:.1?}, past the stall deadline of {stall}; last seen: \
                 stuck at {}",
                since.elapsed(),
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
            // KWOK creates the Lease at its first renewal of the new node: wait for it, or the takeover would
            // miss it.
            let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
            let renew = ClusterPeriods::get().kwok_lease_renew;
            let deadline =
                Deadline::new(renew, format!("KWOK's Lease renewal interval ({renew:?})"))
                    .then(Deadline::reaction("KWOK"));
            wait_for(deadline, &format!("KWOK's Lease for {node}"), || async {
                match leases.get_opt(node).await {
                    Ok(Some(lease)) => Ok(lease),
                    Ok(None) => Err("no Lease yet".to_owned()),
                    Err(e) => Err(format!("reading it: {e}")),
                }
            })
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
    /// ([`ClusterPeriods::kwok_lease_renew`]), renews it, and reports the node as a live kubelet does (Ready when it was not).
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

    /// Waits until the default inventory's status satisfies `check`; a timeout shows the last status seen.
    pub async fn wait_inventory(
        &self,
        name: &str,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&gpu_inventory_operator::crd::GpuInventoryStatus) -> bool,
    ) -> GpuInventory {
        wait_for(deadline, what, || async {
            let Some(inv) = self.inventory(name).await else {
                return Err(format!("no GpuInventory {name}"));
            };
            match inv.status.as_ref() {
                None => Err(format!("GpuInventory {name} without a status")),
                Some(status) if check(status) => Ok(inv),
                Some(status) => Err(inventory_summary(status)),
            }
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

    /// Waits until the GpuNode of `name` exists and its status satisfies `check`; a timeout shows the last
    /// status seen.
    pub async fn wait_gpunode(
        &self,
        name: &str,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&GpuNodeStatus) -> bool,
    ) -> GpuNode {
        wait_for(deadline, what, || async {
            let Some(node) = self.gpunode(name).await else {
                return Err(format!("no GpuNode {name}"));
            };
            match node.status.as_ref() {
                None => Err(format!("GpuNode {name} without a status")),
                Some(status) if check(status) => Ok(node),
                Some(status) => Err(format!(
                    "GpuNode {name}: count {}, ready {}, product {:?}, issues {:?}",
                    status.node.count, status.node.ready, status.node.product, status.issue_reasons
                )),
            }
        })
        .await
    }

    /// Waits until the ConfigMap's data satisfies `check`; a timeout shows the last keys seen.
    pub async fn wait_configmap(
        &self,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> ConfigMap {
        wait_for(deadline, what, || async {
            let Some(cm) = self.configmap().await else {
                return Err("no ConfigMap gpu-node-status".to_owned());
            };
            match cm.data.as_ref() {
                None => Err("the ConfigMap without data".to_owned()),
                Some(data) if check(data) => Ok(cm),
                Some(data) => Err(format!(
                    "{} keys: {}",
                    data.len(),
                    data.keys().take(20).cloned().collect::<Vec<_>>().join(", ")
                )),
            }
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

    /// Waits until the namespace's `default` ServiceAccount exists: ServiceAccount admission refuses the
    /// namespace's pods until then, and kube-controller-manager's serviceaccount controller creates it in
    /// reaction to the new namespace.
    pub async fn wait_service_account(&self) {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &self.namespace);
        wait_for(
            ClusterPeriods::get().controller_reaction(
                "kube-controller-manager's serviceaccount controller, to the new namespace",
            ),
            &format!("the ServiceAccount default of namespace {}", self.namespace),
            || async {
                match accounts.get_opt("default").await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err("no ServiceAccount default yet".to_owned()),
                    Err(e) => Err(format!("reading it: {e}")),
                }
            },
        )
        .await;
    }

    /// Creates a pod in the test's namespace once its `default` ServiceAccount exists; returns its name.
    pub async fn create_pod(&self, pod: Pod) -> String {
        self.wait_service_account().await;
        let name = pod.metadata.name.clone().unwrap_or_default();
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        // Admission reads the ServiceAccount from its cache (a live lookup when missing): it passes at once,
        // or after the cache's reaction to the new account.
        wait_for(
            Deadline::reaction("the API server's ServiceAccount cache"),
            &format!("creating pod {name}"),
            || async {
                pods.create(&PostParams::default(), &pod)
                    .await
                    .map(drop)
                    .map_err(|e| format!("refused: {e}"))
            },
        )
        .await;
        name
    }

    /// The PodScheduled condition of pod `name` and the node it is bound to, as a wait shows it.
    async fn scheduling_of(&self, name: &str) -> Result<(Option<String>, String), String> {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), &self.namespace);
        let pod = pods
            .get(name)
            .await
            .map_err(|e| format!("reading pod {name}: {e}"))?;
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
        let conditions = pod.status.and_then(|s| s.conditions).unwrap_or_default();
        let scheduled = conditions
            .iter()
            .find(|c| c.type_ == "PodScheduled")
            .map_or_else(
                || "no PodScheduled condition".to_owned(),
                |c| {
                    format!(
                        "PodScheduled {} {}: {}",
                        c.status,
                        c.reason.as_deref().unwrap_or(""),
                        c.message.as_deref().unwrap_or("")
                    )
                },
            );
        Ok((node, scheduled))
    }

    /// Waits until kube-scheduler has bound pod `name`; returns the node. Its deadline:
    /// [`ClusterPeriods::scheduling`] (a new node's not-ready taint lifted, the scheduler's retry).
    pub async fn wait_bound(&self, name: &str) -> String {
        wait_for(
            ClusterPeriods::get().scheduling(),
            &format!("kube-scheduler binding pod {name}"),
            || async {
                match self.scheduling_of(name).await? {
                    (Some(node), _) => Ok(node),
                    (None, scheduled) => Err(format!("not bound; {scheduled}")),
                }
            },
        )
        .await
    }

    /// Waits until kube-scheduler has found pod `name` Unschedulable (its first attempt: one reaction);
    /// returns the condition's message.
    pub async fn wait_unschedulable(&self, name: &str) -> String {
        wait_for(
            ClusterPeriods::get().controller_reaction("kube-scheduler's first attempt"),
            &format!("kube-scheduler finding pod {name} Unschedulable"),
            || async {
                let (node, scheduled) = self.scheduling_of(name).await?;
                match scheduled.strip_prefix("PodScheduled False Unschedulable: ") {
                    Some(message) if node.is_none() => Ok(message.to_owned()),
                    _ => Err(format!("bound to {node:?}; {scheduled}")),
                }
            },
        )
        .await
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
    /// node (until then the scheduler rightly calls GPU pods Unschedulable): its next look at the Ready node.
    pub async fn wait_schedulable(&self, node: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        wait_for(
            ClusterPeriods::get().node_monitor_pass(),
            &format!("node {node} without taints"),
            || async {
                let found = nodes
                    .get(node)
                    .await
                    .map_err(|e| format!("reading node {node}: {e}"))?;
                let taints = found.spec.and_then(|s| s.taints).unwrap_or_default();
                if taints.is_empty() {
                    Ok(())
                } else {
                    let keys: Vec<String> = taints
                        .iter()
                        .map(|t| format!("{}:{}", t.key, t.effect))
                        .collect();
                    Err(format!("taints {keys:?}"))
                }
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
    /// Its arguments (its periods are read from them: [`OperatorProcess::periods`]).
    args: Vec<String>,
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
        OperatorProcess {
            child,
            log_path,
            args: args.to_vec(),
        }
    }

    /// Its periods (requeue, lease, grace), read from its arguments with the operator's own parser: the
    /// deadlines of waits on it derive from them.
    pub fn periods(&self) -> OperatorPeriods {
        OperatorPeriods::of(&self.args)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The address of its HTTP endpoint, from its log: logged once it has connected (one reaction of its
    /// start-up; an unreachable server is retried up to `--startup-timeout` first).
    pub async fn http_addr(&self) -> String {
        let deadline = Deadline::reaction("the operator's start-up to its HTTP server");
        wait_for(
            deadline,
            "the operator's HTTP address in its log",
            || async {
                let log = self.log();
                testkit::http::addr_in_log(&log).ok_or_else(|| {
                    let last = log.lines().last().unwrap_or("(empty)");
                    format!("no address in its log; its last line: {last}")
                })
            },
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

/// A GpuInventory status in one paragraph (what a wait on it last saw).
pub fn inventory_summary(status: &gpu_inventory_operator::crd::GpuInventoryStatus) -> String {
    let nodes: Vec<String> = status
        .nodes
        .iter()
        .take(20)
        .map(|n| {
            let issues: Vec<&str> = n.issues.iter().map(|i| i.reason.as_str()).collect();
            format!(
                "{} (ready {}, {} GPUs, issues {issues:?})",
                n.name, n.ready, n.count
            )
        })
        .collect();
    format!(
        "totalGpuNodes {}, readyGpuNodes {}, totalGpus {}, omittedNodes {:?}; nodes: {}",
        status.total_gpu_nodes,
        status.ready_gpu_nodes,
        status.total_gpus,
        status.omitted_nodes,
        nodes.join("; ")
    )
}
