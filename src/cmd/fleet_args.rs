//! The flags of several clusters: the plugin's across contexts ([`FleetArgs`]) and the hub's `fleet`
//! ([`FleetHubArgs`]). A leaf: the command line names them without the commands' code.

use std::time::Duration;

use clap::Args;

use super::duration_arg::parse_duration;
use super::output::{OutputFormat, parse_output};
use crate::crd::DEFAULT_CLUSTER_PROPERTY;

/// The flags of a read across clusters.
#[derive(Debug, Args, Clone)]
pub struct FleetArgs {
    /// Read every context of the kubeconfig, one cluster each, side by side (instead of `--context A
    /// --context B ...`).
    #[arg(long, global = true, env = "GPUINV_ALL_CONTEXTS")]
    pub all_contexts: bool,
    /// How long each cluster may take (connecting, listing, scanning). Across contexts (default 10s): a
    /// cluster past it is named with the error and the others are shown. With one context, when given: the
    /// whole command's deadline (exit 2 past it; refused with --watch, which runs until stopped).
    #[arg(long, global = true, env = "GPUINV_CLUSTER_TIMEOUT", value_parser = parse_duration)]
    pub cluster_timeout: Option<Duration>,
}

/// Each cluster's deadline across contexts when `--cluster-timeout` is not given.
pub const DEFAULT_CLUSTER_TIMEOUT: Duration = Duration::from_secs(10);

impl FleetArgs {
    /// Each cluster's deadline across contexts.
    pub fn per_cluster(&self) -> Duration {
        self.cluster_timeout.unwrap_or(DEFAULT_CLUSTER_TIMEOUT)
    }
}

/// Flags of `fleet`.
#[derive(Debug, Args, Clone)]
pub struct FleetHubArgs {
    /// The property carrying the GPU summary: the members' `--cluster-property`.
    #[arg(long, default_value = DEFAULT_CLUSTER_PROPERTY)]
    pub property: String,
    /// Output format: `table` (`wide` is the same), `json`/`yaml` (`{clusters: [{cluster, observed,
    /// summary}], errors: [{cluster, message}], withoutSummary, totals}`), `name`
    /// (`clusterprofile.multicluster.x-k8s.io/NAME` per profile) or `jsonpath=TEMPLATE`.
    #[arg(long, short = 'o', value_name = "FORMAT", value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// Print only the clusters' rows: no header or totals.
    #[arg(long)]
    pub no_headers: bool,
}
