//! The node labels the scanner reads, and how their values are parsed.
//!
//! Label formats follow NVIDIA GPU Feature Discovery (GFD) and the GPU Operator, plus the PCI labels of
//! Node Feature Discovery (NFD).

use std::collections::BTreeMap;

use crate::crd::NodeIssue;

use super::IssueReason;

/// `"true"` when GFD or the GPU Operator found an NVIDIA GPU.
pub const GPU_PRESENT: &str = "nvidia.com/gpu.present";
/// The GPU model, e.g. `NVIDIA-H100-80GB-HBM3`; `-SHARED` and `-MIG-<profile>` suffixes are GFD's.
pub const GPU_PRODUCT: &str = "nvidia.com/gpu.product";
/// Number of GPUs (MIG devices under MIG strategy `single`).
pub const GPU_COUNT: &str = "nvidia.com/gpu.count";
/// Memory of one GPU in MiB.
pub const GPU_MEMORY: &str = "nvidia.com/gpu.memory";
/// What the GPU Operator runs on the node: `container`, `vm-passthrough` or `vm-vgpu`.
pub const GPU_WORKLOAD_CONFIG: &str = "nvidia.com/gpu.workload.config";
/// `time-slicing`, `mps` or `none`.
pub const GPU_SHARING_STRATEGY: &str = "nvidia.com/gpu.sharing-strategy";
/// How many replicas each GPU is advertised as under sharing.
pub const GPU_REPLICAS: &str = "nvidia.com/gpu.replicas";
/// `single`, `mixed` or `none`.
pub const MIG_STRATEGY: &str = "nvidia.com/mig.strategy";
/// The mig-parted configuration requested for the node.
pub const MIG_CONFIG: &str = "nvidia.com/mig.config";
/// The MIG manager's progress: `pending`, `rebooting`, `success` or `failed`.
pub const MIG_CONFIG_STATE: &str = "nvidia.com/mig.config.state";
/// Prefix of GFD's per-profile MIG labels (`nvidia.com/mig-1g.10gb.count`).
pub const MIG_PROFILE_PREFIX: &str = "nvidia.com/mig-";
/// Prefix of NFD's PCI device labels.
pub const NFD_PCI_PREFIX: &str = "feature.node.kubernetes.io/pci-";
/// NVIDIA's PCI vendor id.
pub const NVIDIA_PCI_VENDOR: &str = "10de";

/// Whether an NFD PCI label says an NVIDIA device is present.
///
/// NFD writes `pci-<vendor>.present`, `pci-<class>_<vendor>.present` and variants with device ids; all of them
/// carry the vendor id as the last `_`-separated field before `.present`, or as the only field.
pub fn is_nvidia_pci_label(key: &str, value: &str) -> bool {
    let Some(device) = key
        .strip_prefix(NFD_PCI_PREFIX)
        .and_then(|rest| rest.strip_suffix(".present"))
    else {
        return false;
    };
    value == "true" && device.split('_').any(|part| part == NVIDIA_PCI_VENDOR)
}

/// Reads number-valued labels, recording an `InvalidLabel` issue for each value that does not parse.
#[derive(Debug, Default)]
pub struct LabelReader<'a> {
    labels: Option<&'a BTreeMap<String, String>>,
    invalid: Vec<NodeIssue>,
}

impl<'a> LabelReader<'a> {
    /// Wraps a node's labels (absent labels read as empty).
    pub fn new(labels: Option<&'a BTreeMap<String, String>>) -> Self {
        Self {
            labels,
            invalid: Vec::new(),
        }
    }

    /// The raw value of a label.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.labels?.get(key).map(String::as_str)
    }

    /// Whether the label exists (any value).
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// All labels, for prefix scans.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + use<'a> {
        self.labels
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// A count-like label (`u32` range). Absent = `None`; unparsable = `None` plus an issue.
    pub fn count(&mut self, key: &str) -> Option<u64> {
        self.number(key, u64::from(u32::MAX))
    }

    /// A size-like label (fits a Kubernetes int64). Absent = `None`; unparsable = `None` plus an issue.
    pub fn size(&mut self, key: &str) -> Option<u64> {
        self.number(key, i64::MAX as u64)
    }

    fn number(&mut self, key: &str, max: u64) -> Option<u64> {
        let value = self.get(key)?;
        match parse_non_negative(value, max) {
            Some(n) => Some(n),
            None => {
                self.invalid.push(invalid_label(key, value, max));
                None
            }
        }
    }

    /// The `InvalidLabel` issues collected so far.
    pub fn into_issues(self) -> Vec<NodeIssue> {
        self.invalid
    }
}

/// Parses a plain decimal non-negative integer no larger than `max` (no sign, no spaces, no unit).
fn parse_non_negative(value: &str, max: u64) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u64>().ok().filter(|n| *n <= max)
}

fn invalid_label(key: &str, value: &str, max: u64) -> NodeIssue {
    // Values can be up to 63 characters; keep the message short and printable either way.
    let shown: String = value.chars().take(64).collect();
    NodeIssue {
        reason: IssueReason::InvalidLabel.to_string(),
        message: format!(
            "label {key} has value {shown:?}, which is not a whole number between 0 and {max}; \
             it was read as unknown. Fix or remove the label (GPU Feature Discovery writes plain integers)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_integers_only() {
        assert_eq!(parse_non_negative("0", 10), Some(0));
        assert_eq!(parse_non_negative("08", 10), Some(8));
        for bad in [
            "",
            "abc",
            "15GB",
            "-5",
            "+5",
            " 5",
            "5 ",
            "1.5",
            "99999999999999999999",
        ] {
            assert_eq!(parse_non_negative(bad, u64::MAX), None, "{bad:?}");
        }
        assert_eq!(parse_non_negative("11", 10), None);
    }

    #[test]
    fn recognises_nvidia_pci_labels() {
        for key in [
            "feature.node.kubernetes.io/pci-10de.present",
            "feature.node.kubernetes.io/pci-0300_10de.present",
            "feature.node.kubernetes.io/pci-0302_10de.present",
            "feature.node.kubernetes.io/pci-0302_10de_20b5.present",
        ] {
            assert!(is_nvidia_pci_label(key, "true"), "{key}");
            assert!(!is_nvidia_pci_label(key, "false"), "{key}");
        }
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-15b3.present",
            "true"
        ));
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-10de.sriov.capable",
            "true"
        ));
        assert!(!is_nvidia_pci_label(
            "feature.node.kubernetes.io/pci-110de.present",
            "true"
        ));
    }
}
