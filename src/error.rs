//! The operator's errors. Each says which object and what to do; `metric_label` gives a short label.

use kube::core::Status;

/// Everything that can go wrong outside the pure parts.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No usable kubeconfig and not in a cluster.
    #[error("{0}")]
    Kubeconfig(String),
    /// The credentials failed before any request: the exec plugin could not give a token (see
    /// `runtime::credentials`).
    #[error("{0}")]
    Credentials(String),
    /// A request to the API server failed.
    #[error("{action}: {}", describe_kube_error(.source))]
    Kube {
        /// What the operator was doing, naming the object.
        action: String,
        /// The client's error.
        #[source]
        source: kube::Error,
    },
    /// The CRD is not installed and the operator may not install it.
    #[error(
        "the CustomResourceDefinition {0} is not installed and --skip-crd-install is set: install it with \
         `gpu-inventory-operator crd | kubectl apply -f -` (or drop --skip-crd-install)"
    )]
    CrdMissing(String),
    /// A GpuInventory's spec cannot be used.
    #[error("GpuInventory {name}: spec.nodeSelector is invalid ({reason}); fix the selector")]
    InvalidNodeSelector {
        /// The inventory.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A flag value cannot be used.
    #[error("{0}")]
    InvalidFlag(String),
    /// Another process took over the leader lease.
    #[error("{0}")]
    LeadershipLost(String),
    /// Something did not happen in time.
    #[error("{0}")]
    Timeout(String),
    /// The API server did not answer: refused, unresolvable, silent past `--request-timeout`, blackholed.
    #[error("{0}")]
    Unreachable(String),
}

impl Error {
    /// Wraps a client error with what the operator was doing.
    pub(crate) fn kube(action: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
        let action = action.into();
        move |source| Error::Kube { action, source }
    }

    /// A short label for metrics and logs.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kubeconfig(_) => "kubeconfig",
            Error::Credentials(_) => "credentials",
            Error::Kube { source, .. }
                if crate::runtime::credentials::is_credential_error(source) =>
            {
                "credentials"
            }
            Error::Kube { source, .. } => match api_status(source) {
                Some(403) => "forbidden",
                Some(404) => "not_found",
                Some(409) => "conflict",
                Some(_) => "api_error",
                None => "unreachable",
            },
            Error::CrdMissing(_) => "crd_missing",
            Error::InvalidNodeSelector { .. } => "invalid_selector",
            Error::InvalidFlag(_) => "invalid_flag",
            Error::Timeout(_) => "timeout",
            Error::Unreachable(_) => "unreachable",
            Error::LeadershipLost(_) => "leadership_lost",
        }
    }

    /// Whether the API server refused the request for who we are (403 Forbidden): no change of the nodes
    /// or pods makes the same request pass, only a new permission does.
    pub(crate) fn is_refusal(&self) -> bool {
        self.kube_error()
            .is_some_and(|e| api_status(e) == Some(403))
    }

    /// The client's error inside, if this is one.
    pub(crate) fn kube_error(&self) -> Option<&kube::Error> {
        match self {
            Error::Kube { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The HTTP status of an API error response, if the server answered.
pub(crate) fn api_status(error: &kube::Error) -> Option<u16> {
    match error {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// A one-line description that keeps the API server's own message (it names verb, resource and user on 403).
pub(crate) fn describe_kube_error(error: &kube::Error) -> String {
    if let Some(message) = crate::runtime::credentials::describe(error) {
        return message;
    }
    match error {
        kube::Error::Api(status) => describe_status(status),
        other => match why_unreachable(other) {
            Some(why) => format!("cannot reach the API server: {why} ({})", chain(other)),
            None => format!("cannot reach the API server ({})", chain(other)),
        },
    }
}

/// The error and its causes, `: `-separated.
fn chain(error: &kube::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Why no answer came, in words, when the causes say it: a refused connection, a timeout, a name that does
/// not resolve, a certificate.
fn why_unreachable(error: &kube::Error) -> Option<&'static str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => return Some("connection refused"),
                std::io::ErrorKind::TimedOut => return Some("no answer in time"),
                _ => {}
            }
        }
        source = cause.source();
    }
    let text = chain(error).to_ascii_lowercase();
    if text.contains("dns error") || text.contains("failed to lookup address") {
        Some("the host name does not resolve")
    } else if text.contains("certificate") {
        Some("its TLS certificate is not trusted")
    } else {
        None
    }
}

/// A request to `url` that got no HTTP answer, said with what to do; `timeout` is `--request-timeout`.
pub(crate) fn describe_unreachable(
    url: &str,
    error: &kube::Error,
    timeout: Option<std::time::Duration>,
) -> String {
    let detail = chain(error);
    match why_unreachable(error) {
        Some("connection refused") => format!(
            "connection refused at {url}: nothing listens there; check that the cluster is running and that \
             the kubeconfig's server (or --server) is right ({detail})"
        ),
        Some("no answer in time") => {
            let within = timeout
                .map(|t| format!(" within {}s (--request-timeout)", t.as_secs_f32()))
                .unwrap_or_default();
            format!(
                "the API server at {url} did not answer{within}: check that the address is right and \
                 reachable from here (VPN, firewall, proxy), or give it longer with --request-timeout \
                 ({detail})"
            )
        }
        Some("the host name does not resolve") => format!(
            "cannot resolve the API server's host in {url}: check the kubeconfig's server (or --server) and \
             DNS ({detail})"
        ),
        Some(why) => format!("cannot reach the API server at {url}: {why} ({detail})"),
        None => format!("cannot reach the API server at {url} ({detail})"),
    }
}

fn describe_status(status: &Status) -> String {
    let hint = match status.code {
        403 => " — grant the missing permission to this identity (see deploy/rbac.yaml)",
        401 => " — the credentials in the kubeconfig were rejected",
        _ => "",
    };
    format!(
        "{} ({} {}){hint}",
        status.message, status.code, status.reason
    )
}

/// Result with the operator's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
