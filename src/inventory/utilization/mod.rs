//! Which held GPUs sit idle: dcgm-exporter's activity, as Prometheus answered for the idle ones, joined with
//! who holds each GPU (docs/utilization.md).
//!
//! The source (`sources::utilization`) asks Prometheus which GPU series stayed below the threshold through the
//! whole window, reads each answer's labels into an [`IdleSeries`] ([`series`]), and hands the scan an
//! [`Round`]. Here, without I/O, each idle series is matched to a holding ([`join`]): by DRA claim, by pod
//! (either label spelling), or by the node's device or single holder where the pod labels are missing; a
//! shared GPU's series on every holder of it, and a busy shared GPU on no one ([`shared`]). A GPU that no
//! series names is unknown, never idle.

mod found;
pub mod index;
pub mod join;
pub mod memo;
mod place;
mod report;
pub mod round;
pub mod series;
mod shared;
pub mod shared_nodes;

pub use join::{Assessment, NodeJoin, assess};
pub use memo::IdleMemo;
pub use round::{Reading, Round};
pub use series::{IdleSeries, SeriesHolder};

#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
