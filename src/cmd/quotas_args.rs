//! The flags of `quotas` (`gpu-inventory-operator quotas`, `kubectl gpu-inventory quotas`), in a file of
//! their own: the command lines name them, and `quotas` names the command line's shared flags, so they cannot
//! live in either without an import circle (tests/layers.rs), as `fit_args.rs`.

use clap::Args;

use super::output::{OutputFormat, parse_output};

/// Flags of `quotas`.
#[derive(Debug, Args, Clone)]
pub struct QuotasArgs {
    /// Read nodes, pods and Kueue's objects (ResourceFlavors, ClusterQueues, Cohorts, LocalQueues, Workloads)
    /// from a `kubectl get -A -o yaml|json` dump instead of the cluster; `-` reads stdin.
    #[arg(
        long,
        short = 'f',
        env = "GPUINV_QUOTAS_FROM_FILE",
        value_name = "FILE"
    )]
    pub from_file: Option<String>,
    /// The cap on a `-f` dump.
    #[command(flatten)]
    pub input: super::input_args::InputArgs,
    /// Only nodes matching this label selector: a flavor whose `nodeLabels` imply it is judged in full, any
    /// other only counted where it has nodes here (docs/quotas.md).
    #[arg(long, short = 'l', value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Output format: `table` (`wide` is the same), `json` / `yaml` (`{quotas, workloadIssues,
    /// workloadIssueCount}` as the GpuInventory status holds them), `name` (each flavor, then each workload
    /// that cannot fit) or `jsonpath=TEMPLATE` (over the `-o json` object).
    #[arg(long, short = 'o', env = "GPUINV_QUOTAS_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// Print only the quota table's rows: no header, workloads or messages.
    #[arg(long, env = "GPUINV_QUOTAS_NO_HEADERS")]
    pub no_headers: bool,
}
