//! Which cluster the tests use (GPUINV_TEST_KUBECONFIG, else the local control plane), a client for it,
//! kubeconfigs derived from it, the local control plane's commands, and the APIs a test needs it to serve.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// Path of the kubeconfig the tests use.
pub fn kubeconfig_path() -> PathBuf {
    match std::env::var_os("GPUINV_TEST_KUBECONFIG") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => local_cluster_dir().join("kubeconfig"),
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
/// catch up with it afterwards ([`ClusterPeriods::after_restart`](super::cluster_periods::ClusterPeriods::after_restart)).
pub(super) static API_SERVER_STARTED: std::sync::Mutex<Option<Instant>> =
    std::sync::Mutex::new(None);

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

/// The state directory of the test cluster when hack/local-cluster.sh made it (the local cluster, or one of
/// its other state directories named by GPUINV_TEST_KUBECONFIG): its kubeconfig's directory, which holds the
/// components' arguments.
pub fn cluster_state_dir() -> Option<PathBuf> {
    let dir = kubeconfig_path().parent()?.to_path_buf();
    dir.join("kube-apiserver.args").exists().then_some(dir)
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
