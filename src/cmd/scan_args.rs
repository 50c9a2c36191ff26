//! The flags of `scan`, and the scan behind the commands that ask the inventory a question (`fit`,
//! `quotas`, `utilization`). A leaf: the command line names them without the commands' code.

use clap::Args;

use super::group_by::{GroupBy, parse_group_by};
use super::output::{OutputFormat, parse_output};
use crate::publish::content::size_budget::MAX_STATUS_NODES_BUDGET_BYTES;

/// Flags of `scan`.
#[derive(Debug, Args, Clone)]
pub struct ScanArgs {
    /// Read nodes (and pods) from a `kubectl get nodes,pods -A -o yaml|json` dump instead of the cluster;
    /// `-` reads stdin. Without pods in the dump, nothing is allocated.
    #[arg(long, short = 'f', env = "GPUINV_SCAN_FROM_FILE", value_name = "FILE")]
    pub from_file: Option<String>,
    /// Output format: `table`, `wide` (adds sources and notes), `json`/`yaml` (exactly the GpuInventory
    /// status), `name` (`gpunode.homelab.youngju.dev/NAME` per GPU node) or `jsonpath=TEMPLATE` (kubectl's
    /// template over the `-o json` document, e.g. `jsonpath='{.nodes[*].name}'`).
    #[arg(long, short = 'o', env = "GPUINV_SCAN_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// Print only the table's rows: no header, totals, legend, notes or issue lines (for scripts).
    #[arg(long, env = "GPUINV_SCAN_NO_HEADERS")]
    pub no_headers: bool,
    /// Only scan nodes matching this label selector.
    #[arg(
        long,
        short = 'l',
        env = "GPUINV_SCAN_SELECTOR",
        value_name = "SELECTOR"
    )]
    pub selector: Option<String>,
    /// Rows of the table: `node` (one per GPU node), `product` (GPUs and free whole GPUs per GPU model),
    /// `namespace` (what its pods hold and what its pending pods wait for), `vendor`, or a topology level:
    /// `nvlink` or a node label key (`cloud.google.com/gce-topology-block`, a rack label, any key), one row
    /// per domain and product with its nodes, GPUs, what it offers to pods of the product's GPUs per node and
    /// its problems. `json`/`yaml` always print the whole status.
    #[arg(long, env = "GPUINV_SCAN_GROUP_BY", value_name = "GROUPING", default_value = "node",
          value_parser = parse_group_by)]
    pub group_by: GroupBy,
    /// Objects per LIST request of a live scan, as kubectl's `--chunk-size`: each page is decoded and
    /// stripped before the next is asked for, so a larger one holds more at once and makes fewer requests.
    /// 0 lists each kind in one request.
    #[arg(
        long,
        env = "GPUINV_SCAN_CHUNK_SIZE",
        value_name = "N",
        default_value_t = DEFAULT_CHUNK_SIZE
    )]
    pub chunk_size: u32,
    /// List in `nodes[]` only the GPU nodes an operator run with this `--status-nodes-budget` lists in its
    /// status (the same cut: nodes with issues first; `omittedNodes` and `nodesMessage` as it writes them);
    /// each entry keeps its DRA devices. Without it every GPU node is listed.
    #[arg(long, env = "GPUINV_SCAN_STATUS_NODES_BUDGET", value_name = "BYTES",
          value_parser = parse_status_budget)]
    pub status_nodes_budget: Option<usize>,
    /// Which held GPUs sit idle (an IDLE column, `namespaces[].idle`), from Prometheus.
    #[command(flatten)]
    pub utilization: super::utilization_source_args::UtilizationSourceArgs,
    /// The cap on a `-f` dump.
    #[command(flatten)]
    pub input: super::input_args::InputArgs,
}

impl ScanArgs {
    /// The scan behind a command that asks a question of the inventory (`fit`, `quotas`): the same dump or
    /// cluster and selector, the whole status, default paging.
    pub fn of_query(from_file: Option<String>, selector: Option<String>) -> ScanArgs {
        ScanArgs {
            from_file,
            output: OutputFormat::Json,
            no_headers: false,
            selector,
            group_by: GroupBy::Node,
            chunk_size: DEFAULT_CHUNK_SIZE,
            status_nodes_budget: None,
            utilization: Default::default(),
            input: Default::default(),
        }
    }
}

/// `scan --chunk-size`'s default (the kubectl plugin's too).
pub const DEFAULT_CHUNK_SIZE: u32 = 500;

/// Parses a byte size: a number of bytes, or a number with `Ki` or `Mi` (`KiB`, `MiB` too).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let (digits, unit) = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .map_or((trimmed, ""), |at| trimmed.split_at(at));
    let number: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 65536, 64Ki or 1Mi"))?;
    let factor = match unit.trim() {
        "" => 1,
        "Ki" | "KiB" => 1024,
        "Mi" | "MiB" => 1024 * 1024,
        other => return Err(format!("{text:?}: unknown unit {other:?} (use Ki or Mi)")),
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `--status-nodes-budget`: a byte size up to [`MAX_STATUS_NODES_BUDGET_BYTES`].
pub(crate) fn parse_status_budget(text: &str) -> Result<usize, String> {
    let bytes = parse_bytes(text)?;
    if bytes > MAX_STATUS_NODES_BUDGET_BYTES {
        return Err(format!(
            "{text:?} is over 1Mi: the status must stay under the API server's object size limit"
        ));
    }
    Ok(bytes)
}
