//! The GPU operators' own states on a node: driver upgrades and paused operands (NVIDIA's and AMD's), as
//! tables of label values. A value no table lists is noted, never judged.

use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Issue, IssueReason, Vendor};

/// Where an upgrade stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No upgrade (or it is done).
    Idle,
    /// Under way: planned work, information.
    InProgress,
    /// The operator gave up on the node.
    Failed,
}

/// One operator's driver-upgrade label and its values.
struct UpgradeLabel {
    key: &'static str,
    operator: &'static str,
    vendor: Vendor,
    states: &'static [(&'static str, Phase)],
}

/// NVIDIA's upgrade controller (k8s-operator-libs), for the GPU and the vGPU driver.
const NVIDIA_STATES: &[(&str, Phase)] = &[
    ("", Phase::Idle),
    ("upgrade-done", Phase::Idle),
    ("upgrade-required", Phase::InProgress),
    ("cordon-required", Phase::InProgress),
    ("wait-for-jobs-required", Phase::InProgress),
    ("pod-deletion-required", Phase::InProgress),
    ("drain-required", Phase::InProgress),
    ("node-maintenance-required", Phase::InProgress),
    ("post-maintenance-required", Phase::InProgress),
    ("pod-restart-required", Phase::InProgress),
    ("validation-required", Phase::InProgress),
    ("uncordon-required", Phase::InProgress),
    ("upgrade-failed", Phase::Failed),
];

/// AMD's GPU operator (its DeviceConfig's `UpgradeState`).
const AMD_STATES: &[(&str, Phase)] = &[
    ("", Phase::Idle),
    ("Install-Complete", Phase::Idle),
    ("Upgrade-Complete", Phase::Idle),
    ("Install-In-Progress", Phase::InProgress),
    ("Upgrade-Not-Started", Phase::InProgress),
    ("Upgrade-Started", Phase::InProgress),
    ("Upgrade-In-Progress", Phase::InProgress),
    ("Reboot-In-Progress", Phase::InProgress),
    ("Upgrade-Failed", Phase::Failed),
    ("Upgrade-Timed-Out", Phase::Failed),
    ("Cordon-Failed", Phase::Failed),
    ("Uncordon-Failed", Phase::Failed),
    ("Drain-Failed", Phase::Failed),
    ("Reboot-Failed", Phase::Failed),
    ("Install-Failed", Phase::Failed),
];

const UPGRADE_LABELS: &[UpgradeLabel] = &[
    UpgradeLabel {
        key: "nvidia.com/gpu-driver-upgrade-state",
        operator: "NVIDIA GPU operator",
        vendor: Vendor::Nvidia,
        states: NVIDIA_STATES,
    },
    UpgradeLabel {
        key: "nvidia.com/vgpu-driver-upgrade-state",
        operator: "NVIDIA GPU operator",
        vendor: Vendor::Nvidia,
        states: NVIDIA_STATES,
    },
    UpgradeLabel {
        key: "operator.amd.com/gpu-driver-upgrade-state",
        operator: "AMD GPU operator",
        vendor: Vendor::Amd,
        states: AMD_STATES,
    },
];

/// The GPU operator's per-operand deploy labels, and the value that pauses one for a driver upgrade.
const NVIDIA_DEPLOY_PREFIX: &str = "nvidia.com/gpu.deploy.";
const PAUSED: &str = "paused-for-driver-upgrade";

/// What the operators' labels say about a node.
#[derive(Debug, Default)]
pub(super) struct OperatorStates {
    /// Issues (`DriverUpgradeFailed`, `DriverUpgradeInProgress`, `OperandsPaused`).
    pub(super) issues: Vec<Issue>,
    /// An upgrade is under way: it cordons the node on purpose, so the cordon is no plain `Unschedulable`.
    pub(super) upgrading: bool,
    /// The vendor whose operator labelled the node (an upgrade label is only put on its GPU nodes).
    pub(super) vendor: Option<Vendor>,
    /// The operator's labels show it manages the node (an upgrade state, or an operand deployed).
    pub(super) manages: bool,
}

/// Reads the upgrade and operand labels.
pub(super) fn read(labels: &mut LabelReader<'_>) -> OperatorStates {
    let mut states = OperatorStates::default();
    let paused = paused_operands(labels);
    for label in UPGRADE_LABELS {
        let Some(raw) = labels.get(label.key) else {
            continue;
        };
        let value = raw.trim();
        states.vendor = states.vendor.or(Some(label.vendor));
        states.manages = true;
        let Some((_, phase)) = label.states.iter().find(|(s, _)| *s == value) else {
            labels.note(format!(
                "label {}={} is a driver-upgrade state this version does not know; not judged",
                label.key,
                shown(value)
            ));
            continue;
        };
        match phase {
            Phase::Idle => {}
            Phase::Failed => states.issues.push(Issue::new(
                IssueReason::DriverUpgradeFailed,
                format!(
                    "the {} failed to upgrade the node's driver ({}={value}){}: the node keeps its old driver \
                     or none; see the operator's and the driver pod's logs, then let it retry",
                    label.operator,
                    label.key,
                    paused_suffix(&paused)
                ),
            )),
            Phase::InProgress => {
                states.upgrading = true;
                states.issues.push(Issue::new(
                    IssueReason::DriverUpgradeInProgress,
                    format!(
                        "the {} is upgrading the node's driver ({}={value}){}: the node may be cordoned and \
                         drained until the state is done",
                        label.operator,
                        label.key,
                        paused_suffix(&paused)
                    ),
                ));
            }
        }
    }
    let reported = !states.issues.is_empty();
    if !paused.is_empty() && !reported {
        states.issues.push(Issue::new(
            IssueReason::OperandsPaused,
            format!(
                "the GPU operator paused {} ({NVIDIA_DEPLOY_PREFIX}<operand>={PAUSED}) with no driver upgrade \
                 under way: they stay stopped until the labels are set back to true",
                paused.join(", ")
            ),
        ));
    }
    if let Some(issue) = disabled_operands_issue(labels) {
        states.issues.push(issue);
    }
    if labels.iter().any(|(k, v)| is_deployed(k, v)) {
        states.vendor = states.vendor.or(Some(Vendor::Nvidia));
        states.manages = true;
    }
    states
}

/// A deploy label of an operand the GPU operator runs on the node (not `false`, not empty).
fn is_deployed(key: &str, value: &str) -> bool {
    key.starts_with(NVIDIA_DEPLOY_PREFIX) && {
        let value = value.trim();
        !value.is_empty() && !value.eq_ignore_ascii_case("false")
    }
}

/// The operators' labels that show they manage the node, as `key=value` (for an issue that must say why the
/// node counts as a GPU node).
pub(super) fn evidence(labels: &LabelReader<'_>) -> Vec<String> {
    let upgrade = UPGRADE_LABELS
        .iter()
        .filter_map(|l| Some((l.key, labels.get(l.key)?)));
    let deployed = labels.iter().filter(|(k, v)| is_deployed(k, v));
    upgrade
        .chain(deployed)
        .map(|(k, v)| format!("{k}={}", shown(v.trim())))
        .collect()
}

/// The operands whose loss keeps the node's GPUs from pods: the device plugin advertises them, the toolkit
/// lets containers use them, and `operands` turns every operand off at once.
const SERVING_OPERANDS: [&str; 3] = ["operands", "device-plugin", "container-toolkit"];

/// The GPU operator runs an operand only where its deploy label is `true` (its DaemonSet selects `=true`).
/// Raised when an operand that serves the GPUs will not run: `false` (an administrator's choice,
/// NVIDIA/gpu-operator#661) or empty (no one's: the operator's labels were cleared, NVIDIA/gpu-operator#491).
/// Other operands off (`driver=false` where drivers are installed on the host, `nvsm=""` as NVIDIA's own test
/// host has it) keep the GPUs usable: not an issue.
fn disabled_operands_issue(labels: &LabelReader<'_>) -> Option<Issue> {
    let disabled: Vec<(String, String)> = labels
        .iter()
        .filter_map(|(k, v)| {
            let operand = k.strip_prefix(NVIDIA_DEPLOY_PREFIX)?;
            let value = v.trim();
            (value.is_empty() || value.eq_ignore_ascii_case("false"))
                .then(|| (shown(operand), shown(value)))
        })
        .collect();
    if !disabled
        .iter()
        .any(|(operand, _)| SERVING_OPERANDS.contains(&operand.as_str()))
    {
        return None;
    }
    let listed = disabled
        .iter()
        .map(|(operand, value)| format!("{operand}=\"{value}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let why = if disabled.iter().any(|(_, value)| value.is_empty()) {
        "an empty value is not true: the operator's labels were cleared"
    } else {
        "switched off by someone"
    };
    Some(Issue::new(
        IssueReason::OperandsDisabled,
        format!(
            "the GPU operator will not run {listed} on this node ({NVIDIA_DEPLOY_PREFIX}<operand> must be \
             \"true\"; {why}): without the device plugin and the toolkit no new pod gets its GPUs; set them to \
             true (kubectl label node <node> {NVIDIA_DEPLOY_PREFIX}<operand>=true --overwrite), or take the \
             node out of the GPU pools if it is meant to be"
        ),
    ))
}

/// The operands paused for a driver upgrade, by name.
fn paused_operands(labels: &LabelReader<'_>) -> Vec<String> {
    labels
        .iter()
        .filter(|(k, v)| k.starts_with(NVIDIA_DEPLOY_PREFIX) && v.trim() == PAUSED)
        .filter_map(|(k, _)| k.strip_prefix(NVIDIA_DEPLOY_PREFIX))
        .map(shown)
        .collect()
}

fn paused_suffix(paused: &[String]) -> String {
    if paused.is_empty() {
        String::new()
    } else {
        format!("; operands paused: {}", paused.join(", "))
    }
}

fn shown(text: &str) -> String {
    text.chars().take(64).collect()
}
