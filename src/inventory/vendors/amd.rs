//! AMD: the ROCm device plugin's resources, the node labeller's labels (current and `beta.`, plain and
//! counted), and the AMD GPU operator's labels and taints. DRA (`gpu.amd.com`) is in `dra.rs`.

use super::counted::CountedLabels;
use super::vendor_table::{NodeResources, Reading, Unit, VendorRules};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Issue, IssueReason, Mig, MigProfile, Vendor};

pub(super) const RULES: VendorRules = VendorRules {
    vendor: Vendor::Amd,
    unit_of,
    labelled,
    read,
};

const PREFIX: &str = "amd.com/";
/// Whole GPUs; under the device plugin's `single` strategy, partitions too (the labels say which).
const GPU: &str = "amd.com/gpu";
/// Under VM passthrough: virtual and physical functions, one GPU each.
const PASSTHROUGH: [&str; 2] = ["amd.com/gpu_vf", "amd.com/gpu_pf"];
/// The labeller's families: current and legacy.
const LABEL_PREFIXES: [&str; 2] = ["amd.com/gpu.", "beta.amd.com/gpu."];
/// The labeller's kinds this module reads.
const KINDS: [&str; 9] = [
    "product-name",
    "vram",
    "family",
    "device-id",
    "cu-count",
    "simd-count",
    "driver-version",
    "compute-memory-partition",
    "mode",
];
/// The partition label's other spelling, without `gpu.`.
const PARTITION_LABEL: &str = "amd.com/compute-memory-partition";
/// The GPU operator's device config manager: the partition profile asked for.
const DCM_PROFILE: &str = "dcm.amd.com/gpu-config-profile";
/// The device config manager's outcome: `success`, or `failure` (its taint may stay on the node then).
const DCM_STATE: &str = "dcm.amd.com/gpu-config-profile-state";
/// The taint the device config manager puts on a node while it applies a profile.
const DCM_TAINT: &str = "amd-dcm";
/// The metrics exporter's per-GPU health label: `metricsexporter.amd.com.gpu.<index>.state`.
const EXPORTER_STATE: (&str, &str) = ("metricsexporter.amd.com.gpu.", ".state");

/// Compute partition modes and how many partitions each makes of one GPU of 8 XCDs (MI300X, MI325X).
const COMPUTE_MODES: [(&str, u64); 5] =
    [("spx", 1), ("dpx", 2), ("tpx", 3), ("qpx", 4), ("cpx", 8)];
/// Memory partition modes.
const MEMORY_MODES: [&str; 4] = ["nps1", "nps2", "nps4", "nps8"];

/// AMD's PCI vendor ID: its device IDs name the model in the registry's `pci_devices.tsv`.
const PCI_VENDOR: &str = "1002";

fn unit_of(name: &str) -> Option<Unit> {
    let rest = name.strip_prefix(PREFIX)?;
    if name == GPU || PASSTHROUGH.contains(&name) {
        return Some(Unit::Device);
    }
    partition_profile(rest).map(|_| Unit::Partition)
}

/// `cpx_nps4` (a partition resource of the `mixed` strategy) as (compute mode, partitions per GPU).
fn partition_profile(name: &str) -> Option<(&str, u64)> {
    let (compute, memory) = name.split_once('_').unwrap_or((name, ""));
    let (mode, per_gpu) = COMPUTE_MODES.iter().find(|(m, _)| *m == compute)?;
    (memory.is_empty() || MEMORY_MODES.contains(&memory)).then_some((*mode, *per_gpu))
}

fn labelled(labels: &LabelReader<'_>) -> bool {
    // The key first: it rules out almost every label without looking at the value.
    labels.iter().any(|(key, value)| {
        (LABEL_PREFIXES.iter().any(|p| key.starts_with(p))
            || key == PARTITION_LABEL
            || key == DCM_PROFILE)
            && !value.trim().is_empty()
    }) || labels.get("feature.node.kubernetes.io/amd-gpu") == Some("true")
}

fn read(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    let found = CountedLabels::read(labels, &LABEL_PREFIXES, &KINDS);
    let mut reading = Reading {
        labelled: labelled(labels),
        ..Default::default()
    };
    let partition_label = found
        .value("compute-memory-partition")
        .map(|(v, _)| v.to_owned())
        .or_else(|| labels.text(PARTITION_LABEL).map(str::to_owned));
    let partitioned_gpu = partition_label
        .as_deref()
        .and_then(partition_profile)
        .filter(|(_, per_gpu)| *per_gpu > 1);
    reading.product = product(&found);
    reading.memory_mib = memory(&found);
    let partitions = partition_resources(resources);
    reading.count = count(&found, resources, partitioned_gpu, &partitions);
    if partitioned_gpu.is_none() {
        reading.device_resources = std::iter::once(GPU)
            .chain(PASSTHROUGH)
            .filter(|r| resources.count(r).is_some())
            .map(str::to_owned)
            .collect();
    }
    let config = DeviceConfig::read(labels, resources);
    if partition_label.is_some() || !partitions.is_empty() || config.profile.is_some() {
        reading.partitions = Some(partitioned(
            resources,
            &partitions,
            partition_label.as_deref(),
            partitioned_gpu,
            &config,
        ));
    }
    config.issues(&mut reading.issues);
    reading.unhealthy = unhealthy(labels);
    if found.is_empty() && !reading.labelled {
        reading.labelled = !reading.unhealthy.is_empty();
    }
    reading
}

/// The model: the labeller's product name, else its device ID looked up in the registry's PCI table.
fn product(found: &CountedLabels) -> Option<(String, Option<String>)> {
    found
        .value("product-name")
        .map(|(p, key)| {
            (
                p.to_owned(),
                (key == "counted").then(|| counted("product-name")),
            )
        })
        .or_else(|| {
            let (id, _) = found.value("device-id")?;
            let id = id.trim_start_matches("0x").to_ascii_lowercase();
            let product = super::registry::REGISTRY.pci_product(PCI_VENDOR, &id)?;
            Some((
                product.to_owned(),
                Some(format!("AMD device id {id} (PCI ID table)")),
            ))
        })
}

/// One GPU's memory, from the labeller's VRAM label.
fn memory(found: &CountedLabels) -> Option<(u64, String)> {
    found.value("vram").and_then(|(vram, key)| {
        let from = if key == "counted" {
            counted("vram")
        } else {
            key.to_owned()
        };
        Some((vram_mib(vram)?, from))
    })
}

/// The partition resources the node advertises (the `mixed` strategy's `amd.com/cpx_nps4`), with counts.
fn partition_resources<'r>(resources: &'r NodeResources<'_>) -> Vec<(&'r str, u64)> {
    resources
        .with_units(unit_of)
        .into_iter()
        .filter(|(_, unit, _)| *unit == Unit::Partition)
        .map(|(name, _, n)| (name, n))
        .collect()
}

/// The physical GPUs, in order: the labeller's counted labels, the whole-GPU resource (over the partitions
/// per GPU when the partition label says the GPUs are split), the passthrough functions, the first
/// partition resource over its partitions per GPU.
fn count(
    found: &CountedLabels,
    resources: &NodeResources<'_>,
    partitioned_gpu: Option<(&str, u64)>,
    partitions: &[(&str, u64)],
) -> Option<(u64, String)> {
    ["device-id", "product-name"]
        .iter()
        .find_map(|kind| Some((found.devices(kind)?, counted(kind))))
        .or_else(|| {
            let n = resources.count(GPU).filter(|n| *n > 0)?;
            Some(match partitioned_gpu {
                Some((mode, per_gpu)) if n.is_multiple_of(per_gpu) => (
                    n / per_gpu,
                    format!("capacity {GPU} / {per_gpu} ({mode} partitions per GPU of 8 XCDs)"),
                ),
                _ => (n, format!("capacity {GPU}")),
            })
        })
        .or_else(|| {
            PASSTHROUGH.iter().find_map(|r| {
                Some((
                    resources.count(r).filter(|n| *n > 0)?,
                    format!("capacity {r}"),
                ))
            })
        })
        .or_else(|| {
            let (name, n) = partitions.first()?;
            let (mode, per_gpu) = partition_profile(&name[PREFIX.len()..])?;
            n.is_multiple_of(per_gpu).then(|| {
                (
                    n / per_gpu,
                    format!("capacity {name} / {per_gpu} ({mode} partitions per GPU of 8 XCDs)"),
                )
            })
        })
}

/// What the GPU operator's device config manager says of the partition profile.
struct DeviceConfig {
    /// The profile asked for.
    profile: Option<String>,
    /// It failed to apply.
    failed: bool,
    /// It is being applied (its taint is on, and it has not failed).
    applying: bool,
}

impl DeviceConfig {
    fn read(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> DeviceConfig {
        let profile = labels.text(DCM_PROFILE).map(str::to_owned);
        let failed = labels
            .text(DCM_STATE)
            .is_some_and(|s| s.eq_ignore_ascii_case("failure"));
        // A failed profile leaves the taint on; it is failed, not being applied.
        let applying = !failed && resources.taints.iter().any(|(key, _, _)| key == DCM_TAINT);
        DeviceConfig {
            profile,
            failed,
            applying,
        }
    }

    /// `MigConfigFailed` or `MigConfigPending`, in the words of AMD's device config manager.
    fn issues(&self, issues: &mut Vec<Issue>) {
        let profile = self.profile.as_deref().unwrap_or("<unlabelled>");
        if self.failed {
            issues.push(Issue::new(
                IssueReason::MigConfigFailed,
                format!(
                    "AMD's device config manager failed to apply the partition profile {profile} \
                     ({DCM_STATE}=failure): see the device-config-manager pod's log and its PartitionFailure \
                     events, then relabel or remove the profile (and its {DCM_TAINT} taint)"
                ),
            ));
        }
        if self.applying {
            issues.push(Issue::new(
                IssueReason::MigConfigPending,
                format!(
                    "AMD's device config manager is applying the partition profile {profile} (taint \
                     {DCM_TAINT}=up:NoExecute): GPU pods are evicted and the partitions may read 0 until it is \
                     removed"
                ),
            ));
        }
    }
}

/// The node's partitions in the model's MIG shape: each partition resource, or the whole-GPU resource
/// counting partitions when the partition label says the GPUs are split; the profile and its state.
fn partitioned(
    resources: &NodeResources<'_>,
    partitions: &[(&str, u64)],
    partition_label: Option<&str>,
    partitioned_gpu: Option<(&str, u64)>,
    config: &DeviceConfig,
) -> Mig {
    let mut devices: Vec<MigProfile> = partitions
        .iter()
        .map(|(name, n)| MigProfile {
            profile: name[PREFIX.len()..].to_owned(),
            count: *n,
            memory_mib: None,
            resource: Some((*name).to_owned()),
        })
        .collect();
    if let Some((mode, _)) = partitioned_gpu.filter(|_| devices.is_empty())
        && let Some(n) = resources.count(GPU)
    {
        devices.push(MigProfile {
            profile: partition_label.unwrap_or(mode).to_owned(),
            count: n,
            memory_mib: None,
            resource: Some(GPU.to_owned()),
        });
    }
    Mig {
        strategy: None,
        config: config
            .profile
            .clone()
            .or_else(|| partition_label.map(str::to_owned)),
        config_state: if config.failed {
            Some("failed".to_owned())
        } else {
            config.applying.then(|| "pending".to_owned())
        },
        count_meaning: (!devices.is_empty()).then(|| {
            "count is the number of physical GPUs; partitions are listed per profile".to_owned()
        }),
        devices,
    }
}

/// The GPUs AMD's metrics exporter labels unhealthy, in words.
fn unhealthy(labels: &LabelReader<'_>) -> Vec<String> {
    labels
        .iter()
        .filter(|(_, v)| v.trim().eq_ignore_ascii_case("unhealthy"))
        .filter_map(|(k, _)| {
            let index = k
                .strip_prefix(EXPORTER_STATE.0)?
                .strip_suffix(EXPORTER_STATE.1)?;
            Some(format!(
                "GPU {index} ({k}=unhealthy, AMD's metrics exporter)"
            ))
        })
        .collect()
}

fn counted(kind: &str) -> String {
    format!("counted label amd.com/gpu.{kind}.<value>")
}

/// The labeller's VRAM (`192G`, `16G`, `64M`): binary units, as the labeller rounds them.
fn vram_mib(value: &str) -> Option<u64> {
    let value = value.trim().trim_end_matches(['B', 'b']);
    let (digits, unit) = value.split_at(value.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = digits.parse().ok()?;
    let mib = match unit {
        "T" => n.checked_mul(1024 * 1024)?,
        "G" => n.checked_mul(1024)?,
        "M" => n,
        _ => return None,
    };
    (mib > 0).then_some(mib)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::inventory::model::Amount;

    #[test]
    fn partition_resources_and_vram() {
        assert_eq!(unit_of("amd.com/cpx_nps4"), Some(Unit::Partition));
        assert_eq!(unit_of("amd.com/spx_nps1"), Some(Unit::Partition));
        assert_eq!(unit_of("amd.com/gpu_vf"), Some(Unit::Device));
        assert_eq!(unit_of("amd.com/xyz_nps4"), None);
        assert_eq!(unit_of("amd.com/cpx_nps3"), None);
        assert_eq!(vram_mib("192G"), Some(196_608));
        assert_eq!(vram_mib("16G"), Some(16_384));
        assert_eq!(vram_mib("0G"), None);
        assert_eq!(vram_mib("big"), None);
    }

    #[test]
    fn the_device_config_manager_applying_then_failing_a_profile() {
        let gpus = crate::inventory::model::ResourceMap::from_iter([(
            "amd.com/gpu".to_owned(),
            Amount::parse("8"),
        )]);
        let taints = vec![(
            "amd-dcm".to_owned(),
            "up".to_owned(),
            "NoExecute".to_owned(),
        )];
        let resources = NodeResources {
            capacity: &gpus,
            allocatable: &gpus,
            taints: &taints,
        };
        let reasons = |labels: &[(&str, &str)]| {
            let map: BTreeMap<String, String> = labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            let reading = read(
                &mut LabelReader::new(Some(&map.iter().collect())),
                &resources,
            );
            let state = reading.partitions.and_then(|p| p.config_state);
            let reasons: Vec<IssueReason> = reading.issues.iter().map(|i| i.reason).collect();
            (reasons, state)
        };
        let profile = (DCM_PROFILE, "cpx-nps4");
        assert_eq!(
            reasons(&[profile]),
            (
                vec![IssueReason::MigConfigPending],
                Some("pending".to_owned())
            )
        );
        assert_eq!(
            reasons(&[profile, (DCM_STATE, "failure")]),
            (
                vec![IssueReason::MigConfigFailed],
                Some("failed".to_owned())
            ),
            "the taint stays after a failure: failed, not pending"
        );
    }
}
