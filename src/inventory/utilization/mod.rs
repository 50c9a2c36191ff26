//! Which held GPUs sit idle: dcgm-exporter's activity, as Prometheus answered for the idle ones, joined with
//! who holds each GPU (docs/utilization.md).
//!
//! The source (`sources::utilization`) asks Prometheus which GPU series stayed below the threshold through the
//! whole window, reads each answer's labels into an [`IdleSeries`] ([`series`]), and hands the scan an
//! [`Activity`]. Here, without I/O, each idle series is matched to a holding ([`join`]): by DRA claim, by pod
//! (either label spelling), or by the node's device or single holder where the pod labels are missing. A GPU
//! that no series names is unknown, never idle.

pub mod activity;
pub mod join;
pub mod memo;
pub mod series;

pub use activity::{Activity, Reading};
pub use join::{Assessment, assess};
pub use memo::IdleMemo;
pub use series::{IdleSeries, SeriesHolder};

#[cfg(test)]
mod tests;
