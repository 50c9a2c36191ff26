//! How a node offers its GPUs: sharing (time-slicing, MPS) and MIG.

use std::collections::BTreeMap;

use crate::crd::{GpuSharing, MigDevice, MigInfo};

use super::labels::{self, LabelReader};
use super::resources::SHARED_GPU_RESOURCE;

/// Sharing as GFD labels it; `None` when the node does not share its GPUs.
pub fn sharing(
    labels: &mut LabelReader<'_>,
    capacity: &BTreeMap<String, String>,
) -> Option<GpuSharing> {
    let strategy = labels
        .get(labels::GPU_SHARING_STRATEGY)
        .filter(|s| *s != "none")
        .map(str::to_owned);
    let renamed_resource = capacity.contains_key(SHARED_GPU_RESOURCE);
    // GFD writes `gpu.replicas: 1` on every node; only more than one replica means sharing.
    let replicas = labels.count(labels::GPU_REPLICAS).filter(|r| *r > 1);
    if strategy.is_none() && replicas.is_none() && !renamed_resource {
        return None;
    }
    Some(GpuSharing {
        strategy,
        replicas,
        renamed_resource,
    })
}

/// MIG as GFD and the MIG manager label it; `None` when MIG plays no part on the node.
pub fn mig(labels: &mut LabelReader<'_>, product: Option<&str>) -> Option<MigInfo> {
    let strategy = labels
        .get(labels::MIG_STRATEGY)
        .filter(|s| *s != "none")
        .map(str::to_owned);
    let config = labels.get(labels::MIG_CONFIG).map(str::to_owned);
    let config_state = labels.get(labels::MIG_CONFIG_STATE).map(str::to_owned);
    if strategy.is_none() && config_state.is_none() {
        return None;
    }
    let count_meaning = match strategy.as_deref() {
        // Under `single` GFD renames the product to `<gpu>-MIG-<profile>` and counts MIG devices.
        Some("single") if product.is_some_and(|p| p.contains("-MIG-")) => Some(
            "count is the number of MIG devices (strategy single), not physical GPUs".to_owned(),
        ),
        Some("mixed") => Some(
            "count is the number of physical GPUs; MIG devices are listed per profile".to_owned(),
        ),
        _ => None,
    };
    let devices = if strategy.as_deref() == Some("mixed") {
        mig_devices(labels)
    } else {
        Vec::new()
    };
    Some(MigInfo {
        strategy,
        config,
        config_state,
        count_meaning,
        devices,
    })
}

/// `nvidia.com/mig-<profile>.count` / `.memory` labels, one device entry per profile, sorted by profile.
fn mig_devices(labels: &mut LabelReader<'_>) -> Vec<MigDevice> {
    let profiles: Vec<String> = labels
        .iter()
        .filter_map(|(key, _)| {
            key.strip_prefix(labels::MIG_PROFILE_PREFIX)?
                .strip_suffix(".count")
                .map(str::to_owned)
        })
        .collect();
    // Labels come from a BTreeMap, so `profiles` is already sorted and free of duplicates.
    profiles
        .into_iter()
        .map(|profile| {
            let count = labels
                .count(&format!("{}{profile}.count", labels::MIG_PROFILE_PREFIX))
                .unwrap_or(0);
            let memory_mib =
                labels.size(&format!("{}{profile}.memory", labels::MIG_PROFILE_PREFIX));
            MigDevice {
                profile,
                count,
                memory_mib,
            }
        })
        .collect()
}
