//! The `nvidia.com/*` extended resources of a node (capacity and allocatable).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Prefix of every resource the NVIDIA device plugins advertise.
pub const NVIDIA_RESOURCE_PREFIX: &str = "nvidia.com/";
/// The plain GPU resource.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// The GPU resource renamed by time-slicing/MPS with `renameByDefault: true`.
pub const SHARED_GPU_RESOURCE: &str = "nvidia.com/gpu.shared";
/// Prefix of MIG resources under MIG strategy `mixed` (`nvidia.com/mig-1g.10gb`).
pub const MIG_RESOURCE_PREFIX: &str = "nvidia.com/mig-";

/// The `nvidia.com/*` entries of a resource list, as the API server printed them.
pub fn nvidia_resources(list: Option<&BTreeMap<String, Quantity>>) -> BTreeMap<String, String> {
    list.into_iter()
        .flatten()
        .filter(|(name, _)| name.starts_with(NVIDIA_RESOURCE_PREFIX))
        .map(|(name, q)| (name.clone(), q.0.clone()))
        .collect()
}

/// Whether a resource name is one that schedules GPU work (whole, shared or MIG slices).
pub fn is_gpu_resource(name: &str) -> bool {
    name == GPU_RESOURCE || name == SHARED_GPU_RESOURCE || name.starts_with(MIG_RESOURCE_PREFIX)
}

/// The value of a quantity as a number, for the plain forms extended resources use ("8", "0", "1k", "500m").
/// `None` when it does not parse; callers treat that as unknown, never as a panic.
pub fn quantity_value(quantity: &str) -> Option<f64> {
    const SUFFIXES: [(&str, f64); 13] = [
        ("Ki", 1024.0),
        ("Mi", 1_048_576.0),
        ("Gi", 1_073_741_824.0),
        ("Ti", 1_099_511_627_776.0),
        ("Pi", 1_125_899_906_842_624.0),
        ("Ei", 1_152_921_504_606_846_976.0),
        ("n", 1e-9),
        ("u", 1e-6),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
    ];
    let quantity = quantity.trim();
    let (number, factor) = SUFFIXES
        .iter()
        .find_map(|(suffix, factor)| quantity.strip_suffix(suffix).map(|n| (n, *factor)))
        .unwrap_or((quantity, 1.0));
    let digits_ok = !number.is_empty()
        && number.bytes().all(|b| {
            b.is_ascii_digit() || b == b'.' || b == b'+' || b == b'-' || b == b'e' || b == b'E'
        });
    if !digits_ok {
        return None;
    }
    number
        .parse::<f64>()
        .ok()
        .map(|n| n * factor)
        .filter(|v| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_extended_resource_quantities() {
        assert_eq!(quantity_value("8"), Some(8.0));
        assert_eq!(quantity_value("0"), Some(0.0));
        assert_eq!(quantity_value("1k"), Some(1000.0));
        assert_eq!(quantity_value("500m"), Some(0.5));
        assert_eq!(quantity_value("2Ki"), Some(2048.0));
        assert_eq!(quantity_value("lots"), None);
        assert_eq!(quantity_value(""), None);
        assert_eq!(quantity_value("1e999"), None);
    }
}
