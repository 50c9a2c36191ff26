//! The server's first answer: before a one-shot command asks anything of the API server, one small request
//! (`/version`, readable by anyone) must be answered within `--request-timeout`, so that an unreachable,
//! silent or blackholed server is one error naming it and the timeout, and the optional APIs are probed
//! only once the server has answered.

use std::time::Instant;

use super::client::{ClientConfig, Connection};
use super::waiting::{bounded, seconds};
use crate::error::{Error, Result, api_status, describe_unreachable};

/// Waits by `deadline` for the server's answer to `/version`. Any HTTP answer counts (a 401 or 403 is said
/// by the request that needs the permission); no answer is [`Error::Unreachable`].
pub(crate) async fn answered(
    connection: &Connection,
    target: &ClientConfig,
    deadline: Option<Instant>,
) -> Result<()> {
    let url = &connection.cluster_url;
    let what = format!("the API server at {url}");
    let asked = bounded(
        &what,
        deadline,
        target.request_timeout,
        target.progress,
        connection.client.apiserver_version(),
    )
    .await;
    match asked {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) if api_status(&e).is_some() => Ok(()),
        Some(Err(e)) => Err(Error::Unreachable(describe_unreachable(
            url,
            &e,
            target.request_timeout,
        ))),
        None => Err(Error::Unreachable(silent(url, target))),
    }
}

/// The server (or the credential plugin before it) did not answer in time.
pub(crate) fn silent(url: &str, target: &ClientConfig) -> String {
    let within = target
        .request_timeout
        .map(|t| format!(" within {} (--request-timeout)", seconds(t)))
        .unwrap_or_default();
    format!(
        "the API server at {url} did not answer{within}: check that the address is right and reachable from \
         here (VPN, firewall, proxy), or give it longer with --request-timeout"
    )
}
