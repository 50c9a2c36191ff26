//! The server's first answer: before a one-shot command asks anything of the API server, one small request
//! (`/version`, readable by anyone) must be answered within `--request-timeout`, so that an unreachable,
//! silent or blackholed server is one error naming it and the timeout, and the optional APIs are probed
//! only once the server has answered.

use std::time::{Duration, Instant};

use kube::Client;

use super::waiting::{bounded, seconds};
use crate::error::{Error, Result, api_status, describe_unreachable};

/// How long a wait may last, and whether it is said.
pub(crate) struct Wait {
    /// When it ends (`None`: never).
    pub(crate) deadline: Option<Instant>,
    /// `--request-timeout`, which ends at `deadline`.
    pub(crate) timeout: Option<Duration>,
    /// Say a long wait on stderr.
    pub(crate) progress: bool,
}

/// Waits by the deadline for the server at `url` to answer `/version`. Any HTTP answer counts (a 401 or 403
/// is said by the request that needs the permission); no answer is [`Error::Unreachable`].
pub(crate) async fn answered(client: &Client, url: &str, wait: &Wait) -> Result<()> {
    let what = format!("the API server at {url}");
    let version = client.apiserver_version();
    let asked = bounded(&what, wait.deadline, wait.timeout, wait.progress, version).await;
    match asked {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) if api_status(&e).is_some() => Ok(()),
        Some(Err(e)) => Err(Error::Unreachable(describe_unreachable(
            url,
            &e,
            wait.timeout,
        ))),
        None => Err(Error::Unreachable(silent(url, wait.timeout))),
    }
}

/// The server did not answer within `timeout`.
fn silent(url: &str, timeout: Option<Duration>) -> String {
    let within = timeout
        .map(|t| format!(" within {} (--request-timeout)", seconds(t)))
        .unwrap_or_default();
    format!(
        "the API server at {url} did not answer{within}: check that the address is right and reachable from \
         here (VPN, firewall, proxy), or give it longer with --request-timeout"
    )
}
