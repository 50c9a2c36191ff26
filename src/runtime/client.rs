//! Building the Kubernetes client from the kubeconfig (or in-cluster), with clear errors.

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use super::credentials;
use crate::error::{Error, Result};

/// The user agent of every request the operator makes.
pub(crate) const USER_AGENT: &str = concat!("gpu-inventory-operator/", env!("CARGO_PKG_VERSION"));

/// Where to connect: the kubeconfig file and context (`None`: the usual defaults).
#[derive(Clone, Debug, Default)]
pub struct ClientConfig {
    /// A kubeconfig file to use instead of $KUBECONFIG or ~/.kube/config.
    pub(crate) kubeconfig: Option<PathBuf>,
    /// A context to use instead of the kubeconfig's current one.
    pub(crate) context: Option<String>,
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

/// Builds the client from the given kubeconfig/context, else $KUBECONFIG or ~/.kube/config, else in-cluster.
pub(crate) async fn connect(target: &ClientConfig) -> Result<Connection> {
    let mut config = load_config(target.kubeconfig.as_deref(), target.context.as_deref()).await?;
    credentials::never_interactive(&mut config);
    // A user agent of our own tells the operator's requests apart in audit logs (and in `make bench`).
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    let namespace = config.default_namespace.clone();
    let cluster_url = config.cluster_url.to_string();
    // Building the client runs an exec credential plugin for its first token, a blocking process: on the
    // blocking pool, so that several clusters' plugins run side by side (the plugin across contexts) and a
    // plugin that hangs holds only its own cluster, whose deadline then names it.
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

async fn load_config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<Config> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    if let Some(path) = kubeconfig {
        let kubeconfig = Kubeconfig::read_from(path).map_err(|e| {
            Error::Kubeconfig(format!("cannot read kubeconfig {}: {e}", path.display()))
        })?;
        if let Some(source) = credentials::source_of(&kubeconfig, context) {
            credentials::record(source);
        }
        return Config::from_custom_kubeconfig(kubeconfig, &options)
            .await
            .map_err(|e| Error::Kubeconfig(format!("kubeconfig {}: {e}", path.display())));
    }
    match Config::from_kubeconfig(&options).await {
        Ok(config) => {
            // The same files kube just read ($KUBECONFIG, merged, or ~/.kube/config), for error messages.
            if let Some(source) = Kubeconfig::read()
                .ok()
                .and_then(|k| credentials::source_of(&k, context))
            {
                credentials::record(source);
            }
            Ok(config)
        }
        Err(kubeconfig_error) if context.is_none() => Config::incluster().map_err(|_| {
            Error::Kubeconfig(format!(
                "no usable kubeconfig: tried {} ({kubeconfig_error}), and this is not a pod in a cluster; \
                 set KUBECONFIG or pass --kubeconfig FILE",
                default_kubeconfig_paths()
            ))
        }),
        Err(e) => Err(Error::Kubeconfig(format!(
            "kubeconfig {}: {e}",
            default_kubeconfig_paths()
        ))),
    }
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
        Some(path) => Kubeconfig::read_from(path).map_err(|e| {
            Error::Kubeconfig(format!("cannot read kubeconfig {}: {e}", path.display()))
        })?,
        None => Kubeconfig::read().map_err(|e| {
            Error::Kubeconfig(format!(
                "cannot read the kubeconfig {}: {e}",
                default_kubeconfig_paths()
            ))
        })?,
    };
    Ok(read.contexts.into_iter().map(|c| c.name).collect())
}
