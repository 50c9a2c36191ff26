//! Health that others publish on the Node object, read from tables, never guessed: GPU health conditions
//! (NVSentinel, AKS, GKE, AMD, node-problem-detector set-ups, and a cluster's own via `--health-condition`),
//! remediation taints and the cordon labels of health controllers, monitors' GPU counts, cloud maintenance,
//! and the GPU operators' driver-upgrade and operand states.
//!
//! Pure: one node's labels, conditions and taints in, issues out. The scanner adds them to the node's own.

mod node_conditions;
mod operators;
mod remediation;

use std::sync::LazyLock;

use crate::inventory::cluster_node::Condition;

pub use node_conditions::{ConditionFamily, TypePattern};

use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Issue, Vendor};

/// Which node conditions are GPU health, and who sets them. Built once per process (defaults plus the
/// `--health-condition` flags) and shared by the node watch (which keeps only these conditions) and the scan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthTable {
    families: Vec<ConditionFamily>,
    /// What the table holds beyond the built-in families, as a value (0: nothing): a scan scope's key names
    /// its table by this, so that an entry read with one table is never reused under another.
    fingerprint: u64,
}

static DEFAULTS: LazyLock<HealthTable> = LazyLock::new(|| HealthTable {
    families: node_conditions::default_families(),
    fingerprint: 0,
});

/// Who sets the conditions a user names with `--health-condition`.
pub const USER_REPORTER: &str = "node-problem-detector (--health-condition)";

impl HealthTable {
    /// The built-in families.
    pub fn defaults() -> &'static HealthTable {
        &DEFAULTS
    }

    /// The built-in families plus a cluster's own condition types or patterns (`--health-condition`), or an
    /// error naming the first one that is not a condition type.
    pub fn with_conditions(patterns: &[String]) -> Result<HealthTable, String> {
        let mut table = DEFAULTS.clone();
        let types = patterns
            .iter()
            .filter(|p| !p.trim().is_empty())
            .map(|p| TypePattern::parse(p))
            .collect::<Result<Vec<_>, _>>()?;
        if !types.is_empty() {
            // Odd, so never the built-in table's 0.
            table.fingerprint = fingerprint_of(&format!("{types:?}")) | 1;
            table.families.push(ConditionFamily {
                reporter: USER_REPORTER.to_owned(),
                vendor: None,
                types,
                problem_when_true: true,
                reason_vendors: Vec::new(),
            });
        }
        Ok(table)
    }

    /// The table as a value to compare (see the field).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// Whether a family names the condition type (so the node watch keeps it).
    pub fn names(&self, type_: &str) -> bool {
        node_conditions::family_of(&self.families, type_).is_some()
    }

    /// Whether `status` of a condition of `type_` is a problem by its family (`True`, or `False` for a
    /// `...Ready` condition such as EKS's `AcceleratedHardwareReady`); `False` for a type no family names.
    pub fn is_problem(&self, type_: &str, status: &str) -> bool {
        node_conditions::family_of(&self.families, type_)
            .is_some_and(|f| status == if f.problem_when_true { "True" } else { "False" })
    }

    /// Whether a condition's reason says whose devices its monitor watches (so it is kept at any status).
    pub fn reason_names_vendor(&self, type_: &str) -> bool {
        node_conditions::family_of(&self.families, type_)
            .is_some_and(|f| !f.reason_vendors.is_empty())
    }

    /// The families, built-in first.
    pub fn families(&self) -> &[ConditionFamily] {
        &self.families
    }
}

/// A value standing for `text` (the std hasher with fixed keys: the same within a process, which is as long
/// as a scope key lives).
pub(crate) fn fingerprint_of(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// The built-in table, to own.
impl Default for HealthTable {
    fn default() -> Self {
        DEFAULTS.clone()
    }
}

/// The built-in table, so that scopes, inputs and source configurations that name no table read with it.
impl Default for &HealthTable {
    fn default() -> Self {
        HealthTable::defaults()
    }
}

/// What one node's published health says.
#[derive(Debug, Default)]
pub(crate) struct HealthReading {
    /// The issues, in table order.
    pub(crate) issues: Vec<Issue>,
    /// The node's cordon is a health controller's or a driver upgrade's: no plain `Unschedulable`.
    pub(crate) cordon_explained: bool,
    /// The vendor whose GPUs the signals watch, when they say (a node known only by them is that vendor's).
    pub(crate) vendor: Option<Vendor>,
    /// Some signal shows the node has GPUs (a health condition, the GPU operator's labels); [`evidence`]
    /// words them.
    pub(crate) known: bool,
}

/// The node's published health.
pub(crate) fn read(
    labels: &mut LabelReader<'_>,
    node_conditions: &[Condition],
    taints: &[(String, String, String)],
    cordoned: bool,
    table: &HealthTable,
) -> HealthReading {
    let mut reading = HealthReading::default();
    // Each condition's family, looked up once (Ready is the kubelet's, never a monitor's).
    let watched: Vec<(&ConditionFamily, &Condition)> = node_conditions
        .iter()
        .filter(|c| &*c.type_ != "Ready")
        .filter_map(|c| Some((node_conditions::family_of(&table.families, &c.type_)?, c)))
        .collect();
    for (family, condition) in &watched {
        reading.vendor = reading.vendor.or(family.vendor_of(condition));
        reading.known = true;
        reading
            .issues
            .extend(node_conditions::issue(condition, family));
    }
    let watched: Vec<(&str, &Condition)> = watched
        .into_iter()
        .map(|(family, c)| (family.reporter.as_str(), c))
        .collect();
    let (quarantine, explained) = remediation::quarantine(labels, taints, &watched, cordoned);
    reading.issues.extend(quarantine);
    reading.issues.extend(remediation::missing_gpus(labels));
    reading.issues.extend(remediation::maintenance(labels));
    let states = operators::read(labels);
    reading.issues.extend(states.issues);
    reading.vendor = reading.vendor.or(states.vendor);
    reading.known |= states.manages;
    reading.cordon_explained = explained || (cordoned && states.upgrading);
    reading
}

/// The signals that show the node has GPUs, in words: the health conditions a table names and the GPU
/// operators' labels. Made only when an issue must say why the node counts as a GPU node (a scan reads
/// thousands of nodes that need none).
pub(crate) fn evidence(
    labels: &LabelReader<'_>,
    node_conditions: &[Condition],
    table: &HealthTable,
) -> Vec<String> {
    let conditions = node_conditions.iter().filter_map(|c| {
        let family = node_conditions::family_of(&table.families, &c.type_)?;
        Some(format!("condition {} set by {}", c.type_, family.reporter))
    });
    conditions.chain(operators::evidence(labels)).collect()
}

#[cfg(test)]
mod leftover_tests;
#[cfg(test)]
mod tests;
