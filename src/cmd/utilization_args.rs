//! The flags of `idle` (`gpu-inventory-operator idle`, `kubectl gpu-inventory idle`), in a file of their own
//! for the reason `quotas_args.rs` gives.

use clap::Args;
use serde::Serialize;

use crate::crd::{IdleEntry, UtilizationStatus};

use super::output::{OutputFormat, parse_output};
use super::utilization_source_args::UtilizationSourceArgs;

/// Flags of `idle`.
#[derive(Debug, Args, Clone)]
pub struct UtilizationArgs {
    /// Only nodes matching this label selector.
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format: `table` (`wide` is the same), `json` / `yaml` (`{utilization, namespaces, nodes}` as the
    /// GpuInventory and the GpuNodes hold them), `name` (`node/NAME` per node with idle holdings) or
    /// `jsonpath=TEMPLATE` (over the `-o json` object).
    #[arg(long, short = 'o', env = "GPUINV_IDLE_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// Print only the rows of the idle holdings: no state line, header or namespace table.
    #[arg(long, env = "GPUINV_IDLE_NO_HEADERS")]
    pub no_headers: bool,
    /// Where Prometheus is and what idle means (`--prometheus-url` is required here).
    #[command(flatten)]
    pub utilization: UtilizationSourceArgs,
}

/// What `-o json|yaml` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationJson {
    /// `status.utilization` as the operator writes it.
    pub utilization: UtilizationStatus,
    /// The namespaces holding idle units.
    pub namespaces: Vec<NamespaceIdle>,
    /// The nodes with idle holdings.
    pub nodes: Vec<NodeIdle>,
}

/// One namespace's idle units.
#[derive(Debug, Serialize)]
pub struct NamespaceIdle {
    /// The namespace.
    pub name: String,
    /// Per resource, its idle units.
    pub idle: std::collections::BTreeMap<String, u64>,
}

/// One node's idle holdings.
#[derive(Debug, Serialize)]
pub struct NodeIdle {
    /// The node.
    pub name: String,
    /// Its idle holdings, as its GpuNode lists them.
    pub idle: Vec<IdleEntry>,
}
