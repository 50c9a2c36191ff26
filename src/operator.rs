//! `run`: start-up (API server, CRD, default inventory, node cache), then both controllers until shutdown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Client;
use tracing::{info, warn};

use crate::cli::{GlobalArgs, RunArgs};
use crate::client::connect;
use crate::controllers::node_status::ConfigMapTarget;
use crate::controllers::{self, Context};
use crate::crd_install::{install_crd, require_crd};
use crate::crd_watch::{CrdPolicy, watch_crd};
use crate::default_inventory::{DefaultInventory, ensure_default_inventory};
use crate::error::{Error, Result, api_status, describe_kube_error};
use crate::health::Health;
use crate::leader::{LeaseConfig, default_identity, run_while_leader};
use crate::metrics::Metrics;
use crate::node_cache;
use crate::selector::{equality_labels, parse_selector};
use crate::shutdown::Shutdown;

/// Runs the operator until `shutdown` fires. Returns an error only for start-up failures.
pub async fn run(global: &GlobalArgs, args: RunArgs, shutdown: Shutdown) -> Result<()> {
    for (flag, value) in [
        ("--node-label-selector", &args.node_label_selector),
        ("--inventory-label-selector", &args.inventory_label_selector),
    ] {
        if let Some(text) = value {
            parse_selector(text).map_err(|e| Error::InvalidFlag(format!("{flag}: {e}")))?;
        }
    }
    let connection = connect(global).await?;
    let client = connection.client;
    let namespace = args.namespace.clone().unwrap_or(connection.namespace);
    tokio::select! {
        result = wait_for_api_server(&client, &connection.cluster_url, args.startup_timeout) => result?,
        _ = shutdown.clone().wait() => return Ok(()),
    }
    let metrics = Arc::new(Metrics::new());
    let health = Health::new(metrics.watch_restarts.clone());
    if !args.metrics_addr.is_empty() {
        crate::http::serve(
            &args.metrics_addr,
            health.clone(),
            metrics.clone(),
            args.readiness_grace,
            shutdown.clone(),
        )
        .await?;
    }
    if args.skip_crd_install {
        require_crd(&client, args.startup_timeout).await?;
    } else {
        install_crd(&client, args.startup_timeout).await?;
    }
    health.set_crd_established();
    let default_inventory = (!args.default_inventory.is_empty()).then(|| DefaultInventory {
        name: args.default_inventory.clone(),
        labels: args
            .inventory_label_selector
            .as_deref()
            .map(equality_labels)
            .unwrap_or_default(),
    });
    if let Some(default) = &default_inventory {
        ensure_default_inventory(&client, default).await?;
    }
    let crd_policy = CrdPolicy {
        self_install: !args.skip_crd_install,
        default_inventory,
        timeout: args.startup_timeout,
    };
    let crd_task = tokio::spawn(watch_crd(
        client.clone(),
        crd_policy,
        health.clone(),
        shutdown.clone(),
    ));

    let (nodes, feed) = node_cache::start(
        client.clone(),
        args.node_label_selector.as_deref(),
        health.clone(),
    );
    let feed_task = tokio::spawn(feed);
    tokio::select! {
        _ = nodes.wait_until_ready() => {}
        _ = shutdown.clone().wait() => { feed_task.abort(); return Ok(()); }
    }
    health.set_nodes_synced();
    info!(nodes = nodes.nodes().len(), namespace = %namespace, "node cache synced; starting controllers");

    let ctx = Arc::new(Context::new(
        client.clone(),
        nodes,
        args.requeue,
        health,
        metrics.clone(),
    ));
    let target = ConfigMapTarget {
        namespace: namespace.clone(),
        name: args.configmap_name.clone(),
    };
    let inventory_selector = args.inventory_label_selector.clone();
    let controllers = |stop: Shutdown| {
        let ctx = ctx.clone();
        async move {
            tokio::join!(
                controllers::inventory::run(ctx.clone(), inventory_selector, stop.clone()),
                controllers::node_status::run(ctx.clone(), target, stop),
            );
        }
    };
    let result = if args.leader_elect {
        let lease = LeaseConfig {
            name: args.lease_name.clone(),
            namespace,
            identity: default_identity(),
            duration: args.lease_duration,
        };
        run_while_leader(client, lease, &metrics, shutdown, controllers).await
    } else {
        metrics.leader.set(1);
        controllers(shutdown).await;
        Ok(())
    };
    feed_task.abort();
    crd_task.abort();
    info!(
        status_writes = ctx.status_guard.written(),
        status_skipped = ctx.status_guard.skipped(),
        configmap_writes = ctx.configmap_guard.written(),
        configmap_skipped = ctx.configmap_guard.skipped(),
        "stopped"
    );
    result
}

/// Retries `/version` with backoff (1 s doubling to 10 s) until the server answers or `timeout` passes.
async fn wait_for_api_server(client: &Client, url: &str, timeout: Duration) -> Result<()> {
    let started = Instant::now();
    let mut delay = Duration::from_secs(1);
    loop {
        match client.apiserver_version().await {
            Ok(version) => {
                info!(server = url, version = %version.git_version, "connected to the API server");
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
                warn!(
                    server = url,
                    retry_in_secs = delay.as_secs(),
                    "API server unreachable: {}",
                    describe_kube_error(&e)
                );
                tokio::time::sleep(delay.min(timeout.saturating_sub(waited))).await;
                delay = (delay * 2).min(Duration::from_secs(10));
            }
        }
    }
}
