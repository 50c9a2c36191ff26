//! The flood scenario's knobs (BENCH_FLOOD_*).

/// BENCH_FLOOD_APF: "1" is on, anything else off.
fn one_is_on(value: &str) -> Result<bool, String> {
    Ok(value == "1")
}

/// The flood scenario's knobs.
#[derive(Clone, Debug, clap::Args)]
pub struct FloodSettings {
    /// Flood scenario: nodes.
    #[arg(
        id = "flood-nodes",
        long = "flood-nodes",
        env = "BENCH_FLOOD_NODES",
        default_value = "500"
    )]
    pub nodes: usize,
    /// Flood scenario: flooding loops in flight.
    #[arg(
        id = "flood-tasks",
        long = "flood-tasks",
        env = "BENCH_FLOOD_TASKS",
        default_value = "64"
    )]
    pub tasks: usize,
    /// Flood scenario: changes timed per phase.
    #[arg(
        id = "flood-changes",
        long = "flood-changes",
        env = "BENCH_FLOOD_CHANGES",
        default_value = "40"
    )]
    pub changes: usize,
    /// Flood scenario: whether the cluster runs API Priority and Fairness ("1": on; hack/bench.sh sets it).
    #[arg(id = "flood-apf", long = "flood-apf", env = "BENCH_FLOOD_APF", default_value = "0", value_parser = one_is_on, action = clap::ArgAction::Set)]
    pub apf: bool,
}
