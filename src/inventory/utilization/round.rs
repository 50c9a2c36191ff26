//! What the utilization source hands the scan: the idle series of its last round, or why there are none.

use super::series::IdleSeries;

/// What the utilization source last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Where it is read (the Prometheus URL, without credentials).
    pub source: String,
    /// The window a GPU must stay idle through, as written (`30m`).
    pub window: String,
    /// The rule, in words, for `status.utilization.message` while the state is `Current`.
    pub rule: String,
    /// The answer, or why there is none.
    pub reading: Reading,
    /// Set while the latest round failed and `reading` is the last answer, kept for `--utilization-hold`:
    /// why, and from when. A single slow answer then changes no figure and rewrites no GpuNode.
    pub held: Option<String>,
}

/// The last query round's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reading {
    /// Every query answered in full: the series that stayed idle through the window, sorted.
    Current(Vec<IdleSeries>),
    /// Not known, and why (Prometheus unreachable, an error, a partial answer, a refused size).
    Unknown(String),
}

impl Default for Reading {
    fn default() -> Self {
        Reading::Unknown("not queried yet".into())
    }
}
