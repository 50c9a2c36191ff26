//! `kubectl gpu-inventory --context A --context B ...` (or `--all-contexts`): each cluster scanned as the
//! plugin scans one, then one table with a CLUSTER column (per cluster, or per node with `-o wide`) and the
//! fleet's totals; `-o json|yaml` as `{clusters: [{context, inventory}], errors: [{context, message}],
//! totals}`. Exit code: 2 when some cluster could not be read, else 1 when some GPU node has an issue, else 0.

use std::process::ExitCode;

use serde::Serialize;

use super::{ClusterRead, FleetArgs, read_each, report_errors};
use crate::cmd::cli::{DEFAULT_CHUNK_SIZE, GlobalArgs, OutputFormat, ScanArgs};
use crate::cmd::group_by::GroupBy;
use crate::cmd::output::formatted;
use crate::cmd::output::stdout::{EXIT_CLOSED_PIPE, emit};
use crate::cmd::render::{ClusterRow, fleet, fleet_nodes};
use crate::cmd::scan::{
    EXIT_ERROR, EXIT_HEALTHY, EXIT_ISSUES, exit_code, failed, gpunode_names, scan_status,
};
use crate::cmd::utilization_source_args::UtilizationSourceArgs;
use crate::crd::GpuInventoryStatus;
use crate::inventory::fleet::{add_up, summarize};
use crate::inventory::model::{ClusterSummary, FleetTotals};

/// What the table across clusters reads from the plugin's flags.
pub(crate) struct AcrossArgs<'a> {
    /// Connection flags (each context's own).
    pub(crate) global: &'a GlobalArgs,
    /// The deadline per cluster.
    pub(crate) fleet: &'a FleetArgs,
    /// `-o`.
    pub(crate) output: OutputFormat,
    /// Not `--no-headers`.
    pub(crate) headers: bool,
    /// `-l`.
    pub(crate) selector: Option<String>,
    /// `--prometheus-url` and the rest, the same for every cluster.
    pub(crate) utilization: UtilizationSourceArgs,
}

/// One cluster read: its summary and its status as `scan` prints it.
pub(crate) struct ClusterScan {
    summary: ClusterSummary,
    status: GpuInventoryStatus,
}

/// Reads every context and prints the fleet.
pub(crate) async fn run(args: &AcrossArgs<'_>, contexts: &[String]) -> ExitCode {
    let scan_args = ScanArgs {
        from_file: None,
        output: OutputFormat::Json,
        no_headers: false,
        selector: args.selector.clone(),
        group_by: GroupBy::Node,
        chunk_size: DEFAULT_CHUNK_SIZE,
        status_nodes_budget: None,
        utilization: args.utilization.clone(),
        input: Default::default(),
    };
    let reads = read_each(contexts, args.fleet.per_cluster(), |context| {
        let global = args.global.for_context(&context);
        let scan_args = &scan_args;
        async move {
            let (inventory, status, gaps) = scan_status(&global, scan_args).await?;
            // Clusters are read live, never from a dump: there is nothing to say, unless that changes.
            gaps.say();
            Ok(ClusterScan {
                summary: summarize(&inventory),
                status,
            })
        }
    })
    .await;
    let code = match shown(&reads, &args.output, args.headers) {
        Ok(text) => emit(&text, fleet_exit_code(&reads)),
        Err(e) => return failed(&e),
    };
    // A reader that closed the pipe wants no more, errors included.
    if code != ExitCode::from(EXIT_CLOSED_PIPE) {
        report_errors(&reads);
    }
    code
}

/// 2 when some cluster could not be read; else 1 when some listed GPU node has an issue; else 0.
fn fleet_exit_code(reads: &[ClusterRead<ClusterScan>]) -> ExitCode {
    if reads.iter().any(|r| r.result.is_err()) {
        return ExitCode::from(EXIT_ERROR);
    }
    let issues = reads
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .any(|scan| exit_code(&scan.status) == ExitCode::from(EXIT_ISSUES));
    ExitCode::from(if issues { EXIT_ISSUES } else { EXIT_HEALTHY })
}

/// The fleet as `-o` asks: the clusters' table (`wide`: every node first), or the JSON document (json, yaml,
/// jsonpath); `name` lists each cluster's GPU nodes, in context order, as `scan -o name` does.
fn shown(
    reads: &[ClusterRead<ClusterScan>],
    output: &OutputFormat,
    headers: bool,
) -> crate::error::Result<String> {
    let rows: Vec<ClusterRow<'_>> = reads
        .iter()
        .map(|r| ClusterRow {
            name: &r.context,
            summary: r
                .result
                .as_ref()
                .map(|s| &s.summary)
                .map_err(String::as_str),
        })
        .collect();
    let statuses: Vec<(&str, &GpuInventoryStatus)> = reads
        .iter()
        .filter_map(|r| Some((r.context.as_str(), &r.result.as_ref().ok()?.status)))
        .collect();
    let table = |wide: bool| match (wide, headers) {
        (false, _) => fleet(&rows, headers),
        (true, true) => fleet_nodes(&statuses, true) + "\n" + &fleet(&rows, true),
        (true, false) => fleet_nodes(&statuses, false),
    };
    let names = || {
        statuses
            .iter()
            .flat_map(|(_, s)| gpunode_names(s))
            .collect()
    };
    formatted(output, &fleet_json(reads), names, table)
}

/// `-o json|yaml` across clusters.
#[derive(Serialize)]
struct FleetJson<'a> {
    clusters: Vec<ClusterJson<'a>>,
    errors: Vec<ErrorJson<'a>>,
    totals: TotalsJson,
}

#[derive(Serialize)]
struct ClusterJson<'a> {
    context: &'a str,
    inventory: &'a GpuInventoryStatus,
}

/// A cluster that could not be read.
#[derive(Serialize)]
pub(crate) struct ErrorJson<'a> {
    /// The context.
    pub(crate) context: &'a str,
    /// Why.
    pub(crate) message: &'a str,
}

/// The fleet's totals as JSON prints them (the hub's `fleet` prints the same).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TotalsJson {
    clusters: u32,
    nodes: u32,
    gpus: u64,
    free: u64,
    unhealthy: u64,
    products: Vec<ProductJson>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProductJson {
    #[serde(skip_serializing_if = "Option::is_none")]
    vendor: Option<String>,
    product: String,
    clusters: u32,
    gpus: u64,
    free: u64,
    unhealthy: u64,
    largest_free_gang: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    largest_in: Option<String>,
}

impl From<FleetTotals> for TotalsJson {
    fn from(totals: FleetTotals) -> TotalsJson {
        TotalsJson {
            clusters: totals.clusters,
            nodes: totals.nodes,
            gpus: totals.gpus,
            free: totals.free,
            unhealthy: totals.unhealthy,
            products: totals
                .products
                .into_iter()
                .map(|p| ProductJson {
                    vendor: p.vendor,
                    product: p.product,
                    clusters: p.clusters,
                    gpus: p.gpus,
                    free: p.free,
                    unhealthy: p.unhealthy,
                    largest_free_gang: p.largest_free_gang,
                    largest_in: p.largest_in,
                })
                .collect(),
        }
    }
}

fn fleet_json(reads: &[ClusterRead<ClusterScan>]) -> FleetJson<'_> {
    let read: Vec<(&str, &ClusterSummary)> = reads
        .iter()
        .filter_map(|r| Some((r.context.as_str(), &r.result.as_ref().ok()?.summary)))
        .collect();
    FleetJson {
        clusters: reads
            .iter()
            .filter_map(|r| {
                Some(ClusterJson {
                    context: &r.context,
                    inventory: &r.result.as_ref().ok()?.status,
                })
            })
            .collect(),
        errors: errors(reads),
        totals: add_up(read).into(),
    }
}

/// The clusters that could not be read, as JSON lists them.
pub(crate) fn errors<T>(reads: &[ClusterRead<T>]) -> Vec<ErrorJson<'_>> {
    reads
        .iter()
        .filter_map(|r| {
            Some(ErrorJson {
                context: &r.context,
                message: r.result.as_ref().err()?,
            })
        })
        .collect()
}
