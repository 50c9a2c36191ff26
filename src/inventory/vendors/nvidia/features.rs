//! How a node offers its GPUs: sharing (time-slicing, MPS) and MIG.

use crate::inventory::model::{Amount, Mig, MigProfile, ResourceMap, Sharing};

use super::gfd_labels;
use super::resource_names::{MIG_RESOURCE_PREFIX, SHARED_GPU_RESOURCE};
use crate::inventory::label_reader::LabelReader;

/// Sharing as GFD labels it, else as GKE labels it (`cloud`: strategy, clients per GPU); `None` when the node
/// does not share its GPUs.
pub(crate) fn sharing(
    labels: &mut LabelReader<'_>,
    capacity: &ResourceMap<Amount>,
    cloud: Option<&(Option<String>, Option<u64>)>,
) -> Option<Sharing> {
    let (cloud_strategy, cloud_replicas) = cloud.cloned().unwrap_or_default();
    let strategy = labels
        .text(gfd_labels::GPU_SHARING_STRATEGY)
        .filter(|s| *s != "none")
        .map(str::to_owned)
        .or(cloud_strategy);
    let renamed_resource = capacity.contains_key(SHARED_GPU_RESOURCE);
    // GFD writes `gpu.replicas: 1` on every node; only more than one replica means sharing.
    let replicas = labels
        .count(gfd_labels::GPU_REPLICAS)
        .filter(|r| *r > 1)
        .or(cloud_replicas);
    if strategy.is_none() && replicas.is_none() && !renamed_resource {
        return None;
    }
    Some(Sharing {
        strategy,
        replicas,
        renamed_resource,
    })
}

/// MIG as GFD and the MIG manager label it, and as the device plugin advertises it; `None` when MIG plays no
/// part on the node.
pub(crate) fn mig(
    labels: &mut LabelReader<'_>,
    product: Option<&str>,
    capacity: &ResourceMap<Amount>,
) -> Option<Mig> {
    let strategy = labels
        .text(gfd_labels::MIG_STRATEGY)
        .filter(|s| *s != "none")
        .map(str::to_owned);
    let config = labels.text(gfd_labels::MIG_CONFIG).map(str::to_owned);
    let config_state = labels.text(gfd_labels::MIG_CONFIG_STATE).map(str::to_owned);
    let devices = mig_devices(labels, capacity);
    if strategy.is_none() && config_state.is_none() && devices.is_empty() {
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
    Some(Mig {
        strategy,
        config,
        config_state,
        count_meaning,
        devices,
    })
}

/// The GPU slices of a MIG profile: the `Ng` part (`3g.20gb` -> 3, `1c.3g.20gb` -> 3, `1g.10gb+me` -> 1).
pub(crate) fn slice_count(profile: &str) -> Option<u32> {
    profile
        .split('.')
        .find_map(|part| part.strip_suffix('g')?.parse().ok())
}

/// MIG devices per profile, sorted by profile: GFD's `nvidia.com/mig-<profile>.count` / `.memory` labels, each
/// matched to the device plugin's `nvidia.com/mig-<profile>` resource (by name, else by slice count, since GFD
/// rounds the memory in its profile names), plus devices the plugin advertises that no label describes.
fn mig_devices(labels: &mut LabelReader<'_>, capacity: &ResourceMap<Amount>) -> Vec<MigProfile> {
    let mut devices = labelled_profiles(labels);
    let mut unmatched: Vec<&str> = capacity
        .keys()
        .map(String::as_str)
        .filter(|name| name.len() > MIG_RESOURCE_PREFIX.len())
        .filter(|name| name.starts_with(MIG_RESOURCE_PREFIX))
        .collect();
    for device in &mut devices {
        let name = format!("{MIG_RESOURCE_PREFIX}{}", device.profile);
        if let Some(at) = unmatched.iter().position(|r| *r == name) {
            device.resource = Some(unmatched.remove(at).to_owned());
        }
    }
    match_by_slices(&mut devices, &mut unmatched);
    // Resources no label describes (GFD absent): one device entry each, unless it is a leftover at 0.
    for resource in unmatched {
        let count = capacity
            .get(resource)
            .and_then(Amount::value)
            .filter(|v| *v >= 1.0)
            .map(|v| v as u64);
        if let Some(count) = count {
            devices.push(MigProfile {
                profile: resource[MIG_RESOURCE_PREFIX.len()..].to_owned(),
                count,
                memory_mib: None,
                resource: Some(resource.to_owned()),
            });
        }
    }
    devices.sort_by(|a, b| a.profile.cmp(&b.profile));
    devices
}

/// The MIG profiles GFD's `nvidia.com/mig-<profile>.count` labels name, with their count and memory, sorted
/// by profile (labels come from a BTreeMap, so the profiles are already sorted and free of duplicates).
fn labelled_profiles(labels: &mut LabelReader<'_>) -> Vec<MigProfile> {
    let profiles: Vec<String> = labels
        .iter()
        .filter_map(|(key, _)| {
            key.strip_prefix(gfd_labels::MIG_PROFILE_PREFIX)?
                .strip_suffix(".count")
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
        })
        .collect();
    profiles
        .into_iter()
        .map(|profile| {
            let count = labels
                .count(&format!(
                    "{}{profile}.count",
                    gfd_labels::MIG_PROFILE_PREFIX
                ))
                .unwrap_or(0);
            let memory_mib = labels
                .memory_mib(&format!(
                    "{}{profile}.memory",
                    gfd_labels::MIG_PROFILE_PREFIX
                ))
                .map(|m| m.mib);
            MigProfile {
                profile,
                count,
                memory_mib,
                resource: None,
            }
        })
        .collect()
}

/// Matches the profiles no resource matched by name to the `unmatched` resources by slice count, only where
/// that is unambiguous on both sides (GFD rounds the memory in its profile names).
fn match_by_slices(devices: &mut [MigProfile], unmatched: &mut Vec<&str>) {
    let slices_of_resource = |r: &str| slice_count(&r[MIG_RESOURCE_PREFIX.len()..]);
    let unmatched_labels: Vec<Option<u32>> = devices
        .iter()
        .map(|d| {
            d.resource
                .is_none()
                .then(|| slice_count(&d.profile))
                .flatten()
        })
        .collect();
    for (device, slices) in devices.iter_mut().zip(&unmatched_labels) {
        let Some(slices) = *slices else { continue };
        let same_labels = unmatched_labels
            .iter()
            .filter(|s| **s == Some(slices))
            .count();
        let candidates: Vec<usize> = (0..unmatched.len())
            .filter(|i| slices_of_resource(unmatched[*i]) == Some(slices))
            .collect();
        if same_labels == 1
            && let [only] = candidates[..]
        {
            device.resource = Some(unmatched.remove(only).to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn devices(
        labels: &[(&str, &str)],
        capacity: &[(&str, &str)],
    ) -> Vec<(String, u64, Option<String>)> {
        let labels: std::collections::BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let capacity: ResourceMap<Amount> = capacity
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Amount::parse(*v)))
            .collect();
        let labels: crate::inventory::text_map::TextMap = labels.iter().collect();
        let mut reader = LabelReader::new(Some(&labels));
        mig_devices(&mut reader, &capacity)
            .into_iter()
            .map(|d| (d.profile, d.count, d.resource))
            .collect()
    }

    #[test]
    fn slice_counts() {
        assert_eq!(slice_count("3g.20gb"), Some(3));
        assert_eq!(slice_count("1g.10gb+me"), Some(1));
        assert_eq!(slice_count("1c.3g.20gb"), Some(3));
        assert_eq!(slice_count("weird"), None);
        assert_eq!(slice_count(""), None);
    }

    #[test]
    fn a_rounded_label_profile_matches_its_resource_by_slice_count() {
        let found = devices(
            &[
                ("nvidia.com/mig-3g.21gb.count", "2"),
                ("nvidia.com/mig-1g.10gb.count", "1"),
            ],
            &[
                ("nvidia.com/mig-3g.20gb", "2"),
                ("nvidia.com/mig-1g.10gb", "1"),
            ],
        );
        assert_eq!(
            found,
            [
                ("1g.10gb".into(), 1, Some("nvidia.com/mig-1g.10gb".into())),
                ("3g.21gb".into(), 2, Some("nvidia.com/mig-3g.20gb".into())),
            ]
        );
    }

    #[test]
    fn resources_without_labels_are_devices_and_zero_leftovers_are_not() {
        let found = devices(
            &[],
            &[
                ("nvidia.com/gpu", "0"),
                ("nvidia.com/mig-1g.10gb", "16"),
                ("nvidia.com/mig-7g.80gb", "0"),
            ],
        );
        assert_eq!(
            found,
            [("1g.10gb".into(), 16, Some("nvidia.com/mig-1g.10gb".into()))]
        );
    }

    #[test]
    fn ambiguous_slice_counts_stay_unmatched() {
        let found = devices(
            &[
                ("nvidia.com/mig-1g.12gb.count", "1"),
                ("nvidia.com/mig-1g.24gb.count", "1"),
            ],
            &[
                ("nvidia.com/mig-1g.10gb", "1"),
                ("nvidia.com/mig-1g.20gb", "1"),
            ],
        );
        assert!(
            found.iter().filter(|d| d.2.is_none()).count() == 2,
            "{found:?}"
        );
    }
}
