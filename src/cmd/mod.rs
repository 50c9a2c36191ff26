//! The commands: `run` (the operator), `scan` (one read-only pass), `fit` (can a job of G GPUs start, and
//! where), `quotas` (Kueue's quotas against the GPUs) and `crd` (print the CRD), the command
//! line that selects them, and the kubectl plugin (`kubectl gpu-inventory`, the same binary by another name),
//! whose `map` draws the fleet one cell per GPU.

pub mod cli;
pub mod completion;
pub mod connection_args;
pub mod crd_args;
mod dump_gaps;
mod duration_arg;
pub mod fit;
pub mod fit_args;
mod fit_plan;
mod fit_plan_gang;
mod fit_plan_json;
mod fit_plan_traits;
mod fit_share;
pub mod fleet;
pub mod fleet_args;
pub mod group_by;
pub mod input_args;
pub(crate) mod map;
pub(crate) mod map_args;
mod namespace_filter;
pub mod output;
pub mod plugin;
pub mod quotas;
pub mod quotas_args;
pub(crate) mod render;
pub mod run;
pub mod run_args;
pub mod scan;
pub mod scan_args;
pub mod utilization;
pub mod utilization_args;
pub mod utilization_source_args;
