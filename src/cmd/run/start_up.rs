//! `run`'s start-up: connect (retrying while the credentials fail) and wait for the API server's answer,
//! all within `--startup-timeout` from the first attempt.

use std::time::{Duration, Instant};

use tracing::{debug, error, info, warn};

use crate::cmd::cli::{GlobalArgs, RunArgs};
use crate::error::{Error, Result, api_status, describe_kube_error};
use crate::runtime::backoff;
use crate::runtime::client::{ClientConfig, Connection, build};
use crate::runtime::credentials;
use crate::runtime::shutdown::Shutdown;

/// Connects and waits for the API server's answer, all within `--startup-timeout` from the first attempt (a
/// credential plugin that hangs and a server that never answers end it alike); `None` on shutdown.
pub(super) async fn start_up(
    global: &GlobalArgs,
    args: &RunArgs,
    shutdown: &Shutdown,
) -> Result<Option<Connection>> {
    credentials::as_operator();
    let client_config = ClientConfig {
        watches: true,
        progress: false,
        ..global.client_config()
    };
    let startup = async {
        let connection = connect_retrying_credentials(&client_config, args.startup_timeout).await?;
        wait_for_api_server(
            &connection,
            client_config.request_timeout,
            args.startup_timeout,
        )
        .await?;
        Ok::<_, Error>(connection)
    };
    let connection = tokio::select! {
        connection = tokio::time::timeout(args.startup_timeout, startup) => match connection {
            Ok(connection) => connection?,
            Err(_) => return Err(Error::Timeout(format!(
                "no answer from the API server within {}s (--startup-timeout); check that it is reachable \
                 from here and that the kubeconfig's server is right",
                args.startup_timeout.as_secs_f32()
            ))),
        },
        _ = shutdown.clone().wait() => return Ok(None),
    };
    Ok(Some(connection))
}

/// Connects; while the credentials fail (an exec plugin that cannot give a token yet), retries with policy
/// [`backoff::API_SERVER_STARTUP`] up to `timeout`, saying why once and the rest at debug.
async fn connect_retrying_credentials(
    target: &ClientConfig,
    timeout: Duration,
) -> Result<Connection> {
    let started = Instant::now();
    let mut retry = backoff::API_SERVER_STARTUP.backoff();
    let mut reported = false;
    loop {
        let deadline = target.request_timeout.map(|t| Instant::now() + t);
        match build(target, deadline).await {
            Err(Error::Credentials(message)) => {
                let waited = started.elapsed();
                if waited >= timeout {
                    return Err(Error::Timeout(format!(
                        "{message} (gave up after {}s: --startup-timeout)",
                        waited.as_secs()
                    )));
                }
                let delay = retry.next_delay();
                if !reported {
                    error!(retry_in_secs = delay.as_secs(), "{message}");
                    reported = true;
                } else {
                    debug!(retry_in_secs = delay.as_secs(), "{message}");
                }
                tokio::time::sleep(delay.min(timeout.saturating_sub(waited))).await;
            }
            Ok(connection) => {
                if reported {
                    info!("credentials accepted again");
                }
                return Ok(connection);
            }
            Err(other) => return Err(other),
        }
    }
}

/// Retries `/version` (policy [`backoff::API_SERVER_STARTUP`]) until the server answers or `timeout` passes;
/// each try waits at most `request_timeout` (the operator's client has no read timeout: its watches are
/// long).
async fn wait_for_api_server(
    connection: &Connection,
    request_timeout: Option<Duration>,
    timeout: Duration,
) -> Result<()> {
    let (client, url) = (&connection.client, connection.cluster_url.as_str());
    let started = Instant::now();
    let mut retry = backoff::API_SERVER_STARTUP.backoff();
    loop {
        let asked = match request_timeout {
            Some(limit) => tokio::time::timeout(limit, client.apiserver_version())
                .await
                .unwrap_or_else(|_| {
                    Err(kube::Error::Service(
                        format!(
                            "no answer within {}s (--request-timeout)",
                            limit.as_secs_f32()
                        )
                        .into(),
                    ))
                }),
            None => client.apiserver_version().await,
        };
        match asked {
            Ok(version) => {
                info!(server = url, version = %version.git_version, "connected to the API server");
                return Ok(());
            }
            Err(e) if api_status(&e).is_some() && credentials::report("connecting", &e) => {
                // 401: the server is up; the credentials were reported once, the real requests retry.
                return Ok(());
            }
            Err(e) if api_status(&e).is_some() => {
                // The server answered (e.g. 401/403 on /version): it is up; let the real requests report.
                warn!(
                    server = url,
                    "API server answered /version with {}",
                    describe_kube_error(&e)
                );
                return Ok(());
            }
            Err(e) => {
                let waited = started.elapsed();
                if waited >= timeout {
                    return Err(Error::Timeout(format!(
                        "API server {url} unreachable for {}s (--startup-timeout): {}",
                        waited.as_secs(),
                        describe_kube_error(&e)
                    )));
                }
                let delay = retry.next_delay();
                if !credentials::report("connecting", &e) {
                    warn!(
                        server = url,
                        retry_in_secs = delay.as_secs(),
                        "API server unreachable: {}",
                        describe_kube_error(&e)
                    );
                }
                tokio::time::sleep(delay.min(timeout.saturating_sub(waited))).await;
            }
        }
    }
}
