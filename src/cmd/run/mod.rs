//! `run`: start-up (API server, CRD, default inventory, sources), then the publishers until shutdown.

mod start_up;

use std::sync::Arc;

use kube::Client;
use tokio::task::JoinHandle;
use tracing::info;

use super::cli::{GlobalArgs, RunArgs};
use crate::error::{Error, Result};
use crate::inventory::selector::{equality_labels, parse_selector};
use crate::publish::configmap::{ConfigMapTarget, ConfigMaps};
use crate::publish::crd::{install_crd, require_crd};
use crate::publish::crd_watch::{CrdPolicy, watch_crd};
use crate::publish::default_inventory::{DefaultInventory, ensure_default_inventory};
use crate::publish::driver::drive;
use crate::publish::fleet::keep_cluster_property;
use crate::publish::gpunodes::{GpuNodeScope, GpuNodes};
use crate::publish::metrics::InventoryGauges;
use crate::publish::scan_service::ScanService;
use crate::publish::status::Statuses;
use crate::runtime::health::Health;
use crate::runtime::leader::{LeaseConfig, default_identity, run_while_leader};
use crate::runtime::metrics::{Metrics, TargetLabels};
use crate::runtime::shutdown::Shutdown;
use crate::sources::{Readers, Sources, SourcesConfig};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

/// Runs the operator until `shutdown` fires. Returns an error only for start-up failures.
pub async fn run(global: &GlobalArgs, args: RunArgs, shutdown: Shutdown) -> Result<()> {
    check_selectors(&args)?;
    let Some(connection) = start_up::start_up(global, &args, &shutdown).await? else {
        return Ok(());
    };
    let client = connection.client;
    let namespace = global.namespace.clone().unwrap_or(connection.namespace);
    let gauges = Arc::new(InventoryGauges::default());
    let metrics = Arc::new(Metrics::with_families(|registry| gauges.register(registry)));
    let health = Health::with_relists(
        metrics.watch_restarts.clone(),
        metrics.watch_relists.clone(),
    );
    if !args.metrics_addr.is_empty() {
        let grace = args.readiness_grace;
        let (h, m, s) = (health.clone(), metrics.clone(), shutdown.clone());
        crate::runtime::http::serve(&args.metrics_addr, h, m, grace, s).await?;
    }
    let crd_task = set_up_crd(&client, &args, &health, &shutdown).await?;

    let sources_config = SourcesConfig {
        node_label_selector: args.node_label_selector.clone(),
        dra_drivers: global.dra_drivers(),
        health: global.health_table(),
        topology_labels: global.topology_labels.clone(),
        utilization: args.utilization.source()?,
    };
    let readers = Readers::of(&sources_config);
    let (sources, feed) = Sources::start(client.clone(), readers, health.clone());
    let feed_task = tokio::spawn(feed);
    tokio::select! {
        _ = sources.wait_until_ready() => {}
        _ = shutdown.clone().wait() => { feed_task.abort(); return Ok(()); }
    }
    health.set_nodes_synced();
    let cached_nodes = sources.snapshot().nodes.len();
    info!(nodes = cached_nodes, namespace = %namespace, "node cache synced; starting controllers");

    let scans = Arc::new(ScanService::new(
        sources,
        args.requeue,
        args.resources_grace,
    ));
    let shared = Shared {
        client: client.clone(),
        scans: scans.clone(),
        health,
        metrics: metrics.clone(),
        gauges,
    };
    let result = run_publishers(&shared, &args, namespace, shutdown).await;
    feed_task.abort();
    crd_task.abort();
    let guard = |family: &Family<TargetLabels, Counter>, target: &str| {
        family
            .get_or_create(&TargetLabels {
                target: target.to_owned(),
            })
            .get()
    };
    info!(
        status_writes = guard(&metrics.guard_writes, "status"),
        status_skipped = guard(&metrics.guard_skipped, "status"),
        configmap_writes = guard(&metrics.guard_writes, "configmap"),
        configmap_skipped = guard(&metrics.guard_skipped, "configmap"),
        gpunode_writes = guard(&metrics.guard_writes, "gpunode"),
        scans = scans.computed(),
        entries_reused = scans.entries_reused(),
        "stopped"
    );
    result
}

/// What every publisher is made with.
struct Shared {
    client: Client,
    scans: Arc<ScanService>,
    health: Health,
    metrics: Arc<Metrics>,
    gauges: Arc<InventoryGauges>,
}

/// Rejects a malformed selector flag before anything connects.
fn check_selectors(args: &RunArgs) -> Result<()> {
    for (flag, value) in [
        ("--node-label-selector", &args.node_label_selector),
        ("--inventory-label-selector", &args.inventory_label_selector),
    ] {
        if let Some(text) = value {
            parse_selector(text).map_err(|e| Error::InvalidFlag(format!("{flag}: {e}")))?;
        }
    }
    Ok(())
}

/// Installs (or requires) the CRD, creates the default inventory, and starts the task that keeps both.
async fn set_up_crd(
    client: &Client,
    args: &RunArgs,
    health: &Health,
    shutdown: &Shutdown,
) -> Result<JoinHandle<()>> {
    if args.skip_crd_install {
        require_crd(client, args.startup_timeout).await?;
    } else {
        install_crd(client, args.startup_timeout).await?;
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
        ensure_default_inventory(client, default).await?;
    }
    let crd_policy = CrdPolicy {
        self_install: !args.skip_crd_install,
        default_inventory,
        timeout: args.startup_timeout,
    };
    Ok(tokio::spawn(watch_crd(
        client.clone(),
        crd_policy,
        health.clone(),
        shutdown.clone(),
    )))
}

/// Runs the status, GpuNode and ConfigMap publishers, each in the one driver, until shutdown (while leader,
/// with `--leader-elect`: each term starts them afresh, with their own watches).
async fn run_publishers(
    shared: &Shared,
    args: &RunArgs,
    namespace: String,
    shutdown: Shutdown,
) -> Result<()> {
    let publishing = Publishing {
        target: ConfigMapTarget {
            namespace: namespace.clone(),
            name: args.configmap_name.clone(),
        },
        inventory_selector: args.inventory_label_selector.clone(),
        scope: GpuNodeScope::of(args.node_label_selector.as_deref()),
        status_nodes_budget: args.status_nodes_budget,
        cluster_property: args.cluster_property.clone(),
    };
    let publishers = |stop: Shutdown| start_publishers(shared, &publishing, stop);
    if !args.leader_elect {
        shared.metrics.leader.set(1);
        publishers(shutdown).await;
        return Ok(());
    }
    let lease = LeaseConfig {
        name: args.lease_name.clone(),
        namespace,
        identity: default_identity(),
        duration: args.lease_duration,
    };
    run_while_leader(
        shared.client.clone(),
        lease,
        &shared.metrics,
        shutdown,
        publishers,
    )
    .await
}

/// What each term's publishers are made with, read from the flags once.
struct Publishing {
    target: ConfigMapTarget,
    inventory_selector: Option<String>,
    scope: GpuNodeScope,
    status_nodes_budget: usize,
    cluster_property: String,
}

/// The publishers of one term (the status, GpuNode and ConfigMap ones, and the ClusterProperty's keeper
/// where one is named), each in the one driver, as one future that ends on `stop`.
fn start_publishers(
    shared: &Shared,
    publishing: &Publishing,
    stop: Shutdown,
) -> impl Future<Output = ()> {
    let Shared {
        client,
        scans,
        health,
        metrics,
        gauges,
    } = shared;
    let (statuses, status_changes) = Statuses::start(
        client.clone(),
        publishing.inventory_selector.as_deref(),
        publishing.status_nodes_budget,
        health.clone(),
        metrics.clone(),
        gauges.clone(),
    );
    let (gpunodes, gpunode_changes) = GpuNodes::start(
        client.clone(),
        publishing.scope.clone(),
        health.clone(),
        metrics,
    );
    let (configmaps, configmap_changes) = ConfigMaps::start(
        client.clone(),
        publishing.target.clone(),
        health.clone(),
        metrics,
    );
    // Waits for the API before it watches anything: a cluster without about-api costs a discovery call
    // every 30 s.
    let property = (!publishing.cluster_property.is_empty()).then(|| {
        keep_cluster_property(
            client.clone(),
            publishing.cluster_property.clone(),
            scans.clone(),
            health.clone(),
            metrics.clone(),
            stop.clone(),
        )
    });
    let (scans, metrics) = (scans.clone(), metrics.clone());
    async move {
        let property = async move {
            if let Some(property) = property {
                property.await;
            }
        };
        tokio::join!(
            property,
            drive(
                statuses,
                status_changes,
                scans.clone(),
                metrics.clone(),
                stop.clone()
            ),
            drive(
                gpunodes,
                gpunode_changes,
                scans.clone(),
                metrics.clone(),
                stop.clone()
            ),
            drive(configmaps, configmap_changes, scans, metrics, stop),
        );
    }
}
