//! Who the operator is to the API server, as the kubeconfig says: the user entry and its exec credential
//! plugin (EKS `aws eks get-token`, GKE `gke-gcloud-auth-plugin`, AKS `kubelogin`, ...), so that a failure of
//! the credentials names both and says what to do, once, instead of a transport error on every retry.
//!
//! kube re-runs the plugin whenever the token it returned is within 60 s of its `expirationTimestamp`, per
//! request; when the plugin fails or the server rejects its token (401), every request fails until the
//! plugin works again. [`report`] logs the first such failure at error and the following ones at debug,
//! until a fresh request succeeds again ([`succeeded`]: a complete list or a write; events of a watch opened
//! earlier prove nothing), and again at error at most every [`REPEAT_EVERY`] while it lasts.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use kube::client::AuthError;
use kube::config::{ExecInteractiveMode, Kubeconfig};
use tracing::{debug, error, info};

/// The kubeconfig user the client authenticates as, and its exec plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CredentialSource {
    /// The `users[].name` the context refers to.
    pub(crate) user: String,
    /// The exec plugin's command line (`users[].user.exec.command` and `args`), if it has one.
    pub(crate) exec_plugin: Option<String>,
}

/// The process's credentials (the operator builds one client). Set by `runtime::client::connect`.
static SOURCE: OnceLock<CredentialSource> = OnceLock::new();
/// When a credential failure was last logged at error, while nothing has succeeded since.
static REPORTED: Mutex<Option<Instant>> = Mutex::new(None);
/// A failure that lasts is logged at error again this often (in between at debug).
pub(crate) const REPEAT_EVERY: Duration = Duration::from_secs(600);

/// The user and plugin the kubeconfig's `context` (else its current context) authenticates with.
pub(crate) fn source_of(
    kubeconfig: &Kubeconfig,
    context: Option<&str>,
) -> Option<CredentialSource> {
    let context = context.or(kubeconfig.current_context.as_deref())?;
    let user = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)?
        .context
        .as_ref()?
        .user
        .clone()?;
    let exec = kubeconfig
        .auth_infos
        .iter()
        .find(|a| a.name == user)
        .and_then(|a| a.auth_info.as_ref()?.exec.as_ref());
    let exec_plugin = exec.and_then(|exec| {
        let mut line = exec.command.clone()?;
        for arg in exec.args.iter().flatten() {
            line.push(' ');
            line.push_str(arg);
        }
        Some(line)
    });
    Some(CredentialSource { user, exec_plugin })
}

/// Whether this process is the operator, which retries failed credentials by itself; a command says to run
/// it again instead.
static OPERATOR: AtomicBool = AtomicBool::new(false);

/// This process is the operator (`run`): its messages say that it retries.
pub(crate) fn as_operator() {
    OPERATOR.store(true, Ordering::Relaxed);
}

/// What the user does after fixing the credentials: wait for the operator's retry, or run the command again.
fn afterwards() -> &'static str {
    match OPERATOR.load(Ordering::Relaxed) {
        true => "the operator retries with backoff and recovers by itself",
        false => "then run the command again",
    }
}

/// A failure of the exec plugin `line` (run by `runtime::exec_plugin`), said as [`describe`] says kube's.
pub(crate) fn plugin_failed(line: &str, what: &str) -> String {
    let user = match SOURCE.get() {
        Some(s) => format!("kubeconfig user \"{}\"", s.user),
        None => "the kubeconfig's user".to_owned(),
    };
    format!(
        "{user}: the exec credential plugin `{line}` {what}; run the plugin by hand to see why, then fix it \
         or log in again, {}",
        afterwards()
    )
}

/// A plugin's exit status and the tail of its stderr.
pub(crate) fn exit_and_stderr(status: &std::process::ExitStatus, stderr: &[u8]) -> String {
    format!("failed: {}", status_and_stderr(status, stderr))
}

/// The exit status and the last 500 characters of stderr (trimmed), or that it printed nothing.
fn status_and_stderr(status: &std::process::ExitStatus, stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let tail: String = text
        .chars()
        .rev()
        .take(500)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    match tail.is_empty() {
        true => format!("{status} and printed nothing on stderr"),
        false => format!("{status}: {tail}"),
    }
}

/// Remembers the credentials for error messages (the first call wins).
pub(crate) fn record(source: CredentialSource) {
    let _ = SOURCE.set(source);
}

/// An operator never has a terminal: the plugin runs non-interactive (a plugin that would prompt fails and
/// says so), and its stderr is captured into the error instead of interleaving with the operator's log.
pub(crate) fn never_interactive(config: &mut kube::Config) {
    if let Some(exec) = config.auth_info.exec.as_mut() {
        exec.interactive_mode = Some(ExecInteractiveMode::Never);
    }
}

/// Whether `error` is a failure of the credentials: the exec plugin failed, or the server rejected them.
pub(crate) fn is_credential_error(error: &kube::Error) -> bool {
    auth_error(error).is_some() || matches!(error, kube::Error::Api(s) if s.code == 401)
}

fn auth_error(error: &kube::Error) -> Option<&AuthError> {
    if let kube::Error::Auth(e) = error {
        return Some(e);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(e) = cause.downcast_ref::<AuthError>() {
            return Some(e);
        }
        source = cause.source();
    }
    None
}

/// The message for a credential failure (`None`: `error` is not one): names the kubeconfig user and the
/// plugin, says what went wrong and what to do.
pub(crate) fn describe(error: &kube::Error) -> Option<String> {
    if !is_credential_error(error) {
        return None;
    }
    let (user, plugin) = match SOURCE.get() {
        Some(s) => (
            format!("kubeconfig user \"{}\"", s.user),
            s.exec_plugin.clone(),
        ),
        None => ("the kubeconfig's user".to_owned(), None),
    };
    let what = match (auth_error(error), &plugin) {
        (Some(e), Some(plugin)) => {
            format!(
                "the exec credential plugin `{plugin}` failed: {}",
                plugin_failure(e)
            )
        }
        (Some(e), None) => format!("getting a token failed: {}", plugin_failure(e)),
        (None, Some(plugin)) => format!(
            "the API server rejected the token from the exec credential plugin `{plugin}` (401 Unauthorized)"
        ),
        (None, None) => "the API server rejected the credentials (401 Unauthorized)".to_owned(),
    };
    let todo = match plugin {
        Some(_) => format!(
            "run the plugin by hand to see why, then fix it or log in again (e.g. `aws sso login`, \
             `gcloud auth login`, `az login`); {}",
            afterwards()
        ),
        None => format!(
            "give the kubeconfig valid credentials (or --token); {}",
            afterwards()
        ),
    };
    Some(format!("{user}: {what}; {todo}"))
}

/// The plugin's own words: its exit status and stderr (trimmed), not the raw process output.
fn plugin_failure(error: &AuthError) -> String {
    match error {
        AuthError::AuthExecRun { out, .. } => status_and_stderr(&out.status, &out.stderr),
        AuthError::AuthExecStart(e) => format!("cannot start it: {e}"),
        other => other.to_string(),
    }
}

/// Logs a credential failure: the first since the last success at error, later ones at debug. Returns
/// whether `error` was one (callers then skip their own warning).
pub(crate) fn report(what: &str, error: &kube::Error) -> bool {
    let Some(message) = describe(error) else {
        return false;
    };
    let mut reported = REPORTED.lock().unwrap_or_else(|e| e.into_inner());
    if reported.is_none_or(|at| at.elapsed() >= REPEAT_EVERY) {
        *reported = Some(Instant::now());
        error!(what, "{message}");
    } else {
        debug!(what, "{message}");
    }
    true
}

/// A request succeeded: after a reported credential failure, says the credentials work again.
pub(crate) fn succeeded() {
    let was_reported = REPORTED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .is_some();
    if was_reported {
        let user = SOURCE.get().map(|s| s.user.as_str()).unwrap_or("?");
        info!(user, "credentials accepted again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_context_names_the_user_and_its_plugin() {
        let kubeconfig: Kubeconfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Config", "current-context": "prod",
            "contexts": [{ "name": "prod", "context": { "cluster": "c", "user": "eks-admin" } },
                         { "name": "lab", "context": { "cluster": "c", "user": "cert-user" } }],
            "users": [{ "name": "eks-admin", "user": { "exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1", "command": "aws",
                "args": ["eks", "get-token", "--cluster-name", "prod"] } } },
                      { "name": "cert-user", "user": { "token": "t" } }]
        }))
        .unwrap();
        assert_eq!(
            source_of(&kubeconfig, None),
            Some(CredentialSource {
                user: "eks-admin".into(),
                exec_plugin: Some("aws eks get-token --cluster-name prod".into()),
            })
        );
        assert_eq!(
            source_of(&kubeconfig, Some("lab")).unwrap().exec_plugin,
            None
        );
        assert_eq!(source_of(&kubeconfig, Some("nope")), None);
    }

    #[test]
    fn only_credential_failures_are_described() {
        let unauthorized = kube::Error::Api(Box::new(
            kube::core::Status::failure("Unauthorized", "Unauthorized").with_code(401),
        ));
        let forbidden = kube::Error::Api(Box::new(
            kube::core::Status::failure("forbidden", "Forbidden").with_code(403),
        ));
        let message = describe(&unauthorized).unwrap();
        assert!(message.contains("401 Unauthorized"), "{message}");
        assert!(describe(&forbidden).is_none());
        let failed = kube::Error::Auth(AuthError::AuthExec("boom".into()));
        assert!(describe(&failed).unwrap().contains("boom"));
    }
}
