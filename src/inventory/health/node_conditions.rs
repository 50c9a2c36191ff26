//! Node conditions that GPU health monitors set, as a table: which condition types are GPU health, who
//! reports them, and whose GPUs they watch. A type no family names is never read, so an unknown condition is
//! never guessed at.

use std::fmt;

use crate::inventory::cluster_node::Condition;
use crate::inventory::star_pattern::{StarPattern, split_star};

use crate::inventory::model::{Issue, IssueReason, Vendor};

/// A condition type, exactly (`XIDErrors`) or with one `*` standing for any text (`Gpu*Watch`, `Gcm*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypePattern(StarPattern<String>);

impl TypePattern {
    /// Parses `TYPE`, `PREFIX*`, `*SUFFIX` or `PREFIX*SUFFIX`. A condition type is a qualified name
    /// (letters, digits, `-`, `_`, `.`, and one `/` before a DNS prefix), at most 316 characters.
    pub fn parse(text: &str) -> Result<TypePattern, String> {
        let text = text.trim();
        let valid = |part: &str| {
            part.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        };
        let (prefix, suffix) = split_star(text);
        if text.is_empty() || text == "*" {
            return Err(format!(
                "{text:?} names no condition type: give a type (`XIDErrors`) or a prefix with `*` (`Gcm*`)"
            ));
        }
        if text.len() > 316 || !valid(prefix) || !suffix.is_none_or(valid) {
            return Err(format!(
                "{:?} is not a condition type or pattern: use letters, digits, `-`, `_`, `.`, `/` and at most \
                 one `*`",
                text.chars().take(64).collect::<String>()
            ));
        }
        Ok(TypePattern(StarPattern::new(
            prefix.to_owned(),
            suffix.map(str::to_owned),
        )))
    }

    fn fixed(pattern: &str) -> TypePattern {
        TypePattern::parse(pattern).unwrap_or_else(|e| panic!("built-in pattern: {e}"))
    }

    /// Whether `type_` matches.
    pub fn matches(&self, type_: &str) -> bool {
        self.0.matches(type_)
    }
}

impl fmt::Display for TypePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.suffix() {
            None => f.write_str(self.0.prefix()),
            Some(suffix) => write!(f, "{}*{suffix}", self.0.prefix()),
        }
    }
}

/// The condition types one health monitor sets, all meaning "problem" when `True` (node-problem-detector's
/// convention, which every family below follows).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionFamily {
    /// Who sets them, as an issue names it.
    pub reporter: String,
    /// Whose GPUs the monitor watches, when only one vendor's (a node carrying the condition has them).
    pub vendor: Option<Vendor>,
    /// The types.
    pub types: Vec<TypePattern>,
}

/// The families known out of the box; `--health-condition` adds a cluster's own.
pub(super) fn default_families() -> Vec<ConditionFamily> {
    let family = |reporter: &str, vendor: Option<Vendor>, types: &[&str]| ConditionFamily {
        reporter: reporter.to_owned(),
        vendor,
        types: types.iter().map(|t| TypePattern::fixed(t)).collect(),
    };
    vec![
        // NVIDIA NVSentinel: DCGM health watches, syslog Xid/SXid/fallen-off detection, NVSwitch state.
        family(
            "NVIDIA NVSentinel",
            Some(Vendor::Nvidia),
            &[
                "Gpu*Watch",
                "SysLogsXIDError",
                "SysLogsSXIDError",
                "SysLogsGPUFallenOff",
                "NVSwitch*",
            ],
        ),
        // AKS GPU health monitoring (its node-problem-detector); the Xid check is spelled three ways (the
        // docs' two and `XIDError` as nodes carry it: AgentBaker's e2e validators and PR 8797's log).
        family(
            "AKS GPU health monitoring (node-problem-detector)",
            Some(Vendor::Nvidia),
            &[
                "GPUMissing",
                "XIDError",
                "XIDErrors",
                "GPUXIDErrors",
                "NVLinkStatusInactive",
                "IBLinkFlapping",
                "UnhealthyNvidiaDevicePlugin",
                "UnhealthyNvidiaDCGMServices",
                "NVIDIAGRIDStatusInvalid",
            ],
        ),
        family(
            "GKE node-problem-detector",
            Some(Vendor::Nvidia),
            &["XidCriticalError"],
        ),
        // Meta's GPU Cluster Monitoring (GcmXidErrorsProblem, GcmSmiEccProblem, ...).
        family(
            "node-problem-detector (Meta GCM)",
            Some(Vendor::Nvidia),
            &["Gcm*"],
        ),
        family("Nebius node-problem-detector", None, &["NebiusGPU*"]),
        // AMD's GPU operator (AMDGPUUnhealthy and the other AMDGPU* conditions its remediation reads).
        family("AMD GPU operator", Some(Vendor::Amd), &["AMDGPU*"]),
    ]
}

/// The family whose types include `type_`, if any.
pub(super) fn family_of<'t>(
    families: &'t [ConditionFamily],
    type_: &str,
) -> Option<&'t ConditionFamily> {
    families
        .iter()
        .find(|f| f.types.iter().any(|t| t.matches(type_)))
}

/// `GpuHealthCheckFailed` for a named condition that is `True`; nothing for one that is `False`, `Unknown`
/// or unnamed.
pub(super) fn issue(condition: &Condition, family: &ConditionFamily) -> Option<Issue> {
    if condition.status != "True" {
        return None;
    }
    let mut message = format!(
        "condition {}=True, set by {}",
        shown(&condition.type_),
        family.reporter
    );
    if let Some(reason) = condition.reason.as_deref().filter(|r| !r.is_empty()) {
        message.push_str(&format!(" (reason {})", shown(reason)));
    }
    if let Some(text) = condition
        .message
        .as_deref()
        .filter(|m| !m.trim().is_empty())
    {
        message.push_str(&format!(": {}", shown(text.trim().trim_end_matches('.'))));
    }
    message.push_str(
        "; it clears when the monitor sets the condition False (check the GPU's health, e.g. dmesg for Xid \
         errors, before putting work back on it)",
    );
    let since = condition
        .last_transition_time
        .as_ref()
        .map(|t| t.to_string());
    Some(Issue::new(IssueReason::GpuHealthCheckFailed, message).since(since))
}

/// Condition text as messages show it: at most 256 characters (monitors put whole log lines there).
fn shown(text: &str) -> String {
    text.chars().take(256).collect()
}
