//! Node conditions that GPU health monitors set, as a table: which condition types are GPU health, who
//! reports them, and whose GPUs they watch. A type no family names is never read, so an unknown condition is
//! never guessed at.

use std::fmt;

use crate::inventory::cluster_node::Condition;
use crate::inventory::star_pattern::{StarPattern, split_star};

use crate::inventory::model::{Issue, IssueReason, Vendor};
use crate::inventory::vendors::registry::REGISTRY;

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

/// The condition types one health monitor sets, and the status that means a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionFamily {
    /// Who sets them, as an issue names it.
    pub reporter: String,
    /// Whose GPUs the monitor watches, when only one vendor's (a node carrying the condition has them).
    pub vendor: Option<Vendor>,
    /// The types.
    pub types: Vec<TypePattern>,
    /// `True` means a problem (node-problem-detector's convention); else `False` does (a `...Ready`
    /// condition: EKS's `AcceleratedHardwareReady`).
    pub problem_when_true: bool,
    /// Whose GPUs by the condition's reason, first match wins (`Neuron*` on EKS's condition: AWS's).
    pub reason_vendors: Vec<(String, Vendor)>,
}

impl ConditionFamily {
    /// Whose GPUs a condition of this family watches: by its reason, else the family's.
    pub(super) fn vendor_of(&self, condition: &Condition) -> Option<Vendor> {
        let reason = condition.reason.as_deref().unwrap_or_default();
        self.reason_vendors
            .iter()
            .find(|(prefix, _)| reason.starts_with(prefix.as_str()))
            .map(|(_, vendor)| *vendor)
            .or(self.vendor)
    }

    fn status(&self, problem: bool) -> &'static str {
        if problem == self.problem_when_true {
            "True"
        } else {
            "False"
        }
    }
}

/// The families known out of the box (the registry's `health_conditions.tsv`, one family per row);
/// `--health-condition` adds a cluster's own.
pub(super) fn default_families() -> Vec<ConditionFamily> {
    let vendor = |name: &str| Vendor::from_name(name);
    REGISTRY
        .health_conditions
        .iter()
        .map(|row| ConditionFamily {
            reporter: row.reporter.to_owned(),
            vendor: row.vendor.and_then(vendor),
            types: vec![TypePattern::fixed(row.type_)],
            problem_when_true: row.problem_when_true,
            reason_vendors: row
                .reason_vendors
                .iter()
                .filter_map(|(prefix, name)| Some(((*prefix).to_owned(), vendor(name)?)))
                .collect(),
        })
        .collect()
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

/// `GpuHealthCheckFailed` for a named condition whose status is its family's problem status (`True`, or
/// `False` for a `...Ready` condition); nothing for the other status, `Unknown` or unnamed.
pub(super) fn issue(condition: &Condition, family: &ConditionFamily) -> Option<Issue> {
    if condition.status != family.status(true) {
        return None;
    }
    let mut message = format!(
        "condition {}={}, set by {}",
        shown(&condition.type_),
        family.status(true),
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
    message.push_str(&format!(
        "; it clears when the monitor sets the condition {} (check the GPU's health, e.g. dmesg for Xid \
         errors, before putting work back on it)",
        family.status(false)
    ));
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
