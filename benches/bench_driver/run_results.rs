//! What one run of the steady scenario measured: `scenario` fills these, `report` writes them.

use std::collections::BTreeMap;

/// The cluster a run starts from.
pub struct Setup {
    pub nodes: usize,
    pub create_secs: f64,
    pub gpu_nodes: usize,
    pub gpu_nodes_ready: usize,
}

/// What each phase of a run measured.
pub struct Phases {
    pub startup: Startup,
    pub quiet: Quiet,
    pub latency: Latency,
    pub churn: Churn,
    pub burst: Burst,
}

pub struct Startup {
    pub converge_secs: f64,
    pub rss_mib: f64,
    pub requests: BTreeMap<String, u64>,
}

pub struct Quiet {
    pub cpu_secs: f64,
    pub requests: BTreeMap<String, u64>,
}

pub struct Latency {
    /// Milliseconds, sorted.
    pub ms: Vec<f64>,
    pub lost: usize,
    pub run_secs: f64,
}

pub struct Churn {
    pub changes: usize,
    pub send_secs: f64,
    pub settle_secs: f64,
    pub converged: bool,
    pub cpu_secs: f64,
    pub requests: BTreeMap<String, u64>,
}

/// The burst, and the program at the end of the run.
pub struct Burst {
    pub converged: bool,
    pub secs: f64,
    pub rss_after_mib: f64,
    pub total_cpu_secs: f64,
    pub alive: bool,
}
