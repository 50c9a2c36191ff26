//! The kubeconfig the multi-cluster plugin reads: one context per cluster, each with its own cluster and user
//! entries, plus contexts whose servers cannot be reached; and [`SilentServer`], a server that never answers.

use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use kube::config::{
    AuthInfo, Cluster, Context, Kubeconfig, NamedAuthInfo, NamedCluster, NamedContext,
};
use serde_json::json;
use tokio::net::TcpListener;

/// Writes one kubeconfig (JSON, which every kubeconfig reader takes; mode 0600) at `path` with these contexts:
///
/// - for each `(context, source)` of `contexts`, the current context of the kubeconfig `source`: its cluster and
///   user copied under the name `context` (every cluster of hack/local-cluster.sh calls its context, cluster and
///   user `local-cluster...`: renamed, they cannot collide), its namespace kept. Certificates must be inline
///   (`*-data`, as the script writes them): a file path relative to `source` would not resolve from `path`.
/// - for each `(context, server)` of `unreachable`, a cluster at `server` (`insecure-skip-tls-verify: true`, so
///   only the connection can fail) with a user of its own holding a bearer token.
///
/// `current-context` is the first of `contexts` (else of `unreachable`).
pub fn write_fleet_kubeconfig(
    path: &Path,
    contexts: &[(&str, &Path)],
    unreachable: &[(&str, &str)],
) {
    let mut fleet = Kubeconfig {
        api_version: Some("v1".into()),
        kind: Some("Config".into()),
        ..Kubeconfig::default()
    };
    for (name, source) in contexts {
        let config = Kubeconfig::read_from(source)
            .unwrap_or_else(|e| panic!("reading kubeconfig {}: {e}", source.display()));
        let current = config
            .current_context
            .as_deref()
            .unwrap_or_else(|| panic!("{} has no current-context", source.display()));
        let context = config
            .contexts
            .iter()
            .find(|c| c.name == current)
            .and_then(|c| c.context.clone())
            .unwrap_or_else(|| panic!("{}: no context {current}", source.display()));
        let cluster = config
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .and_then(|c| c.cluster.clone())
            .unwrap_or_else(|| panic!("{}: no cluster {}", source.display(), context.cluster));
        let user = context.user.as_deref().map(|user| {
            config
                .auth_infos
                .iter()
                .find(|a| a.name == user)
                .and_then(|a| a.auth_info.clone())
                .unwrap_or_else(|| panic!("{}: no user {user}", source.display()))
        });
        push(&mut fleet, name, cluster, user, context.namespace);
    }
    for (name, server) in unreachable {
        let cluster = Cluster {
            server: Some((*server).to_owned()),
            insecure_skip_tls_verify: Some(true),
            ..Cluster::default()
        };
        // `token` is a secrecy::SecretString, a crate the tests do not name: built from its serialized form.
        let user: AuthInfo = serde_json::from_value(json!({ "token": "gpuinv-fleet-unreachable" }))
            .expect("a token user");
        push(&mut fleet, name, cluster, Some(user), None);
    }
    fleet.current_context = contexts
        .first()
        .map(|(name, _)| *name)
        .or_else(|| unreachable.first().map(|(name, _)| *name))
        .map(str::to_owned);
    let body = serde_json::to_vec_pretty(&fleet).expect("the kubeconfig as JSON");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    // `mode` applies only to a new file: an older one keeps its bits unless set again.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))
        .expect("kubeconfig mode 0600");
    file.write_all(&body)
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// Adds a context `name` with a cluster and a user both called `name`.
fn push(
    fleet: &mut Kubeconfig,
    name: &str,
    cluster: Cluster,
    user: Option<AuthInfo>,
    namespace: Option<String>,
) {
    fleet.clusters.push(NamedCluster {
        name: name.to_owned(),
        cluster: Some(cluster),
        ..NamedCluster::default()
    });
    fleet.auth_infos.push(NamedAuthInfo {
        name: name.to_owned(),
        auth_info: user,
        ..NamedAuthInfo::default()
    });
    fleet.contexts.push(NamedContext {
        name: name.to_owned(),
        context: Some(Context {
            cluster: name.to_owned(),
            user: Some(name.to_owned()),
            namespace,
            ..Context::default()
        }),
        ..NamedContext::default()
    });
}

/// A loopback TCP server that accepts connections and never writes a byte, holding them open until dropped:
/// a cluster whose API server hangs (the per-cluster timeout). The TLS handshake never completes, so a client
/// waits for its own timeout. Even while the test's runtime is blocked (a child process awaited synchronously)
/// the kernel completes the connections into the listen backlog, and they stay just as silent.
pub struct SilentServer {
    addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl SilentServer {
    /// Listens on a free loopback port.
    pub async fn start() -> SilentServer {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the silent server");
        let addr = listener.local_addr().expect("the silent server's address");
        let accepted = Arc::new(AtomicUsize::new(0));
        let task = {
            let accepted = accepted.clone();
            tokio::spawn(async move {
                let mut held = Vec::new();
                while let Ok((stream, _)) = listener.accept().await {
                    accepted.fetch_add(1, Ordering::SeqCst);
                    held.push(stream);
                }
            })
        };
        SilentServer {
            addr,
            accepted,
            task,
        }
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// How many connections it has accepted so far (when the runtime could run its accept loop).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        // Aborting the task drops the listener and every connection it holds.
        self.task.abort();
    }
}
