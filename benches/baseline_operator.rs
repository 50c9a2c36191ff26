//! BASELINE for `make bench` — NOT the operator. A `harness = false` bench target, built as
//! `cargo build --release --bench baseline-operator`.
//!
//! The operator written the way the blog article this project started from wrote it ("Building a Kubernetes
//! GPU operator in Rust": two controllers in one process, a LIST of every node on every reconcile, a ConfigMap
//! rewrite on every node event), so `make bench` can compare the real operator with it side by side, in the
//! same run, on the same cluster:
//!
//! * Controller 1, on `GpuInventory`: every reconcile LISTs all nodes (`Api::list`, full objects, nothing
//!   stripped, no cache), scans them, and writes the status with a fresh `observedTime` through server-side
//!   apply — with the article's fix for pitfall 2: compare everything except the timestamps with the current
//!   status and skip the write when equal. Requeue after 30 s. It does not watch nodes (the article's did not):
//!   a node change reaches the status at the next requeue.
//! * Controller 2, in the same process: its own node watcher (its own, unstripped reflector store; nothing is
//!   shared with controller 1). On every node event it rewrites the `gpu-node-status` ConfigMap with
//!   server-side apply, unconditionally (no guard, no coalescing). To be fair to it, the initial list counts
//!   as one event (one write at `InitDone`), not one event per listed node.
//!
//! Both controllers compute their content with the operator library's scanner (`inventory::scanner::scan`,
//! `desired_status`, `configmap_data`), so the output is the same and only the I/O strategy differs.
//! Requests carry the User-Agent `gpu-inventory-baseline/0.1.0`, so the audit log tells them apart.
//!
//! Flags: `--kubeconfig FILE --namespace NS --default-inventory NAME [--node-label-selector SEL] [--requeue 30s]`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use futures::StreamExt;
// Imports from the operator library, with their paths after its reorganization in the comment above each.
use gpu_inventory_operator::cmd::cli::parse_duration;
use gpu_inventory_operator::crd::{GpuInventory, GpuInventorySpec, GpuInventoryStatus};
use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
use gpu_inventory_operator::inventory::{ScanInput, scan};
use gpu_inventory_operator::publish::content::configmap::{DATA_BUDGET_BYTES, configmap_data};
use gpu_inventory_operator::publish::content::status::{NodeList, desired_status};
use gpu_inventory_operator::publish::content::wire::Detail;
use gpu_inventory_operator::publish::crd::install_crd;
use gpu_inventory_operator::publish::status::status_apply_body;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use serde_json::json;
use tracing::{info, warn};

const USER_AGENT: &str = "gpu-inventory-baseline/0.1.0";
const FIELD_MANAGER: &str = "gpu-inventory-baseline";

/// The article-style baseline operator (benchmark only).
#[derive(Parser, Debug, Clone)]
struct Args {
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    #[arg(long, short = 'n', default_value = "default")]
    namespace: String,
    #[arg(long, default_value = "cluster")]
    default_inventory: String,
    #[arg(long)]
    node_label_selector: Option<String>,
    #[arg(long, default_value = "gpu-node-status")]
    configmap_name: String,
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    requeue: Duration,
}

struct Ctx {
    client: Client,
    args: Args,
}

#[derive(Debug, thiserror::Error)]
enum Error {
    #[error("kube: {0}")]
    Kube(#[from] kube::Error),
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    // A plain `cargo bench` runs every bench target with `--bench`; this one is started by the bench driver.
    if std::env::args().skip(1).any(|a| a == "--bench") {
        eprintln!(
            "baseline-operator: started by the bench driver (`make bench`), not by `cargo bench`; skipping"
        );
        return Ok(());
    }
    let args = Args::parse();
    let mut config = match &args.kubeconfig {
        Some(path) => {
            Config::from_custom_kubeconfig(
                Kubeconfig::read_from(path)?,
                &KubeConfigOptions::default(),
            )
            .await?
        }
        None => Config::infer().await?,
    };
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    let client = Client::try_from(config)?;

    // The article applies its own CRD at start-up.
    install_crd(&client, Duration::from_secs(60)).await?;
    let inventories: Api<GpuInventory> = Api::all(client.clone());
    let inventory = GpuInventory::new(
        &args.default_inventory,
        GpuInventorySpec {
            note: "baseline".into(),
            node_selector: None,
        },
    );
    match inventories.create(&PostParams::default(), &inventory).await {
        Ok(_) => info!(cr = %args.default_inventory, "created GpuInventory"),
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e.into()),
    }

    let ctx = Arc::new(Ctx { client, args });
    tokio::select! {
        _ = inventory_controller(ctx.clone()) => {}
        _ = configmap_controller(ctx.clone()) => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = sigterm() => {}
    }
    Ok(())
}

async fn sigterm() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    term.recv().await;
}

// ------------------------------------------------------------------ controller 1: GpuInventory status --

async fn inventory_controller(ctx: Arc<Ctx>) {
    let api: Api<GpuInventory> = Api::all(ctx.client.clone());
    Controller::new(api, watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                warn!(error = %e, "reconcile failed");
            }
        })
        .await;
}

/// Everything except the timestamps: the article's skip-when-equal fix.
fn without_timestamps(status: &GpuInventoryStatus) -> GpuInventoryStatus {
    let mut status = status.clone();
    status.observed_time = None;
    for condition in &mut status.conditions {
        condition.last_transition_time = Time(Timestamp::UNIX_EPOCH);
    }
    status
}

async fn reconcile(inventory: Arc<GpuInventory>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = inventory.name_any();
    // LIST every node, every reconcile.
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let mut params = ListParams::default();
    if let Some(selector) = &ctx.args.node_label_selector {
        params = params.labels(selector);
    }
    let list = nodes.list(&params).await?;
    let read: Vec<ClusterNode> = list.items.iter().map(ClusterNode::of).collect();
    let scanned = scan(ScanInput::nodes(&read));
    let mut status = desired_status(
        &scanned,
        inventory.metadata.generation,
        NodeList::All(Detail::Counts),
    );
    let now = Time(Timestamp::now());
    status.observed_time = Some(now.clone());
    for condition in &mut status.conditions {
        condition.last_transition_time = now.clone();
    }
    let unchanged = inventory
        .status
        .as_ref()
        .is_some_and(|current| without_timestamps(current) == without_timestamps(&status));
    if !unchanged {
        let api: Api<GpuInventory> = Api::all(ctx.client.clone());
        api.patch_status(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(status_apply_body(&status)),
        )
        .await?;
        info!(
            cr = %name,
            gpu_nodes = status.total_gpu_nodes,
            ready = status.ready_gpu_nodes,
            gpus = status.total_gpus,
            "reconciled GpuInventory"
        );
    }
    Ok(Action::requeue(ctx.args.requeue))
}

fn error_policy(_inventory: Arc<GpuInventory>, _error: &Error, _ctx: Arc<Ctx>) -> Action {
    Action::requeue(Duration::from_secs(5))
}

// ------------------------------------------------------------------ controller 2: ConfigMap per node event --

async fn configmap_controller(ctx: Arc<Ctx>) {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let mut config = watcher::Config::default();
    if let Some(selector) = &ctx.args.node_label_selector {
        config = config.labels(selector);
    }
    let (store, writer) = reflector::store::<Node>();
    let mut events = reflector::reflector(writer, watcher(nodes, config)).boxed();
    let cms: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ctx.args.namespace);
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone) => {
                if let Err(e) = write_configmap(&ctx, &cms, &store).await {
                    warn!(error = %e, "writing the ConfigMap failed");
                }
            }
            Ok(_) => {}
            Err(e) => {
                warn!(error = %e, "node watch failed");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn write_configmap(
    ctx: &Ctx,
    api: &Api<ConfigMap>,
    store: &Store<Node>,
) -> Result<(), kube::Error> {
    let nodes = store.state();
    let read: Vec<ClusterNode> = nodes.iter().map(|n| ClusterNode::of(n)).collect();
    let inventory = scan(ScanInput::nodes(&read));
    let (data, _summary) = configmap_data(&inventory, DATA_BUDGET_BYTES);
    let body = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": { "name": ctx.args.configmap_name, "namespace": ctx.args.namespace },
        "data": data,
    });
    api.patch(
        &ctx.args.configmap_name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(body),
    )
    .await?;
    Ok(())
}
