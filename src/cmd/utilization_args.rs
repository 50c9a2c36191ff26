//! The flags of `idle` (`gpu-inventory-operator idle`, `kubectl gpu-inventory idle`), in a file of their own
//! for the reason `quotas_args.rs` gives.

use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::crd::{IdleEntry, UtilizationStatus};

use super::utilization_source_args::UtilizationSourceArgs;

/// Flags of `idle`.
#[derive(Debug, Args, Clone)]
pub struct UtilizationArgs {
    /// Only nodes matching this label selector.
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format: `table`, or `json` / `yaml` (`{utilization, namespaces, nodes}` as the GpuInventory and
    /// the GpuNodes hold them).
    #[arg(long, short = 'o', env = "GPUINV_IDLE_OUTPUT", value_enum, default_value_t = UtilizationOutput::Table)]
    pub output: UtilizationOutput,
    /// Where Prometheus is and what idle means (`--prometheus-url` is required here).
    #[command(flatten)]
    pub utilization: UtilizationSourceArgs,
}

/// Output formats of `idle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UtilizationOutput {
    /// The state, the idle units per namespace, then the idle holdings node by node.
    Table,
    /// One JSON object.
    Json,
    /// One YAML document.
    Yaml,
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
