//! Who makes a node's GPUs, as the labels, resources and DRA drivers that described it say.
//!
//! Today every rule of the scanner reads NVIDIA's components (GPU Feature Discovery, the device plugin's
//! `nvidia.com/*` resources, the clouds' NVIDIA GPU labels) and DRA drivers named in `--dra-driver`; a DRA
//! driver is attributed by its name. Vendors are never summed across one another.

use crate::inventory::model::NodeInventory;

/// `vendor` value for NVIDIA.
pub(crate) const NVIDIA: &str = "nvidia";

/// DRA driver names (or their last labels before the vendor's domain) and their vendors.
const DRA_DRIVER_VENDORS: [(&str, &str); 6] = [
    ("nvidia.com", NVIDIA),
    ("amd.com", "amd"),
    ("intel.com", "intel"),
    ("habana.ai", "habana"),
    ("aws.com", "aws"),
    ("google.com", "google"),
];

/// The vendor of a node's GPUs: its DRA devices' driver when DRA describes it, else NVIDIA (the only vendor
/// whose labels and resources the scanner reads). `None` for a DRA driver of no known vendor.
pub(crate) fn vendor_of(entry: &NodeInventory) -> Option<&'static str> {
    let Some(device) = entry.devices.first() else {
        return Some(NVIDIA);
    };
    if !entry.capacity.is_empty() || !entry.allocatable.is_empty() {
        return Some(NVIDIA);
    }
    driver_vendor(&device.driver)
}

/// The vendor called `name` (as `products[].vendor` spells it), if it is one this version knows.
pub(crate) fn by_name(name: &str) -> Option<&'static str> {
    DRA_DRIVER_VENDORS
        .iter()
        .map(|(_, vendor)| *vendor)
        .find(|vendor| *vendor == name)
}

/// The vendor of a DRA driver, by the domain its name ends with.
pub(crate) fn driver_vendor(driver: &str) -> Option<&'static str> {
    DRA_DRIVER_VENDORS
        .iter()
        .find(|(domain, _)| driver == *domain || driver.ends_with(&format!(".{domain}")))
        .map(|(_, vendor)| *vendor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::Device;

    #[test]
    fn drivers_are_attributed_by_domain() {
        assert_eq!(driver_vendor("gpu.nvidia.com"), Some("nvidia"));
        assert_eq!(driver_vendor("gpu.amd.com"), Some("amd"));
        assert_eq!(driver_vendor("gaudi.intel.com"), Some("intel"));
        assert_eq!(driver_vendor("gpu.example.com"), None);
        assert_eq!(
            driver_vendor("notnvidia.com"),
            None,
            "a whole label, not a suffix"
        );
    }

    #[test]
    fn device_plugin_nodes_are_nvidia_and_dra_nodes_follow_their_driver() {
        let plain = NodeInventory::default();
        assert_eq!(vendor_of(&plain), Some("nvidia"));
        let dra = NodeInventory {
            devices: vec![Device {
                driver: "gpu.example.com".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(vendor_of(&dra), None);
    }
}
