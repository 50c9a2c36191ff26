//! `make bench` driver (built as `cargo build --release --example bench-driver`; run by hack/bench.sh).
//!
//! For every node count N and for each of the two programs — the operator (`gpu-inventory-operator run`) and
//! the article-style baseline (benches/baseline_operator.rs) — in the same run, on the same control plane:
//!
//! 1. creates N nodes (1 in 5 a GPU node cloned from ../shared/fixtures, some NotReady; the rest CPU nodes),
//!    32 creates in flight, before the program starts; a fresh namespace for the ConfigMap;
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
//! BENCH_BASELINE_BIN, BENCH_FIXTURES, BENCH_OUT, BENCH_TABLE, BENCH_LOG_DIR, BENCH_NODES ("1000 5000"),
//! BENCH_QUIET_SECS (300), BENCH_CHURN_SECS (60), BENCH_CHURN_RATE (20), BENCH_CHANGES (200),
//! BENCH_BURST_CHANGES (1000), BENCH_CHANGE_GAP_MS (500: the longest wait before the next latency change when
//! the previous one is not visible yet), BENCH_NODE_IMAGES (20 container images per node, as kubelets report),
//! BENCH_SETTLE_SECS (120: the longest wait for convergence), BENCH_PROGRAMS ("operator baseline").

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use gpu_inventory_operator::crd::{GpuInventory, GpuNodeEntry};
use gpu_inventory_operator::inventory::scanner::scan_node;
use gpu_inventory_operator::sources::dump::parse_node_dump;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, ContainerImage, Namespace, Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Res<T> = Result<T, BoxError>;

const DRIVER_UA: &str = "gpu-inventory-bench-driver/0.1.0";
const BENCH_LABEL: &str = "bench.gpu-inventory.dev/node";
const CONFIGMAP: &str = "gpu-node-status";
const MEMORY_LABEL: &str = "nvidia.com/gpu.memory";
const CREATE_CONCURRENCY: usize = 32;

// ----------------------------------------------------------------------------------------- settings --

fn env_str(name: &str, default: &str) -> String {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_owned())
}

fn env_num(name: &str, default: u64) -> u64 {
    env_str(name, &default.to_string())
        .parse()
        .unwrap_or_else(|_| panic!("{name} must be a whole number"))
}

#[derive(Clone, Debug)]
struct Settings {
    kubeconfig: PathBuf,
    audit_log: PathBuf,
    operator_bin: PathBuf,
    baseline_bin: PathBuf,
    fixtures: PathBuf,
    out: PathBuf,
    table: PathBuf,
    log_dir: PathBuf,
    nodes: Vec<usize>,
    programs: Vec<Program>,
    quiet_secs: u64,
    churn_secs: u64,
    churn_rate: u64,
    changes: usize,
    burst_changes: usize,
    change_gap: Duration,
    node_images: usize,
    settle: Duration,
}

impl Settings {
    fn from_env() -> Self {
        let root = std::env::current_dir().expect("cwd");
        let path = |name: &str, default: &str| PathBuf::from(env_str(name, default));
        Settings {
            kubeconfig: path("BENCH_KUBECONFIG", "target/bench-cluster/kubeconfig"),
            audit_log: path("BENCH_AUDIT_LOG", "target/bench-cluster/audit.log"),
            operator_bin: path(
                "BENCH_OPERATOR_BIN",
                "target/release/gpu-inventory-operator",
            ),
            baseline_bin: path(
                "BENCH_BASELINE_BIN",
                "target/release/examples/baseline-operator",
            ),
            fixtures: path(
                "BENCH_FIXTURES",
                &root.join("../shared/fixtures").to_string_lossy(),
            ),
            out: path("BENCH_OUT", "target/bench/results.json"),
            table: path("BENCH_TABLE", "target/bench/results.txt"),
            log_dir: path("BENCH_LOG_DIR", "target/bench/logs"),
            nodes: env_str("BENCH_NODES", "1000 5000")
                .split_whitespace()
                .map(|n| n.parse().expect("BENCH_NODES: whole numbers"))
                .collect(),
            programs: env_str("BENCH_PROGRAMS", "operator baseline")
                .split_whitespace()
                .map(|p| match p {
                    "operator" => Program::Operator,
                    "baseline" => Program::Baseline,
                    other => panic!("BENCH_PROGRAMS: unknown program {other}"),
                })
                .collect(),
            quiet_secs: env_num("BENCH_QUIET_SECS", 300),
            churn_secs: env_num("BENCH_CHURN_SECS", 60),
            churn_rate: env_num("BENCH_CHURN_RATE", 20).max(1),
            changes: env_num("BENCH_CHANGES", 200) as usize,
            burst_changes: env_num("BENCH_BURST_CHANGES", 1000) as usize,
            change_gap: Duration::from_millis(env_num("BENCH_CHANGE_GAP_MS", 500)),
            node_images: env_num("BENCH_NODE_IMAGES", 20) as usize,
            settle: Duration::from_secs(env_num("BENCH_SETTLE_SECS", 120)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Program {
    Operator,
    Baseline,
}

impl Program {
    fn name(self) -> &'static str {
        match self {
            Program::Operator => "operator",
            Program::Baseline => "baseline",
        }
    }
    fn user_agent_prefix(self) -> &'static str {
        match self {
            Program::Operator => "gpu-inventory-operator/",
            Program::Baseline => "gpu-inventory-baseline/",
        }
    }
}

fn log(msg: impl AsRef<str>) {
    eprintln!(
        "[bench {}] {}",
        Timestamp::now().strftime("%H:%M:%S"),
        msg.as_ref()
    );
}

// ---------------------------------------------------------------------------------------- nodes --

struct Templates {
    gpu: Vec<Node>,
    cpu: Vec<Node>,
}

fn load_templates(dir: &std::path::Path) -> Res<Templates> {
    let mut gpu = Vec::new();
    let mut cpu = Vec::new();
    for file in ["gfd-nodes.yaml", "homelab-nodes.yaml"] {
        let path = dir.join(file);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for node in parse_node_dump(&bytes, &path.to_string_lossy())? {
            if scan_node(&node).is_some() {
                gpu.push(node);
            } else {
                cpu.push(node);
            }
        }
    }
    if gpu.is_empty() || cpu.is_empty() {
        return Err("the fixtures need GPU and CPU nodes".into());
    }
    Ok(Templates { gpu, cpu })
}

/// Node `i` of N: every fifth a GPU node (fixture label sets, incl. NotReady ones), else a CPU node (every
/// tenth of those NotReady). Each carries `images` container images, as kubelets report them.
fn make_node(templates: &Templates, i: usize, images: usize) -> Node {
    let gpu = i.is_multiple_of(5);
    let (mut node, name) = if gpu {
        (
            templates.gpu[(i / 5) % templates.gpu.len()].clone(),
            format!("bench-gpu-{i:05}"),
        )
    } else {
        (
            templates.cpu[i % templates.cpu.len()].clone(),
            format!("bench-cpu-{i:05}"),
        )
    };
    let mut labels = node.metadata.labels.take().unwrap_or_default();
    labels.insert("kubernetes.io/hostname".into(), name.clone());
    labels.insert(BENCH_LABEL.into(), "true".into());
    node.metadata = ObjectMeta {
        name: Some(name),
        labels: Some(labels),
        annotations: node.metadata.annotations.take(),
        ..Default::default()
    };
    if let Some(status) = node.status.as_mut() {
        if !gpu && i % 10 == 3 {
            set_ready(
                status.conditions.get_or_insert_with(Vec::new),
                false,
                "2026-01-01T00:00:00Z",
            );
        }
        status.images = Some(
            (0..images)
                .map(|k| ContainerImage {
                    names: Some(vec![
                        format!(
                            "registry.example.com/platform/service-{k:02}@sha256:{:064x}",
                            (i * 131 + k) as u128 * 0x9e3779b97f4a7c15
                        ),
                        format!(
                            "registry.example.com/platform/service-{k:02}:v1.{k}.{}",
                            i % 7
                        ),
                    ]),
                    size_bytes: Some(50_000_000 + (k as i64) * 1_000_003),
                })
                .collect(),
        );
    }
    node
}

fn set_ready(conditions: &mut Vec<NodeCondition>, ready: bool, at: &str) {
    let time = Time(at.parse().expect("timestamp"));
    let (status, reason, message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        ("False", "KubeletNotReady", "bench: Ready flipped")
    };
    let condition = NodeCondition {
        type_: "Ready".into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(time.clone()),
        last_transition_time: Some(time),
    };
    match conditions.iter_mut().find(|c| c.type_ == "Ready") {
        Some(c) => *c = condition,
        None => conditions.push(condition),
    }
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

async fn delete_bench_nodes(client: &Client) -> Res<()> {
    let api: Api<Node> = Api::all(client.clone());
    let selector = format!("{BENCH_LABEL}=true");
    let lp = ListParams::default().labels(&selector);
    let _ = api.delete_collection(&DeleteParams::default(), &lp).await?;
    for _ in 0..600 {
        let left = api.list_metadata(&lp.clone().limit(1)).await?;
        if left.items.is_empty() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err("bench nodes were not deleted within 120 s".into())
}

async fn create_nodes(
    client: &Client,
    templates: &Templates,
    n: usize,
    images: usize,
) -> Res<Duration> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let node = make_node(templates, i, images);
            async move { api.create(&PostParams::default(), &node).await.map(|_| ()) }
        })
        .buffer_unordered(CREATE_CONCURRENCY)
        .try_collect::<()>()
        .await?;
    Ok(started.elapsed())
}

// ------------------------------------------------------------------------------------ observation --

/// What the driver expects and what its watches saw.
#[derive(Default)]
struct Obs {
    /// The expected entry of every GPU node (scanner output on the driver's copy of the node).
    truth: HashMap<String, GpuNodeEntry>,
    /// Status totals and entries, as last seen.
    status: Option<(u32, u32, u64)>,
    status_entries: HashMap<String, GpuNodeEntry>,
    /// ConfigMap entries, as last seen.
    cm: HashMap<String, GpuNodeEntry>,
    /// Latency changes in flight, by node.
    pending: HashMap<String, Pending>,
    /// Finished latencies.
    latencies: Vec<Duration>,
}

struct Pending {
    written: Option<Instant>,
    status_at: Option<Instant>,
    cm_at: Option<Instant>,
}

impl Obs {
    fn converged(&self) -> bool {
        let Some((total, ready, gpus)) = self.status else {
            return false;
        };
        let want_ready = self.truth.values().filter(|e| e.ready).count() as u32;
        let want_gpus: u64 = self.truth.values().map(|e| e.count).sum();
        total as usize == self.truth.len()
            && ready == want_ready
            && gpus == want_gpus
            && self.status_entries.len() == self.truth.len()
            && self.cm.len() == self.truth.len()
            && self.truth.iter().all(|(name, want)| {
                self.status_entries.get(name) == Some(want) && self.cm.get(name) == Some(want)
            })
    }

    fn settle_pending(&mut self, now: Instant) {
        let truth = &self.truth;
        let status = &self.status_entries;
        let cm = &self.cm;
        for (name, p) in self.pending.iter_mut() {
            let want = truth.get(name);
            if p.status_at.is_none() && status.get(name) == want {
                p.status_at = Some(now);
            }
            if p.cm_at.is_none() && cm.get(name) == want {
                p.cm_at = Some(now);
            }
        }
        self.finish_pending();
    }

    fn finish_pending(&mut self) {
        let done: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| p.written.is_some() && p.status_at.is_some() && p.cm_at.is_some())
            .map(|(n, _)| n.clone())
            .collect();
        for name in done {
            let p = self.pending.remove(&name).expect("pending");
            let seen = p.status_at.unwrap().max(p.cm_at.unwrap());
            self.latencies
                .push(seen.saturating_duration_since(p.written.unwrap()));
        }
    }
}

struct Observer {
    obs: Arc<Mutex<Obs>>,
    changed: watch::Receiver<u64>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Observer {
    fn start(
        client: &Client,
        inventory: &str,
        namespace: &str,
        truth: HashMap<String, GpuNodeEntry>,
    ) -> Self {
        let obs = Arc::new(Mutex::new(Obs {
            truth,
            ..Default::default()
        }));
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let inv_api: Api<GpuInventory> = Api::all(client.clone());
        let inv_cfg = watcher::Config::default().fields(&format!("metadata.name={inventory}"));
        let (o, t) = (obs.clone(), tx.clone());
        let inv_task = tokio::spawn(async move {
            let mut events = watcher(inv_api, inv_cfg).boxed();
            while let Some(event) = events.next().await {
                let now = Instant::now();
                let inventory = match event {
                    Ok(watcher::Event::Apply(i) | watcher::Event::InitApply(i)) => i,
                    Ok(_) => continue,
                    Err(e) => {
                        log(format!("inventory watch: {e}"));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let Some(status) = inventory.status else {
                    continue;
                };
                let mut obs = o.lock().unwrap();
                obs.status = Some((
                    status.total_gpu_nodes,
                    status.ready_gpu_nodes,
                    status.total_gpus,
                ));
                obs.status_entries = status
                    .nodes
                    .into_iter()
                    .map(|e| (e.name.clone(), e))
                    .collect();
                obs.settle_pending(now);
                drop(obs);
                t.send_modify(|n| *n += 1);
            }
        });
        let cm_api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let cm_cfg = watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP}"));
        let (o, t) = (obs.clone(), tx.clone());
        let cm_task = tokio::spawn(async move {
            let mut events = watcher(cm_api, cm_cfg).boxed();
            while let Some(event) = events.next().await {
                let now = Instant::now();
                let cm = match event {
                    Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => c,
                    Ok(_) => continue,
                    Err(e) => {
                        log(format!("configmap watch: {e}"));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                let entries: HashMap<String, GpuNodeEntry> = cm
                    .data
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|(k, _)| !k.starts_with('_'))
                    .filter_map(|(k, v)| serde_json::from_str(&v).ok().map(|e| (k, e)))
                    .collect();
                let mut obs = o.lock().unwrap();
                obs.cm = entries;
                obs.settle_pending(now);
                drop(obs);
                t.send_modify(|n| *n += 1);
            }
        });
        Observer {
            obs,
            changed: rx,
            tasks: vec![inv_task, cm_task],
        }
    }

    /// Waits until `cond` holds (checked after every watch event); returns false on timeout.
    async fn wait_for(&mut self, timeout: Duration, cond: impl Fn(&Obs) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if cond(&self.obs.lock().unwrap()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, self.changed.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return cond(&self.obs.lock().unwrap()),
            }
        }
    }

    fn stop(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

// ------------------------------------------------------------------------------------- changes --

/// The driver's copies of the GPU nodes, and the writes that change them.
struct Changer {
    api: Api<Node>,
    nodes: BTreeMap<String, Node>,
    names: Vec<String>,
    next: usize,
    memory: u64,
}

#[derive(Clone, Copy)]
enum ChangeKind {
    Label,
    Ready,
}

impl Changer {
    fn new(client: &Client, nodes: BTreeMap<String, Node>) -> Self {
        let names = nodes.keys().cloned().collect();
        Changer {
            api: Api::all(client.clone()),
            nodes,
            names,
            next: 0,
            memory: 100_000,
        }
    }

    /// The next GPU node (round robin) that has no change in flight.
    fn pick(&mut self, busy: impl Fn(&str) -> bool) -> Option<String> {
        for _ in 0..self.names.len() {
            let name = &self.names[self.next % self.names.len()];
            self.next += 1;
            if !busy(name) {
                return Some(name.clone());
            }
        }
        None
    }

    /// Applies the change to the local copy; returns the new expected entry and the request to send.
    fn prepare(&mut self, name: &str, kind: ChangeKind) -> (GpuNodeEntry, Request) {
        let node = self.nodes.get_mut(name).expect("known node");
        let request = match kind {
            ChangeKind::Label => {
                self.memory += 1;
                let value = self.memory.to_string();
                node.metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .insert(MEMORY_LABEL.into(), value.clone());
                Request::Label(name.to_owned(), value)
            }
            ChangeKind::Ready => {
                let ready = !is_ready(node);
                let at = Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
                let status = node.status.get_or_insert_with(Default::default);
                set_ready(status.conditions.get_or_insert_with(Vec::new), ready, &at);
                let condition = status
                    .conditions
                    .as_ref()
                    .unwrap()
                    .iter()
                    .find(|c| c.type_ == "Ready")
                    .unwrap()
                    .clone();
                Request::Ready(name.to_owned(), condition)
            }
        };
        (scan_node(node).expect("still a GPU node"), request)
    }
}

enum Request {
    Label(String, String),
    Ready(String, NodeCondition),
}

async fn send(api: &Api<Node>, request: Request) -> Res<()> {
    match request {
        Request::Label(name, value) => {
            let patch = json!({ "metadata": { "labels": { MEMORY_LABEL: value } } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Request::Ready(name, condition) => {
            let patch = json!({ "status": { "conditions": [condition] } });
            api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await?;
        }
    }
    Ok(())
}

/// Sends label changes to GPU nodes: `total` of them, at `rate` per second (0: as fast as 16 in flight go).
async fn label_changes(
    changer: &mut Changer,
    observer: &Observer,
    total: usize,
    rate: u64,
) -> Res<usize> {
    let mut requests = Vec::with_capacity(total);
    {
        let mut obs = observer.obs.lock().unwrap();
        for _ in 0..total {
            let name = changer.pick(|_| false).expect("GPU nodes");
            let (entry, request) = changer.prepare(&name, ChangeKind::Label);
            obs.truth.insert(name, entry);
            requests.push(request);
        }
    }
    let api = changer.api.clone();
    if let Some(period_us) = 1_000_000u64.checked_div(rate) {
        // Open loop: one write every 1/rate s, whatever the previous writes' latency.
        let mut tick = tokio::time::interval(Duration::from_micros(period_us));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let mut inflight = tokio::task::JoinSet::new();
        for request in requests {
            tick.tick().await;
            let api = api.clone();
            inflight.spawn(async move { send(&api, request).await });
        }
        while let Some(joined) = inflight.join_next().await {
            joined??;
        }
    } else {
        futures::stream::iter(requests)
            .map(|r| send(&api, r))
            .buffer_unordered(16)
            .try_collect::<()>()
            .await?;
    }
    Ok(total)
}

/// Reaction latency: `count` changes, alternating a label change and a Ready flip, each on a node with no
/// change in flight. The next change goes out when the previous one is visible or after `gap`.
async fn latency_run(
    changer: &mut Changer,
    observer: &mut Observer,
    count: usize,
    gap: Duration,
    settle: Duration,
) -> Res<(Vec<Duration>, usize)> {
    observer.obs.lock().unwrap().latencies.clear();
    for i in 0..count {
        let kind = if i % 2 == 0 {
            ChangeKind::Label
        } else {
            ChangeKind::Ready
        };
        // Pick a node and register the expectation before the write, so an early watch event is not missed.
        let (name, request) = loop {
            let picked = {
                let mut obs = observer.obs.lock().unwrap();
                let busy: Vec<String> = obs.pending.keys().cloned().collect();
                changer.pick(|n| busy.iter().any(|b| b == n)).map(|name| {
                    let (entry, request) = changer.prepare(&name, kind);
                    obs.truth.insert(name.clone(), entry);
                    obs.pending.insert(
                        name.clone(),
                        Pending {
                            written: None,
                            status_at: None,
                            cm_at: None,
                        },
                    );
                    (name, request)
                })
            };
            match picked {
                Some(p) => break p,
                None => {
                    observer.wait_for(Duration::from_secs(1), |_| false).await;
                }
            }
        };
        send(&changer.api, request).await?;
        let written = Instant::now();
        {
            let mut obs = observer.obs.lock().unwrap();
            if let Some(p) = obs.pending.get_mut(&name) {
                p.written = Some(written);
            }
            obs.settle_pending(written);
        }
        let target = name.clone();
        observer
            .wait_for(gap, move |o| !o.pending.contains_key(&target))
            .await;
        // Independent changes, not a burst: a short pause between them.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    observer.wait_for(settle, |o| o.pending.is_empty()).await;
    let mut obs = observer.obs.lock().unwrap();
    let lost = obs.pending.len();
    obs.pending.clear();
    Ok((std::mem::take(&mut obs.latencies), lost))
}

// ------------------------------------------------------------------------------ process and audit --

fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime + stime of `pid`, in seconds.
fn cpu_secs(pid: u32, ticks: f64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (get(11) + get(12)) / ticks
}

/// VmHWM (peak RSS) of `pid`, in MiB.
fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

fn audit_offset(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Requests by `verb resource[/subresource]` made by user agents starting with `ua_prefix`, received in
/// [from, to]. Each request counts once: its ResponseComplete line, or for a watch its ResponseStarted line.
fn audit_counts(
    path: &std::path::Path,
    offset: u64,
    ua_prefix: &str,
    from: Timestamp,
    to: Timestamp,
) -> BTreeMap<String, u64> {
    use std::io::{BufRead, Seek};
    let mut counts = BTreeMap::new();
    let Ok(mut file) = std::fs::File::open(path) else {
        return counts;
    };
    let _ = file.seek(std::io::SeekFrom::Start(offset));
    for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
        if !line.contains(ua_prefix) {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if !v["userAgent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with(ua_prefix))
        {
            continue;
        }
        let verb = v["verb"].as_str().unwrap_or("?");
        let stage = v["stage"].as_str().unwrap_or("?");
        let counted = match stage {
            "ResponseStarted" => verb == "watch",
            "ResponseComplete" => verb != "watch",
            "Panic" => true,
            _ => false,
        };
        if !counted {
            continue;
        }
        let Some(at) = v["requestReceivedTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
        else {
            continue;
        };
        if at < from || at > to {
            continue;
        }
        let resource = match (
            v["objectRef"]["resource"].as_str(),
            v["objectRef"]["subresource"].as_str(),
        ) {
            (Some(r), Some(s)) => format!("{r}/{s}"),
            (Some(r), None) => r.to_owned(),
            _ => v["requestURI"]
                .as_str()
                .unwrap_or("?")
                .split('?')
                .next()
                .unwrap_or("?")
                .to_owned(),
        };
        *counts.entry(format!("{verb} {resource}")).or_insert(0) += 1;
    }
    counts
}

fn is_write(key: &str) -> bool {
    [
        "create ",
        "update ",
        "patch ",
        "delete ",
        "deletecollection ",
    ]
    .iter()
    .any(|v| key.starts_with(v))
}

fn writes_to_outputs(counts: &BTreeMap<String, u64>) -> u64 {
    counts
        .iter()
        .filter(|(k, _)| {
            is_write(k) && (k.ends_with(" configmaps") || k.ends_with(" gpuinventories/status"))
        })
        .map(|(_, v)| v)
        .sum()
}

fn count_where(counts: &BTreeMap<String, u64>, pred: impl Fn(&str) -> bool) -> u64 {
    counts.iter().filter(|(k, _)| pred(k)).map(|(_, v)| v).sum()
}

fn spawn_program(
    s: &Settings,
    program: Program,
    namespace: &str,
    inventory: &str,
    log_path: &std::path::Path,
) -> Res<Child> {
    let log_file = std::fs::File::create(log_path)?;
    let mut cmd = match program {
        Program::Operator => {
            let mut c = Command::new(&s.operator_bin);
            c.arg("run");
            // The metrics endpoint is off so the bench never collides with a test's operator on 8080.
            c.env("GPUINV_METRICS_ADDR", "");
            c
        }
        Program::Baseline => Command::new(&s.baseline_bin),
    };
    cmd.arg("--kubeconfig")
        .arg(&s.kubeconfig)
        .arg("--namespace")
        .arg(namespace)
        .arg("--default-inventory")
        .arg(inventory)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file);
    Ok(cmd.spawn()?)
}

fn stop_program(child: &mut Child) {
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    for _ in 0..100 {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

// ------------------------------------------------------------------------------------------ a run --

async fn bench_one(
    client: &Client,
    s: &Settings,
    templates: &Templates,
    n: usize,
    program: Program,
    ticks: f64,
) -> Res<Value> {
    let tag = format!("{}-{n}", program.name());
    let stamp = Timestamp::now().as_second();
    let namespace = format!("bench-{tag}-{stamp}");
    let inventory = format!("bench-{tag}");
    log(format!(
        "=== {tag}: cleaning up, creating namespace {namespace} and {n} nodes"
    ));
    delete_bench_nodes(client).await?;
    let inventories: Api<GpuInventory> = Api::all(client.clone());
    let _ = inventories
        .delete(&inventory, &DeleteParams::default())
        .await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({ "metadata": { "name": namespace } }))?,
        )
        .await?;
    let create_time = create_nodes(client, templates, n, s.node_images).await?;
    log(format!(
        "{tag}: created {n} nodes in {:.1}s",
        create_time.as_secs_f64()
    ));

    // What the scanner says about the nodes as the API server stores them.
    let nodes_api: Api<Node> = Api::all(client.clone());
    let listed = nodes_api
        .list(&ListParams::default().labels(&format!("{BENCH_LABEL}=true")))
        .await?;
    let mut gpu_nodes = BTreeMap::new();
    let mut truth = HashMap::new();
    for node in listed.items {
        if let Some(entry) = scan_node(&node) {
            truth.insert(entry.name.clone(), entry);
            gpu_nodes.insert(node.name_any(), node);
        }
    }
    let gpu_count = truth.len();
    let ready_count = truth.values().filter(|e| e.ready).count();
    log(format!(
        "{tag}: {gpu_count} GPU nodes ({ready_count} Ready)"
    ));
    let mut observer = Observer::start(client, &inventory, &namespace, truth);
    let mut changer = Changer::new(client, gpu_nodes);

    // -- start-up
    std::fs::create_dir_all(&s.log_dir)?;
    let audit_start = audit_offset(&s.audit_log);
    let t0_wall = Timestamp::now();
    let t0 = Instant::now();
    let mut child = spawn_program(
        s,
        program,
        &namespace,
        &inventory,
        &s.log_dir.join(format!("{tag}.log")),
    )?;
    let pid = child.id();
    let result = async {
        let converged = observer.wait_for(s.settle, Obs::converged).await;
        let converge_secs = t0.elapsed().as_secs_f64();
        if !converged {
            return Err(BoxError::from(format!("{tag}: not converged after {}s (see {}/{tag}.log)", s.settle.as_secs(), s.log_dir.display())));
        }
        log(format!("{tag}: converged in {converge_secs:.2}s"));
        let rss_converged = peak_rss_mib(pid);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let startup_end = Timestamp::now();
        let startup = audit_counts(&s.audit_log, audit_start, program.user_agent_prefix(), t0_wall, startup_end);

        // -- quiet period
        log(format!("{tag}: quiet period {}s", s.quiet_secs));
        let quiet_offset = audit_offset(&s.audit_log);
        let quiet_from = Timestamp::now();
        let cpu_before = cpu_secs(pid, ticks);
        tokio::time::sleep(Duration::from_secs(s.quiet_secs)).await;
        let quiet_cpu = cpu_secs(pid, ticks) - cpu_before;
        let quiet_to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let quiet = audit_counts(&s.audit_log, quiet_offset, program.user_agent_prefix(), quiet_from, quiet_to);

        // -- reaction latency
        log(format!("{tag}: {} single-node changes", s.changes));
        let latency_from = Instant::now();
        let (latencies, lost) = latency_run(&mut changer, &mut observer, s.changes, s.change_gap, s.settle).await?;
        let latency_secs = latency_from.elapsed().as_secs_f64();
        let mut ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
        ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if !observer.wait_for(s.settle, Obs::converged).await {
            log(format!("{tag}: WARNING not converged after the latency changes"));
        }

        // -- churn
        log(format!("{tag}: churn {}/s for {}s", s.churn_rate, s.churn_secs));
        let churn_offset = audit_offset(&s.audit_log);
        let churn_from = Timestamp::now();
        let cpu_before = cpu_secs(pid, ticks);
        let churn_t0 = Instant::now();
        let churn_changes = label_changes(&mut changer, &observer, (s.churn_rate * s.churn_secs) as usize, s.churn_rate).await?;
        let churn_send_secs = churn_t0.elapsed().as_secs_f64();
        let churn_converged = observer.wait_for(s.settle, Obs::converged).await;
        let churn_settle_secs = churn_t0.elapsed().as_secs_f64() - churn_send_secs;
        let churn_cpu = cpu_secs(pid, ticks) - cpu_before;
        let churn_to = Timestamp::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let churn = audit_counts(&s.audit_log, churn_offset, program.user_agent_prefix(), churn_from, churn_to);
        if !churn_converged {
            log(format!("{tag}: WARNING not converged after churn"));
        }

        // -- burst of label changes, then peak RSS
        log(format!("{tag}: {} label changes (burst)", s.burst_changes));
        let burst_t0 = Instant::now();
        label_changes(&mut changer, &observer, s.burst_changes, 0).await?;
        let burst_converged = observer.wait_for(s.settle, Obs::converged).await;
        let burst_secs = burst_t0.elapsed().as_secs_f64();
        let rss_after = peak_rss_mib(pid);
        let total_cpu = cpu_secs(pid, ticks);
        let alive = matches!(child.try_wait(), Ok(None));

        let quiet_writes = count_where(&quiet, is_write);
        let quiet_lists = count_where(&quiet, |k| k.starts_with("list "));
        let churn_writes = writes_to_outputs(&churn);
        log(format!(
            "{tag}: converge {converge_secs:.2}s, rss {rss_converged:.1}/{rss_after:.1} MiB, p50/p99 {:.0}/{:.0} ms, quiet writes {quiet_writes} lists {quiet_lists}, churn writes {churn_writes} cpu {churn_cpu:.2}s",
            percentile(&ms, 50.0), percentile(&ms, 99.0)
        ));
        Ok(json!({
            "program": program.name(),
            "nodes": n,
            "gpu_nodes": gpu_count,
            "gpu_nodes_ready": ready_count,
            "node_create_secs": create_time.as_secs_f64(),
            "converge_secs": converge_secs,
            "rss_converged_mib": rss_converged,
            "rss_after_burst_mib": rss_after,
            "burst": { "changes": s.burst_changes, "converged": burst_converged, "secs": burst_secs },
            "latency_ms": {
                "changes": s.changes, "measured": ms.len(), "lost": lost, "run_secs": latency_secs,
                "min": ms.first().copied().unwrap_or(f64::NAN),
                "p50": percentile(&ms, 50.0), "p95": percentile(&ms, 95.0), "p99": percentile(&ms, 99.0),
                "max": ms.last().copied().unwrap_or(f64::NAN),
            },
            "startup_requests": startup,
            "quiet": {
                "secs": s.quiet_secs, "requests": quiet, "writes": quiet_writes, "lists": quiet_lists, "cpu_secs": quiet_cpu,
            },
            "churn": {
                "rate_per_sec": s.churn_rate, "secs": s.churn_secs, "changes": churn_changes,
                "send_secs": churn_send_secs, "settle_secs": churn_settle_secs, "converged": churn_converged,
                "cpu_secs": churn_cpu, "writes": churn_writes, "requests": churn,
            },
            "total_cpu_secs": total_cpu,
            "alive_at_end": alive,
        }))
    }
    .await;
    stop_program(&mut child);
    observer.stop();
    log(format!(
        "{tag}: stopped; deleting nodes, namespace and inventory"
    ));
    let _ = inventories
        .delete(&inventory, &DeleteParams::default())
        .await;
    let _ = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await; // never finishes (no controller-manager)
    delete_bench_nodes(client).await?;
    result
}

// --------------------------------------------------------------------------------------- report --

fn f(v: &Value, path: &[&str]) -> f64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_f64().unwrap_or(f64::NAN)
}

fn table(results: &[Value], s: &Settings) -> String {
    let rows: [(&str, Vec<&str>, &str); 14] = [
        ("converged after start (s)", vec!["converge_secs"], "{:.2}"),
        (
            "peak RSS after convergence (MiB)",
            vec!["rss_converged_mib"],
            "{:.1}",
        ),
        (
            "peak RSS after +1,000 changes (MiB)",
            vec!["rss_after_burst_mib"],
            "{:.1}",
        ),
        ("latency p50 (ms)", vec!["latency_ms", "p50"], "{:.0}"),
        ("latency p95 (ms)", vec!["latency_ms", "p95"], "{:.0}"),
        ("latency p99 (ms)", vec!["latency_ms", "p99"], "{:.0}"),
        ("latency min..max (ms)", vec!["latency_ms", "min"], "range"),
        (
            "changes not seen (of BENCH_CHANGES)",
            vec!["latency_ms", "lost"],
            "{:.0}",
        ),
        ("quiet: writes", vec!["quiet", "writes"], "{:.0}"),
        ("quiet: LISTs", vec!["quiet", "lists"], "{:.0}"),
        ("quiet: CPU s", vec!["quiet", "cpu_secs"], "{:.2}"),
        ("churn: CPU s", vec!["churn", "cpu_secs"], "{:.2}"),
        (
            "churn: status+ConfigMap writes",
            vec!["churn", "writes"],
            "{:.0}",
        ),
        (
            "total requests at start-up",
            vec!["startup_requests"],
            "sum",
        ),
    ];
    let mut out = String::new();
    out.push_str(&format!(
        "gpu-inventory-operator bench ({} cores; quiet {}s, churn {}/s for {}s, {} latency changes)\n",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        s.quiet_secs,
        s.churn_rate,
        s.churn_secs,
        s.changes
    ));
    let mut ns: Vec<u64> = results.iter().filter_map(|r| r["nodes"].as_u64()).collect();
    ns.dedup();
    for n in ns {
        let get = |p: &str| {
            results
                .iter()
                .find(|r| r["nodes"].as_u64() == Some(n) && r["program"] == p)
        };
        let (op, base) = (get("operator"), get("baseline"));
        out.push_str(&format!(
            "\n{n} nodes\n{:<40} {:>12} {:>12} {:>9}\n",
            "", "operator", "baseline", "ratio"
        ));
        for (label, path, fmt) in &rows {
            let value = |r: Option<&Value>| -> (f64, String) {
                let Some(r) = r else {
                    return (f64::NAN, "-".into());
                };
                match *fmt {
                    "range" => (
                        f64::NAN,
                        format!(
                            "{:.0}..{:.0}",
                            f(r, &["latency_ms", "min"]),
                            f(r, &["latency_ms", "max"])
                        ),
                    ),
                    "sum" => {
                        let total: u64 = r["startup_requests"]
                            .as_object()
                            .map(|m| m.values().filter_map(Value::as_u64).sum())
                            .unwrap_or(0);
                        (total as f64, total.to_string())
                    }
                    _ => {
                        let v = f(r, path);
                        let text = match *fmt {
                            "{:.2}" => format!("{v:.2}"),
                            "{:.1}" => format!("{v:.1}"),
                            _ => format!("{v:.0}"),
                        };
                        (v, text)
                    }
                }
            };
            let (a, at) = value(op);
            let (b, bt) = value(base);
            let ratio = if a.is_finite() && b.is_finite() && b != 0.0 {
                format!("{:.3}", a / b)
            } else {
                "-".into()
            };
            out.push_str(&format!("{label:<40} {at:>12} {bt:>12} {ratio:>9}\n"));
        }
        for (name, r) in [("operator", op), ("baseline", base)] {
            if let Some(r) = r {
                out.push_str(&format!(
                    "  {name} requests at start-up: {}\n",
                    compact(&r["startup_requests"])
                ));
                out.push_str(&format!(
                    "  {name} requests in quiet period: {}\n",
                    compact(&r["quiet"]["requests"])
                ));
                out.push_str(&format!(
                    "  {name} requests in churn: {}\n",
                    compact(&r["churn"]["requests"])
                ));
            }
        }
    }
    out
}

fn compact(v: &Value) -> String {
    match v.as_object() {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
        _ => "none".into(),
    }
}

#[tokio::main]
async fn main() -> Res<()> {
    let s = Settings::from_env();
    let mut config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&s.kubeconfig)?,
        &KubeConfigOptions::default(),
    )
    .await?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(DRIVER_UA),
    ));
    let client = Client::try_from(config)?;
    let templates = load_templates(&s.fixtures)?;
    log(format!(
        "{} GPU and {} CPU node templates from {}",
        templates.gpu.len(),
        templates.cpu.len(),
        s.fixtures.display()
    ));
    // The CRD is installed once, up front, so neither program pays for its establishment at start-up.
    gpu_inventory_operator::publish::crd::install_crd(&client, Duration::from_secs(60)).await?;
    let ticks = clock_ticks();
    let started = Timestamp::now();
    let mut results = Vec::new();
    let mut failures = Vec::new();
    for &n in &s.nodes {
        for &program in &s.programs {
            match bench_one(&client, &s, &templates, n, program, ticks).await {
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
    let host = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|c| {
        c.lines().find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
    });
    let doc = json!({
        "started": started.to_string(),
        "finished": Timestamp::now().to_string(),
        "machine": { "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0), "cpu_model": host },
        "settings": {
            "nodes": s.nodes, "quiet_secs": s.quiet_secs, "churn_secs": s.churn_secs, "churn_rate": s.churn_rate,
            "changes": s.changes, "burst_changes": s.burst_changes, "change_gap_ms": s.change_gap.as_millis() as u64,
            "node_images": s.node_images,
        },
        "results": results,
        "failures": failures,
    });
    if let Some(dir) = s.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&s.out, serde_json::to_string_pretty(&doc)?)?;
    let text = table(&results, &s);
    std::fs::write(&s.table, &text)?;
    log(format!(
        "results: {}, table: {}",
        s.out.display(),
        s.table.display()
    ));
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} run(s) failed", failures.len()).into())
    }
}
