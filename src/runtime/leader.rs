//! Leader election through a coordination.k8s.io Lease (kube-lease-manager): only the leader runs the
//! controllers. A standby keeps its caches warm and takes over when the lease expires.

use std::future::Future;
use std::time::Duration;

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tracing::{info, warn};

use super::backoff;
use super::metrics::Metrics;
use super::shutdown::Shutdown;
use crate::error::{Error, Result};

/// Where the lease lives and who we are.
#[derive(Clone, Debug)]
pub(crate) struct LeaseConfig {
    /// Lease name.
    pub(crate) name: String,
    /// Lease namespace.
    pub(crate) namespace: String,
    /// This process's identity (pod name in cluster).
    pub(crate) identity: String,
    /// How long a lease stays valid without renewal; a standby takes over at most this long after a crash.
    pub(crate) duration: Duration,
}

/// A default identity: `POD_NAME`, else `<hostname>-<pid>`.
pub(crate) fn default_identity() -> String {
    std::env::var("POD_NAME").unwrap_or_else(|_| {
        let host = std::env::var("HOSTNAME")
            .ok()
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_owned())
            })
            .unwrap_or_else(|| "gpu-inventory-operator".to_owned());
        format!("{host}-{}", std::process::id())
    })
}

/// Runs `work` while this process holds the lease. `work` gets a shutdown signal that fires on process
/// shutdown or when the lease is lost. Returns `Ok` after a shutdown, `Err(LeadershipLost)` after a loss.
pub(crate) async fn run_while_leader<F, Fut>(
    client: Client,
    lease: LeaseConfig,
    metrics: &Metrics,
    shutdown: Shutdown,
    work: F,
) -> Result<()>
where
    F: FnOnce(Shutdown) -> Fut,
    Fut: Future<Output = ()>,
{
    let duration = lease.duration.as_secs().max(2);
    let grace = (duration / 3).max(1);
    let mut retry = backoff::LEADER_ELECTION.backoff();
    let manager = loop {
        let built = LeaseManagerBuilder::new(client.clone(), &lease.name)
            .with_namespace(&lease.namespace)
            .with_identity(&lease.identity)
            .with_duration(duration)
            .with_grace(grace)
            .with_field_manager(format!("{}-lease", crate::FIELD_MANAGER))
            .build()
            .await;
        match built {
            Ok(manager) => break manager,
            Err(e) => {
                let delay = retry.next_delay();
                warn!(lease = %lease.name, namespace = %lease.namespace, error = %e,
                      "cannot set up the leader-election Lease; retrying in {}s", delay.as_secs());
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.clone().wait() => return Ok(()),
                }
            }
        }
    };
    let (mut is_leader, task) = manager.watch().await;
    info!(lease = %lease.name, namespace = %lease.namespace, identity = %lease.identity, "waiting for the leader lease");
    tokio::select! {
        became = wait_for(&mut is_leader, true) => if !became {
            return Err(Error::LeadershipLost("the lease manager stopped before this process became leader".to_owned()));
        },
        _ = shutdown.clone().wait() => {
            drop(is_leader);
            let _ = task.await;
            return Ok(());
        }
    }
    info!(identity = %lease.identity, "became leader; starting controllers");
    metrics.leader.set(1);
    let (stop_work, work_shutdown) = Shutdown::new();
    let work = work(work_shutdown);
    tokio::pin!(work);
    let lost = tokio::select! {
        _ = &mut work => false,
        _ = shutdown.clone().wait() => {
            stop_work.trigger();
            work.await;
            false
        }
        _ = wait_for(&mut is_leader, false) => {
            warn!(identity = %lease.identity, "lost the leader lease; stopping controllers");
            stop_work.trigger();
            work.await;
            true
        }
    };
    metrics.leader.set(0);
    // Closing the channel makes the lease manager release the lease, so a standby takes over at once.
    drop(is_leader);
    let _ = task.await;
    if lost {
        Err(Error::LeadershipLost(format!(
            "{} lost the lease {}/{}; exiting so a fresh start can compete again",
            lease.identity, lease.namespace, lease.name
        )))
    } else {
        Ok(())
    }
}

/// Waits until the channel holds `wanted`; `false` when the sender is gone first.
async fn wait_for(rx: &mut watch::Receiver<bool>, wanted: bool) -> bool {
    rx.wait_for(|v| *v == wanted).await.is_ok()
}
