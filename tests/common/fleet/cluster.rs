//! More clusters for the multi-cluster tests: each [`ExtraCluster`] is etcd + kube-apiserver of its own, started by
//! hack/local-cluster.sh in a state dir of its own (`target/fleet-clusters/<name>-p<pid>-<n>`), and its GPU nodes.
//!
//! Why only the API server (`LOCAL_CLUSTER_COMPONENTS=apiserver`): what the multi-cluster code reads is what the
//! API server holds, and the tests decide it. Without kube-controller-manager nobody marks a node Unknown or
//! taints it, and without KWOK nobody rewrites its status: a node stays Ready or NotReady as the test wrote it,
//! with no grace period to wait out. It also starts in about 4 s (etcd + API server, no controllers to elect).
//! That mode turns the ServiceAccount and TaintNodesByCondition admission plugins off (nothing would create the
//! ServiceAccounts or lift the taint), so these clusters take no pods.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::{Value, json};

use crate::common::allocation::node;

/// One more cluster, for one test: its own etcd and kube-apiserver on free loopback ports, admin credentials
/// (`system:masters`). Taken down, state dir and all, when dropped (also after a panic).
pub struct ExtraCluster {
    /// The name the test gave ([`up`](Self::up)'s argument); the state dir's name adds the process and a count.
    pub name: String,
    /// Its kubeconfig (context, cluster and user all named `local-cluster`, as every cluster of the script's:
    /// [`write_fleet_kubeconfig`](super::write_fleet_kubeconfig) renames them).
    pub kubeconfig: PathBuf,
    /// An admin client for it.
    pub client: Client,
    /// Its state dir (logs, args, certificates, audit log), unique to this process and call.
    pub state_dir: PathBuf,
    /// Runs `down` when dropped; last, so the client goes first.
    _down: Down,
}

impl ExtraCluster {
    /// Starts a new cluster. Panics with the script's output when it fails. K8S_VERSION, KUBEBUILDER_ASSETS and
    /// GPUINV_CACHE_DIR pass through from the environment (same version and binaries as the test cluster); the
    /// other LOCAL_CLUSTER_* variables, which are the test cluster's, do not (but LOCAL_CLUSTER_READY_TIMEOUT).
    pub async fn up(name: &str) -> ExtraCluster {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let unique = format!(
            "{name}-p{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        );
        let state_dir = clusters_dir().join(&unique);
        let started = Instant::now();
        let down = Down(state_dir.clone());
        let dir = state_dir.clone();
        let out = tokio::task::spawn_blocking(move || {
            reap_orphans();
            script("up", &dir).output()
        })
        .await
        .expect("the blocking task of hack/local-cluster.sh up")
        .expect("run hack/local-cluster.sh up");
        assert!(
            out.status.success(),
            "hack/local-cluster.sh up for the extra cluster {unique} failed ({}):\n{}",
            out.status,
            output_tail(&out, 40)
        );
        let kubeconfig = state_dir.join("kubeconfig");
        let config = Kubeconfig::read_from(&kubeconfig)
            .unwrap_or_else(|e| panic!("reading {}: {e}", kubeconfig.display()));
        let config = Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
            .await
            .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", kubeconfig.display()));
        let client = Client::try_from(config).expect("a client for the extra cluster");
        eprintln!(
            "extra cluster {unique} up in {} ms",
            started.elapsed().as_millis()
        );
        ExtraCluster {
            name: name.to_owned(),
            kubeconfig,
            client,
            state_dir,
            _down: down,
        }
    }

    /// Its API server's URL (`https://127.0.0.1:PORT`).
    pub fn server(&self) -> String {
        let port = std::fs::read_to_string(self.state_dir.join("kube-apiserver.port"))
            .expect("the extra cluster's kube-apiserver.port");
        format!("https://127.0.0.1:{}", port.trim())
    }
}

/// Takes a cluster down when dropped: `down` (ignoring its failure), then the lock file beside the state dir.
struct Down(PathBuf);

impl Drop for Down {
    fn drop(&mut self) {
        down(&self.0);
    }
}

fn down(state_dir: &Path) {
    let _ = script("down", state_dir).output();
    if let (Some(parent), Some(name)) = (state_dir.parent(), state_dir.file_name()) {
        let _ = std::fs::remove_file(parent.join(format!(".{}.lock", name.to_string_lossy())));
    }
}

/// Where the extra clusters' state dirs live.
fn clusters_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fleet-clusters")
}

/// `hack/local-cluster.sh <verb>` for the cluster in `state_dir`, apiserver-only.
fn script(verb: &str, state_dir: &Path) -> Command {
    let mut command =
        Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/local-cluster.sh"));
    command.arg(verb);
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("LOCAL_CLUSTER_") && key != "LOCAL_CLUSTER_READY_TIMEOUT" {
            command.env_remove(&*key);
        }
    }
    command
        .env("LOCAL_CLUSTER_STATE_DIR", state_dir)
        .env("LOCAL_CLUSTER_COMPONENTS", "apiserver");
    command
}

/// Takes down the clusters of test processes that died without dropping theirs (killed, timed out): their
/// etcd and kube-apiserver run in sessions of their own and would outlive them.
fn reap_orphans() {
    let Ok(entries) = std::fs::read_dir(clusters_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .rsplit_once("-p")
            .and_then(|(_, rest)| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && entry.path().is_dir()
            && pid != std::process::id()
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            down(&entry.path());
        }
    }
}

/// The last `lines` lines of a command's stdout and stderr.
fn output_tail(out: &Output, lines: usize) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Now, as the API server writes times (RFC 3339, whole seconds).
pub(super) fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// A Ready or NotReady condition as a kubelet reports it, heartbeat and transition now.
fn ready_condition(ready: bool) -> Value {
    let (status, reason, message) = if ready {
        ("True", "KubeletReady", "kubelet is posting ready status")
    } else {
        ("False", "KubeletNotReady", "set NotReady by the test")
    };
    let now = now();
    json!({ "type": "Ready", "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": now })
}

/// Creates a Ready GPU node as GPU Feature Discovery and the device plugin describe one: labels
/// `nvidia.com/gpu.product`, `.count`, `.present=true` and `labels`; capacity and allocatable `nvidia.com/gpu`
/// `gpus` plus cpu, memory and pods (as [`node`](crate::common::allocation::node) makes them). The status is
/// written through the status subresource after the create, as a kubelet does. Nothing changes it afterwards.
pub async fn add_gpu_node(
    client: &Client,
    name: &str,
    product: &str,
    gpus: u64,
    labels: &[(&str, &str)],
) {
    let mut all = json!({
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": gpus.to_string(),
        "nvidia.com/gpu.present": "true",
    });
    for (key, value) in labels {
        all[*key] = json!(value);
    }
    let gpus = gpus.to_string();
    let mut object = node(name, all, &[("nvidia.com/gpu", gpus.as_str())]);
    let mut status = serde_json::to_value(object.status.take()).expect("node status as JSON");
    status["conditions"] = json!([ready_condition(true)]);
    let nodes: Api<Node> = Api::all(client.clone());
    nodes
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating node {name}: {e}"));
    nodes
        .patch_status(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await
        .unwrap_or_else(|e| panic!("writing the status of node {name}: {e}"));
}

/// Sets a node's Ready condition to True or False (heartbeat and transition now) through the status
/// subresource. A strategic merge patch: conditions merge by `type`, so the node keeps exactly one Ready
/// condition and its others.
pub async fn set_ready(client: &Client, name: &str, ready: bool) {
    let body = json!({ "status": { "conditions": [ready_condition(ready)] } });
    Api::<Node>::all(client.clone())
        .patch_status(name, &PatchParams::default(), &Patch::Strategic(body))
        .await
        .unwrap_or_else(|e| panic!("setting Ready={ready} on node {name}: {e}"));
}
