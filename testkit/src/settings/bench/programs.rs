//! The bench driver's scenarios and programs under test, and the readers of their lists.

use super::super::words;

/// A scenario of BENCH_SCENARIOS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// Fixture nodes that never change by themselves (scenario.rs): start-up, quiet, latency, churn, burst.
    Steady,
    /// KWOK nodes heartbeating (heartbeat.rs): what the heartbeats cost each program.
    Heartbeat,
    /// Nodes and bound pods (allocation.rs): GPU allocation accounting, and the peer comparison.
    Allocation,
    /// ResourceSlices and allocated ResourceClaims (dra.rs): the DRA accounting.
    Dra,
    /// Another client hammering the API server (flood.rs): the operator's change -> status latency.
    Flood,
    /// Everything at once at up to 65,000 nodes (scale.rs): convergence, RSS, latency under load, a relist.
    Scale,
}

impl Scenario {
    /// A word of BENCH_SCENARIOS.
    pub fn parse(word: &str) -> Result<Self, String> {
        match word {
            "steady" => Ok(Scenario::Steady),
            "heartbeat" => Ok(Scenario::Heartbeat),
            "allocation" => Ok(Scenario::Allocation),
            "dra" => Ok(Scenario::Dra),
            "flood" => Ok(Scenario::Flood),
            "scale" => Ok(Scenario::Scale),
            other => Err(format!(
                "unknown scenario {other} (steady, heartbeat, allocation, dra, flood, scale)"
            )),
        }
    }
}

/// A program under test (benches/bench_driver/program.rs starts and stops them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// This revision's operator (BENCH_OPERATOR_BIN).
    Operator,
    /// The article-style baseline (BENCH_BASELINE_BIN).
    Baseline,
    /// An earlier revision's operator (BENCH_PREVIOUS_BIN): no GpuNodes, no `--status-nodes-budget`.
    Previous,
}

impl Program {
    /// A word of BENCH_PROGRAMS.
    pub fn parse(word: &str) -> Result<Self, String> {
        match word {
            "operator" => Ok(Program::Operator),
            "baseline" => Ok(Program::Baseline),
            other => Err(format!("unknown program {other} (operator, baseline)")),
        }
    }

    /// A word of BENCH_ALLOC_PROGRAMS / BENCH_DRA_PROGRAMS: operator or previous.
    pub fn parse_operator(word: &str) -> Result<Self, String> {
        match word {
            "operator" => Ok(Program::Operator),
            "previous" => Ok(Program::Previous),
            other => Err(format!("unknown program {other} (operator, previous)")),
        }
    }

    /// Its name in the report and the logs.
    pub fn name(self) -> &'static str {
        match self {
            Program::Operator => "operator",
            Program::Baseline => "baseline",
            Program::Previous => "previous",
        }
    }

    /// The previous operator sends the same User-Agent as today's: programs run one after the other, and
    /// every count is of a window in which only one of them runs.
    pub fn user_agent_prefix(self) -> &'static str {
        match self {
            Program::Operator | Program::Previous => "gpu-inventory-operator/",
            Program::Baseline => "gpu-inventory-baseline/",
        }
    }

    /// Whether the program writes one GpuNode per GPU node. A previous revision does too: every revision since
    /// b2b174c writes them, and a previous one whose GpuNodes were not watched converged without them, which
    /// made its start-up look faster than it was (BENCH_PREVIOUS_REV must be b2b174c or newer).
    pub fn writes_gpunodes(self) -> bool {
        matches!(self, Program::Operator | Program::Previous)
    }
}

/// The scenarios of BENCH_SCENARIOS.
pub(super) fn scenarios(value: &str) -> Result<Vec<Scenario>, String> {
    words(value, Scenario::parse)
}

/// The programs of BENCH_PROGRAMS.
pub(super) fn programs(value: &str) -> Result<Vec<Program>, String> {
    words(value, Program::parse)
}

/// The programs of BENCH_ALLOC_PROGRAMS / BENCH_DRA_PROGRAMS, each once.
pub(super) fn operator_programs(value: &str) -> Result<Vec<Program>, String> {
    let mut out = Vec::new();
    for p in words(value, Program::parse_operator)? {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}
