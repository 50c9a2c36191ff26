//! `kubectl gpu-inventory`: the same binary run under the name `kubectl-gpu_inventory` (a symlink or copy on
//! PATH; `make install-plugin`, or krew) is a kubectl plugin. It prints `scan`'s live view of the cluster
//! (tables from `cmd::render`, the listing of [`super::scan`]), in colour on a terminal, and with
//! `--watch` follows the operator's own sources (one node watch, one pod watch) and redraws on each change.
//! `kubectl gpu-inventory fit` is `gpu-inventory-operator fit` ([`super::fit`]): the same flags and answer.

// `pub(super)`: `map`'s flags take the same `--color`.
pub(super) mod colour;

use std::process::ExitCode;
use std::time::Duration;

use crate::inventory::Inventory;
use crate::inventory::selector::LabelSelector;
use clap::{Parser, Subcommand};

use super::cli::{DEFAULT_CHUNK_SIZE, GlobalArgs, OutputFormat, ScanArgs};
use super::crd_args::CompletionArgs;
use super::fit_args::FitArgs;
use super::fleet::across::AcrossArgs;
use super::fleet::fleet_contexts;
use super::fleet_args::{FleetArgs, FleetHubArgs};
use super::group_by::{GroupBy, parse_group_by};
use super::output::parse_output;
use super::output::stdout::{emit, say, write_failed};
use super::scan::{
    EXIT_ERROR, ScanShown, exit_code, failed, format_scan, scan_status, status_of, table_level,
};
use crate::crd::GpuInventoryStatus;
use crate::error::{Error, Result};
use crate::inventory::selector::parse_selector;
use crate::runtime::client::connect;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::{Readers, Sources, SourcesConfig};
pub(crate) use colour::Color;
use colour::{Screen, colourise, draw, stream};

/// The executable name kubectl looks for to run `kubectl gpu-inventory`.
pub(crate) const PLUGIN_NAME: &str = "kubectl-gpu_inventory";

/// How long `--watch` waits for the first full list of nodes and pods.
pub const FIRST_LIST_TIMEOUT: Duration = Duration::from_secs(30);

/// GPU nodes of the cluster: product, GPUs, free, Ready, issues. Exit code: 0 every GPU node healthy, 1 some
/// issue, 2 error (as `gpu-inventory-operator scan`).
#[derive(Debug, Parser)]
// `bin_name`: kubectl runs the plugin as `kubectl-gpu_inventory`, but its users type `kubectl gpu-inventory`
// (and `kubectl gpu-inventory fit`), which is what the usage lines should say. Not
// `args_conflicts_with_subcommands`: it would refuse kubectl's connection flags before `fit`
// (`kubectl gpu-inventory --context lab fit ...`); the table's own flags are refused with `fit` in `run`.
#[command(
    name = "kubectl gpu-inventory",
    bin_name = "kubectl gpu-inventory",
    version
)]
pub struct PluginArgs {
    /// `fit`; without one, the table.
    #[command(subcommand)]
    pub(crate) command: Option<PluginCommand>,
    /// Output format: `table`, `wide` (adds allocated, MIG/sharing, sources, each node's NVLink partition and
    /// network domain, notes), `json` or `yaml` (the GpuInventory status object), `name`
    /// (`gpunode.homelab.youngju.dev/NAME` per GPU node) or `jsonpath=TEMPLATE` (over the `-o json` object).
    #[arg(long, short = 'o', value_name = "FORMAT", value_parser = parse_output, default_value = "table")]
    pub(crate) output: OutputFormat,
    /// Print only the table's rows: no header, totals, legend, notes or issue lines (for scripts).
    #[arg(long)]
    pub(crate) no_headers: bool,
    /// Read nodes, pods and DRA objects from a `kubectl get ... -o yaml|json` dump instead of the cluster
    /// (`-` reads stdin), as `gpu-inventory-operator scan -f` does.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub(crate) from_file: Option<String>,
    /// Only nodes matching this label selector.
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub(crate) selector: Option<String>,
    /// Keep watching nodes and pods and redraw on every change (Ctrl-C stops).
    #[arg(long, short = 'w')]
    pub(crate) watch: bool,
    /// Rows of the table: `node`, `product` (GPU model), `namespace`, `vendor`, or a topology level, one row
    /// per domain and product (nodes, GPUs, what it offers to pods of the product's GPUs per node, problems):
    /// `nvlink` (the NVLink partition) or a node label key (`cloud.google.com/gce-topology-block`, a rack
    /// label, any key).
    #[arg(long, value_name = "GROUPING", default_value = "node", value_parser = parse_group_by)]
    pub(crate) group_by: GroupBy,
    /// Colour: `auto` (only on a terminal, and not when NO_COLOR is set or TERM=dumb), `always` or `never`.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub(crate) color: Color,
    /// With `--prometheus-url`, an IDLE column: the held units that sat idle (docs/utilization.md).
    #[command(flatten)]
    pub utilization: super::utilization_source_args::UtilizationSourceArgs,
    /// kubectl's --kubeconfig, --context (and --log-format, for RUST_LOG diagnostics).
    #[command(flatten)]
    pub global: GlobalArgs,
    /// Several clusters: `--context` more than once, or `--all-contexts` (docs/fleet.md).
    #[command(flatten)]
    pub fleet: FleetArgs,
}

/// The plugin's subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum PluginCommand {
    /// Can a job of G GPUs start now, and where: in one node, one NVLink partition or one network domain
    /// (as `gpu-inventory-operator fit`). Exit code: 0 it fits, 1 it does not, 2 error.
    Fit(FitArgs),
    /// Kueue's quotas against the GPUs: flavor, quota, healthy, free, issues, and the pending Workloads that
    /// can never be admitted (as `gpu-inventory-operator quotas`). Exit code: 0 none, 1 some issue, 2 error.
    Quotas(super::quotas_args::QuotasArgs),
    /// Which held GPUs sat idle through the window, per namespace and per pod or claim (as
    /// `gpu-inventory-operator utilization`; needs `--prometheus-url`). Exit code: 0 none, 1 some, 2 error.
    /// (`idle` is the same command.)
    #[command(visible_alias = "idle")]
    Utilization(super::utilization_args::UtilizationArgs),
    /// The fleet as a multi-cluster hub sees it: the GPU summaries member clusters publish as ClusterProperties,
    /// read from the hub's ClusterProfiles (as `gpu-inventory-operator fleet`). Exit code: 0 read, 2 error.
    Fleet(FleetHubArgs),
    /// The fleet as rows of cells, one per GPU (free, held, idle, shared, unhealthy, unusable), grouped by
    /// NVLink domain or network block, else by product; `--gpus G --plan` draws `fit --plan`'s moves over it
    /// (docs/fragmentation.md). Exit code: 0 drawn (with `--gpus`: 0 fits now, 1 not), 2 error.
    Map(super::map_args::MapArgs),
    /// Print a shell completion script for `kubectl-gpu_inventory` (`source <(kubectl-gpu_inventory
    /// completion bash)`).
    Completion(CompletionArgs),
}

/// Whether the process was started as the kubectl plugin (its name, without directory, is
/// `kubectl-gpu_inventory`).
pub fn invoked_as_plugin(argv0: &str) -> bool {
    let name = std::path::Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == PLUGIN_NAME || name.strip_suffix(".exe") == Some(PLUGIN_NAME)
}

/// Runs the plugin.
pub async fn run(args: PluginArgs) -> ExitCode {
    if let Some(PluginCommand::Completion(shell)) = &args.command {
        let command = <PluginArgs as clap::CommandFactory>::command();
        return super::completion::completion(shell, command, PLUGIN_NAME);
    }
    let contexts = match fleet_contexts(&args.global, &args.fleet) {
        Ok(contexts) => contexts,
        Err(e) => return failed(&e),
    };
    if let Some(contexts) = &contexts {
        if args.from_file.is_some() {
            return failed(&Error::InvalidFlag(
                "-f/--from-file reads one dump: leave out --context (more than one) and --all-contexts"
                    .to_owned(),
            ));
        }
        return across_clusters(&args, contexts).await;
    }
    // One cluster: --cluster-timeout, when given, is the whole command's deadline.
    match args.fleet.cluster_timeout {
        Some(_) if args.watch => failed(&Error::InvalidFlag(
            "--cluster-timeout bounds a read; -w/--watch runs until stopped (its start is bounded by \
             --request-timeout): leave out one of them"
                .to_owned(),
        )),
        Some(deadline) => match tokio::time::timeout(deadline, one_cluster(&args)).await {
            Ok(code) => code,
            // Dropping the read stops it: a credential plugin still running is killed and reaped.
            Err(_) => failed(&Error::InvalidFlag(format!(
                "no answer within {} (--cluster-timeout)",
                crate::runtime::waiting::seconds(deadline)
            ))),
        },
        None => one_cluster(&args).await,
    }
}

/// The plugin's command in one cluster (or on a dump).
async fn one_cluster(args: &PluginArgs) -> ExitCode {
    if let Some(PluginCommand::Fleet(hub)) = &args.command {
        return super::fleet::hub::run(&args.global, hub).await;
    }
    if let Some(PluginCommand::Fit(fit)) = &args.command {
        return match refused_before(args, "fit") {
            Some(code) => code,
            None => super::fit::run(&args.global, fit).await,
        };
    }
    if let Some(PluginCommand::Quotas(quotas)) = &args.command {
        return match refused_before(args, "quotas") {
            Some(code) => code,
            None => super::quotas::run(&args.global, quotas).await,
        };
    }
    if let Some(PluginCommand::Map(map)) = &args.command {
        if let Some(code) = refused_before(args, "map") {
            return code;
        }
        // `kubectl gpu-inventory --prometheus-url URL map` as well as `... map --prometheus-url URL`.
        let mut map = map.clone();
        if map.utilization.prometheus_url.is_none() {
            map.utilization = args.utilization.clone();
        }
        let colour = Screen::of(map.color).colour;
        return super::map::run(&args.global, &map, colour).await;
    }
    if let Some(PluginCommand::Utilization(idle)) = &args.command {
        // `kubectl gpu-inventory --prometheus-url URL idle` as well as `... idle --prometheus-url URL`.
        let mut idle = idle.clone();
        if idle.utilization.prometheus_url.is_none() {
            idle.utilization = args.utilization.clone();
        }
        return super::utilization::run(&args.global, &idle).await;
    }
    let screen = Screen::of(args.color);
    let result = if args.watch {
        if args.from_file.is_some() {
            return failed(&Error::InvalidFlag(
                "-w/--watch follows a cluster; a dump (-f) does not change: leave out one of them"
                    .to_owned(),
            ));
        }
        watch(args, screen).await
    } else {
        once(args, screen.colour).await
    };
    match result {
        Ok(code) => code,
        Err(e) => failed(&e),
    }
}

/// The table or `fit` in each of `contexts`; the other subcommands read one cluster.
async fn across_clusters(args: &PluginArgs, contexts: &[String]) -> ExitCode {
    let refuse = |why: &str| failed(&Error::InvalidFlag(why.to_owned()));
    match &args.command {
        Some(PluginCommand::Fit(fit)) => {
            super::fleet::fit_across::run(&args.global, &args.fleet, fit, contexts).await
        }
        Some(
            PluginCommand::Quotas(_)
            | PluginCommand::Map(_)
            | PluginCommand::Utilization(_)
            | PluginCommand::Fleet(_)
            | PluginCommand::Completion(_),
        ) => refuse(
            "several contexts are read by the table and by `fit`; `quotas`, `map`, `idle` and `fleet` read \
             one cluster (give one --context)",
        ),
        None if args.watch => refuse("-w/--watch follows one cluster; give one --context"),
        None if args.group_by != GroupBy::Node => refuse(
            "--group-by across clusters: the fleet's table has one row per cluster (-o wide: per node); \
             group one cluster with one --context",
        ),
        None => {
            let across = AcrossArgs {
                global: &args.global,
                fleet: &args.fleet,
                output: args.output.clone(),
                headers: !args.no_headers,
                selector: args.selector.clone(),
                utilization: args.utilization.clone(),
            };
            super::fleet::across::run(&across, contexts).await
        }
    }
}

/// An error exit, said on stderr, when the table's own flags come before `command` (they would be ignored:
/// the subcommand takes its own after its name).
fn refused_before(args: &PluginArgs, command: &str) -> Option<ExitCode> {
    let table_flags = table_flags(args);
    if table_flags.is_empty() {
        return None;
    }
    say(&format!(
        "error: {} belong(s) to the table, not to `{command}`; `{command}` takes its own -f, -l and -o after \
         its name (kubectl gpu-inventory {command} --help)",
        table_flags.join(", ")
    ));
    Some(ExitCode::from(EXIT_ERROR))
}

/// The table's flags given other than by default (with `fit` they would be ignored).
fn table_flags(args: &PluginArgs) -> Vec<&'static str> {
    [
        (args.output != OutputFormat::Table, "-o/--output"),
        (args.no_headers, "--no-headers"),
        (args.from_file.is_some(), "-f/--from-file"),
        (args.selector.is_some(), "-l/--selector"),
        (args.watch, "-w/--watch"),
        (args.group_by != GroupBy::Node, "--group-by"),
        (args.color != Color::Auto, "--color"),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect()
}

async fn once(args: &PluginArgs, color: bool) -> Result<ExitCode> {
    let scan_args = ScanArgs {
        from_file: args.from_file.clone(),
        output: args.output.clone(),
        no_headers: args.no_headers,
        selector: args.selector.clone(),
        group_by: args.group_by.clone(),
        chunk_size: DEFAULT_CHUNK_SIZE,
        status_nodes_budget: None,
        utilization: args.utilization.clone(),
        input: Default::default(),
    };
    let (inventory, status, gaps) = scan_status(&args.global, &scan_args).await?;
    // A dump (`-f`) with objects not read fails closed, as `scan -f` does (exit 3).
    Ok(emit(
        &shown(&inventory, &status, args, color)?,
        gaps.or(exit_code(&status)),
    ))
}

/// The text for `status` (of `inventory`), coloured when asked (tables only).
fn shown(
    inventory: &Inventory,
    status: &GpuInventoryStatus,
    args: &PluginArgs,
    color: bool,
) -> Result<String> {
    let shown = ScanShown {
        format: &args.output,
        group_by: &args.group_by,
        headers: !args.no_headers,
    };
    let text = format_scan(inventory, status, &shown)?;
    Ok(if color && args.output.is_table() {
        colourise(&text)
    } else {
        text
    })
}

async fn watch(args: &PluginArgs, screen: Screen) -> Result<ExitCode> {
    let selector = match &args.selector {
        Some(text) => parse_selector(text).map_err(|e| Error::InvalidFlag(format!("-l: {e}")))?,
        None => LabelSelector::default(),
    };
    // Long-lived watches: no read timeout on their connections (the server's first answer is still awaited
    // within --request-timeout, and a refused or silent server said as such).
    let target = crate::runtime::client::ClientConfig {
        watches: true,
        ..args.global.client_config()
    };
    let connection = connect(&target).await?;
    let health = Health::new(Metrics::new().watch_restarts.clone());
    let config = SourcesConfig {
        node_label_selector: args.selector.clone(),
        dra_drivers: args.global.dra_drivers(),
        health: args.global.health_table(),
        // The level a `--group-by` table names is read as one, as `scan` reads it.
        topology_labels: args
            .global
            .topology_labels
            .iter()
            .map(String::as_str)
            .chain(table_level(&args.output, &args.group_by))
            .map(str::to_owned)
            .collect(),
        utilization: args.utilization.source()?,
    };
    let (sources, feed) = Sources::start(connection.client, Readers::of(&config), health.clone());
    let feed = tokio::spawn(feed);
    let mut changes = sources.changes();
    if tokio::time::timeout(FIRST_LIST_TIMEOUT, sources.wait_until_ready())
        .await
        .is_err()
    {
        feed.abort();
        let why = health.readiness(Duration::ZERO).err().unwrap_or_default();
        return Err(Error::InvalidFlag(format!(
            "no full list of nodes and pods from {} within {FIRST_LIST_TIMEOUT:?} ({why}); the plugin needs \
             list and watch on nodes and pods, and on resourceslices, resourceclaims, deviceclasses and \
             devicetaintrules where resource.k8s.io serves them (--dra-driver= skips DRA)",
            connection.cluster_url
        )));
    }
    let mut shown_status: Option<GpuInventoryStatus> = None;
    let mut last = ExitCode::SUCCESS;
    loop {
        let inventory = sources
            .snapshot()
            .scan(&selector, sources.node_universe(), None);
        // Planned against what is on screen, as the operator plans against the server: unchanged content
        // (heartbeats, a pod that changed nothing visible) draws nothing.
        // -n lists one namespace's objects: what is planned against the screen is that listing.
        let listed = status_of(
            &inventory,
            shown_status.as_ref(),
            args.global.listed_namespace(),
        );
        if let Some(status) = listed {
            let text = shown(&inventory, &status, args, screen.colour)?;
            let written = match &args.output {
                format if format.is_table() => draw(&text, screen.redraw),
                format => stream(&text, matches!(format, OutputFormat::Yaml)),
            };
            if let Err(e) = written {
                // The reader is gone (a closed pipe) or the disk is full: stop watching.
                feed.abort();
                return Ok(write_failed(&e));
            }
            last = exit_code(&status);
            shown_status = Some(status);
        }
        tokio::select! {
            more = changes.next() => if !more { break },
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    feed.abort();
    Ok(last)
}

#[cfg(test)]
mod tests;
