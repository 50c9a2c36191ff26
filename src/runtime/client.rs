//! Building the Kubernetes client from the kubeconfig (or in-cluster), with clear errors.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::kubeconfig_files::{self, read_error};
use super::{credentials, exec_plugin, reach};
use crate::error::{Error, Result};

/// The user agent of every request the operator makes.
pub(crate) const USER_AGENT: &str = concat!("gpu-inventory-operator/", env!("CARGO_PKG_VERSION"));

/// Where to connect: the kubeconfig file and context (`None`: the usual defaults), what the command line
/// changes of them, and how long a wait for the server may last.
#[derive(Clone, Debug, Default)]
pub struct ClientConfig {
    /// A kubeconfig file to use instead of $KUBECONFIG or ~/.kube/config.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// A context to use instead of the kubeconfig's current one.
    pub(crate) context: Option<String>,
    /// `--server`, `--token`, `--as`, `--as-group`.
    pub(crate) overrides: Overrides,
    /// `--request-timeout`: connecting, each answer of a request, and a credential plugin's run; `None`
    /// waits without end.
    pub(crate) request_timeout: Option<Duration>,
    /// Long-lived watches run on the client (the operator, the plugin's `--watch`): no read timeout on the
    /// connections (a quiet watch is no dead server; the watcher has its own), and the exec plugin stays
    /// kube's, to refresh the token when it expires.
    pub(crate) watches: bool,
    /// Say on stderr what a wait past a few seconds waits for (one cluster; across contexts each cluster's
    /// deadline names it instead).
    pub(crate) progress: bool,
}

/// What the command line changes of the kubeconfig's connection, as kubectl's flags do.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--server`: the API server URL.
    pub server: Option<String>,
    /// `--token`: a bearer token instead of the user's credentials.
    pub token: Option<String>,
    /// `--as`: the user every request impersonates.
    pub as_user: Option<String>,
    /// `--as-group`: the groups it impersonates with `--as`.
    pub as_groups: Vec<String>,
}

/// A client and what the configuration said about where it points.
pub(crate) struct Connection {
    /// The client.
    pub(crate) client: Client,
    /// The kubeconfig context's namespace (or the pod's, in cluster).
    pub(crate) namespace: String,
    /// The API server URL, for messages.
    pub(crate) cluster_url: String,
}

/// Builds the client, then waits for the server's first answer within `--request-timeout` (the credential
/// plugin's run included): a one-shot command's requests start only once the server has answered, and an
/// unreachable one is one error naming it.
pub(crate) async fn connect(target: &ClientConfig) -> Result<Connection> {
    let deadline = target.request_timeout.map(|t| Instant::now() + t);
    let connection = build(target, deadline).await?;
    let wait = reach::Wait {
        deadline,
        timeout: target.request_timeout,
        progress: target.progress,
    };
    reach::answered(&connection.client, &connection.cluster_url, &wait).await?;
    Ok(connection)
}

/// Builds the client from the given kubeconfig/context, else $KUBECONFIG or ~/.kube/config, else in-cluster,
/// with the command line's overrides; an exec credential plugin runs once by `deadline` (and is stopped
/// past it). Nothing is asked of the server.
pub(crate) async fn build(target: &ClientConfig, deadline: Option<Instant>) -> Result<Connection> {
    let mut config = load_config(target).await?;
    apply(&target.overrides, &mut config)?;
    credentials::never_interactive(&mut config);
    config.connect_timeout = target.request_timeout;
    if !target.watches {
        // Each read of an answer waits at most this long; counted from the request, not from when its
        // pooled connection went idle.
        config.read_timeout = target.request_timeout;
        config.write_timeout = target.request_timeout;
        config.reset_reader_on_write = true;
    }
    // A user agent of our own tells the operator's requests apart in audit logs (and in `make bench`).
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    if let Some(exec) = config.auth_info.exec.clone() {
        // kube runs the plugin on a blocking thread it cannot stop: it runs here first, under the deadline,
        // killed (its whole process group) when the deadline passes or the command ends before it.
        let credential =
            exec_plugin::run(&exec, deadline, target.request_timeout, target.progress).await?;
        if let (false, Some(token)) = (target.watches, credential.token) {
            config.auth_info.token = Some(token.into());
            config.auth_info.exec = None;
        }
    }
    let namespace = config.default_namespace.clone();
    // As kubectl writes it: `https://host:6443`, without the root path's slash.
    let cluster_url = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    // Building the client runs an exec credential plugin kube keeps (certificates, or a watch's refresh),
    // a blocking process: on the blocking pool, so that several clusters' plugins run side by side.
    let client = tokio::task::spawn_blocking(move || Client::try_from(config))
        .await
        .map_err(|e| Error::Kubeconfig(format!("building a Kubernetes client failed: {e}")))?
        .map_err(|e| match credentials::describe(&e) {
            Some(message) => Error::Credentials(message),
            None => Error::Kubeconfig(format!("cannot build a Kubernetes client: {e}")),
        })?;
    Ok(Connection {
        client,
        namespace,
        cluster_url,
    })
}

/// `--server`, `--token`, `--as` and `--as-group` onto the kubeconfig's connection, as kubectl applies them.
fn apply(overrides: &Overrides, config: &mut Config) -> Result<()> {
    if let Some(server) = &overrides.server {
        config.cluster_url = server
            .parse()
            .map_err(|e| Error::InvalidFlag(format!("--server {server:?}: {e}")))?;
    }
    if let Some(token) = &overrides.token {
        // The token is who we are: the user's other identities (a client certificate would win over it at
        // the server) and ways to get one are left out.
        let auth = &mut config.auth_info;
        auth.token = Some(token.clone().into());
        auth.client_certificate = None;
        auth.client_certificate_data = None;
        auth.client_key = None;
        auth.client_key_data = None;
        auth.token_file = None;
        auth.exec = None;
        auth.auth_provider = None;
        auth.username = None;
        auth.password = None;
    }
    if let Some(user) = &overrides.as_user {
        config.auth_info.impersonate = Some(user.clone());
        config.auth_info.impersonate_groups =
            (!overrides.as_groups.is_empty()).then(|| overrides.as_groups.clone());
    }
    Ok(())
}

async fn load_config(target: &ClientConfig) -> Result<Config> {
    let context = target.context.as_deref();
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let (kubeconfig, from) = match &target.kubeconfig {
        Some(path) => (
            Some(
                Kubeconfig::read_from(path)
                    .map_err(|e| read_error(&path.display().to_string(), &e))?,
            ),
            path.display().to_string(),
        ),
        None => (
            kubeconfig_files::read_default()?,
            default_kubeconfig_paths(),
        ),
    };
    let Some(kubeconfig) = kubeconfig else {
        // No kubeconfig at all: `--server` alone (as kubectl), else the pod's service account.
        if let Some(context) = context {
            return Err(Error::Kubeconfig(format!(
                "--context {context:?}: no kubeconfig to find it in (tried {from}); set KUBECONFIG or pass \
                 --kubeconfig FILE"
            )));
        }
        if let Some(server) = &target.overrides.server {
            let url = server
                .parse()
                .map_err(|e| Error::InvalidFlag(format!("--server {server:?}: {e}")))?;
            return Ok(Config::new(url));
        }
        return Config::incluster().map_err(|e| {
            Error::Kubeconfig(format!(
                "no usable kubeconfig: tried {from}, and this is not a pod in a cluster ({e}); set \
                 KUBECONFIG or pass --kubeconfig FILE (or --server URL --token TOKEN)"
            ))
        });
    };
    if let Some(context) = context
        && !kubeconfig.contexts.iter().any(|c| c.name == context)
    {
        return Err(Error::Kubeconfig(no_such_context(
            context,
            &kubeconfig,
            &from,
        )));
    }
    if let Some(source) = credentials::source_of(&kubeconfig, context) {
        credentials::record(source);
    }
    Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|e| Error::Kubeconfig(format!("kubeconfig {from}: {e}")))
}

/// `--context NAME` the kubeconfig lacks: the contexts it has, so that a typo is one look away.
fn no_such_context(context: &str, kubeconfig: &Kubeconfig, from: &str) -> String {
    let names: Vec<&str> = kubeconfig
        .contexts
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let have = match names.is_empty() {
        true => "it has no context".to_owned(),
        false => format!("its contexts: {}", names.join(", ")),
    };
    format!(
        "context {context:?} is not in the kubeconfig {from}; {have} (kubectl config get-contexts); \
         pass one of them to --context"
    )
}

fn default_kubeconfig_paths() -> String {
    match std::env::var_os("KUBECONFIG") {
        Some(paths) if !paths.is_empty() => format!("KUBECONFIG={}", paths.to_string_lossy()),
        _ => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default();
            format!(
                "{} (KUBECONFIG is not set)",
                home.join(".kube/config").display()
            )
        }
    }
}

/// The names of every context of the kubeconfig `kubectl` would read: `kubeconfig`, else $KUBECONFIG (its
/// files merged) or ~/.kube/config; in the file's order.
pub(crate) fn kubeconfig_contexts(kubeconfig: Option<&Path>) -> Result<Vec<String>> {
    let read = match kubeconfig {
        Some(path) => {
            Kubeconfig::read_from(path).map_err(|e| read_error(&path.display().to_string(), &e))?
        }
        None => kubeconfig_files::read_default()?.ok_or_else(|| {
            Error::Kubeconfig(format!(
                "no kubeconfig: tried {}; set KUBECONFIG or pass --kubeconfig FILE",
                default_kubeconfig_paths()
            ))
        })?,
    };
    Ok(read.contexts.into_iter().map(|c| c.name).collect())
}
