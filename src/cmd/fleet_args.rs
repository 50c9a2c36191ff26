//! The flags of several clusters: the plugin's across contexts ([`FleetArgs`]) and the hub's `fleet`
//! ([`FleetHubArgs`]). A leaf: the command line names them without the commands' code.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::duration_arg::parse_duration;
use crate::crd::DEFAULT_CLUSTER_PROPERTY;

/// The flags of a read across clusters.
#[derive(Debug, Args, Clone)]
pub struct FleetArgs {
    /// Read every context of the kubeconfig, one cluster each, side by side (instead of `--context A
    /// --context B ...`).
    #[arg(long, global = true, env = "GPUINV_ALL_CONTEXTS")]
    pub all_contexts: bool,
    /// How long each cluster may take across contexts (connecting, listing, scanning); a cluster past it is
    /// named with the error and the others are shown. Also bounds the whole command.
    #[arg(long, global = true, env = "GPUINV_CLUSTER_TIMEOUT", default_value = "10s",
          value_parser = parse_duration)]
    pub cluster_timeout: Duration,
}

/// Flags of `fleet`.
#[derive(Debug, Args, Clone)]
pub struct FleetHubArgs {
    /// The property carrying the GPU summary: the members' `--cluster-property`.
    #[arg(long, default_value = DEFAULT_CLUSTER_PROPERTY)]
    pub property: String,
    /// Output format: `table` or `json`.
    #[arg(long, short = 'o', value_enum, default_value_t = HubOutput::Table)]
    pub output: HubOutput,
}

/// How `fleet` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HubOutput {
    /// The clusters, then the fleet's totals.
    Table,
    /// `{clusters: [{cluster, observed, summary}], errors: [{cluster, message}], withoutSummary, totals}`.
    Json,
}
