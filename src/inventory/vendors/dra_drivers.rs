//! The DRA drivers of every vendor: which device `type` is a whole device and which a partition, which
//! attributes name the product, the partition profile and the device a partition belongs to.
//!
//! A driver not listed here is read by [`GENERIC`], the first editions' rules (NVIDIA's attribute names).

use crate::inventory::model::Vendor;

/// How one DRA driver describes its devices.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct DraDriverRules {
    /// The driver's name (`gpu.nvidia.com`); empty for [`GENERIC`].
    pub(crate) driver: &'static str,
    /// Who makes its devices.
    pub(crate) vendor: Vendor,
    /// `type` values of a whole device.
    pub(crate) whole_types: &'static [&'static str],
    /// `type` values of a partition.
    pub(crate) partition_types: &'static [&'static str],
    /// The driver publishes no `type`: every device is a whole device.
    pub(crate) untyped_is_whole: bool,
    /// Resource name of a partition: `<driver>/<prefix><profile>`.
    pub(crate) partition_prefix: &'static str,
    /// Attributes naming a partition's profile, in order.
    pub(crate) profile_attributes: &'static [&'static str],
    /// Attributes naming the product, in order (a value `Unknown` names nothing).
    pub(crate) product_attributes: &'static [&'static str],
    /// An attribute a whole device and its partitions share (AMD's `deviceID`); `None` where the driver links
    /// them by `uuid` and `parentUUID`.
    pub(crate) shared_id_attribute: Option<&'static str>,
    /// An attribute in which the driver reports each device's health, and its healthy values (compared
    /// without case); `None` where the driver reports none (a device it finds broken leaves the slice, or is
    /// tainted). A device whose attribute holds another value is unhealthy: not free, and an issue.
    pub(crate) health_attribute: Option<(&'static str, &'static [&'static str])>,
}

/// The first editions' reading, for any driver not listed: `type` `gpu` whole, `mig` a partition.
pub(crate) const GENERIC: DraDriverRules = DraDriverRules {
    driver: "",
    vendor: Vendor::Unknown,
    whole_types: &["gpu"],
    partition_types: &["mig"],
    untyped_is_whole: false,
    partition_prefix: "mig-",
    profile_attributes: &["profile"],
    product_attributes: &["productName"],
    shared_id_attribute: None,
    health_attribute: None,
};

/// Every known GPU and accelerator DRA driver.
pub(crate) const DRIVERS: [DraDriverRules; 6] = [
    DraDriverRules {
        driver: "gpu.nvidia.com",
        vendor: Vendor::Nvidia,
        ..GENERIC
    },
    DraDriverRules {
        driver: "gpu.amd.com",
        vendor: Vendor::Amd,
        whole_types: &["amdgpu"],
        partition_types: &["amdgpu-partition"],
        untyped_is_whole: false,
        partition_prefix: "",
        profile_attributes: &["partitionProfile"],
        product_attributes: &["productName"],
        shared_id_attribute: Some("deviceID"),
        health_attribute: None,
    },
    DraDriverRules {
        driver: "gpu.intel.com",
        vendor: Vendor::Intel,
        untyped_is_whole: true,
        product_attributes: &["model", "family"],
        // Intel's GPU driver: `health: Healthy` (its health monitoring writes `Unhealthy`).
        health_attribute: Some(("health", &["Healthy"])),
        ..GENERIC
    },
    DraDriverRules {
        driver: "gaudi.intel.com",
        vendor: Vendor::Intel,
        untyped_is_whole: true,
        product_attributes: &["model"],
        // Intel's Gaudi driver: `healthy: true`.
        health_attribute: Some(("healthy", &["true"])),
        ..GENERIC
    },
    DraDriverRules {
        driver: "neuron.aws.com",
        vendor: Vendor::Aws,
        untyped_is_whole: true,
        product_attributes: &["instanceType", "model"],
        ..GENERIC
    },
    DraDriverRules {
        driver: "gpu.example.com",
        vendor: Vendor::Example,
        untyped_is_whole: true,
        product_attributes: &["model"],
        ..GENERIC
    },
];

/// The rules of a driver: its own, else [`GENERIC`].
pub(crate) fn driver_rules(driver: &str) -> &'static DraDriverRules {
    DRIVERS
        .iter()
        .find(|d| d.driver == driver)
        .unwrap_or(&GENERIC)
}

/// The drivers `--dra-driver` reads by default: every known one.
#[cfg(test)]
pub(crate) fn default_drivers() -> impl Iterator<Item = &'static str> {
    DRIVERS.iter().map(|d| d.driver)
}

/// Vendors' domains, for a driver not listed (`compute-domain.nvidia.com`, `<id>.gpu.amd.com`).
const DOMAINS: [(&str, Vendor); 6] = [
    ("nvidia.com", Vendor::Nvidia),
    ("amd.com", Vendor::Amd),
    ("intel.com", Vendor::Intel),
    ("habana.ai", Vendor::Habana),
    ("aws.com", Vendor::Aws),
    ("google.com", Vendor::Google),
];

/// The vendor of a DRA driver: listed, else by the domain its name ends with.
pub(crate) fn driver_vendor(driver: &str) -> Option<Vendor> {
    let listed = driver_rules(driver);
    if !listed.driver.is_empty() {
        return Some(listed.vendor);
    }
    DOMAINS
        .iter()
        .find(|(domain, _)| driver == *domain || driver.ends_with(&format!(".{domain}")))
        .map(|(_, vendor)| *vendor)
}

/// The vendor most of a node's DRA devices' drivers belong to (ties: the first in [`Vendor::ALL`]).
pub(super) fn drivers_vendor(drivers: &[&str]) -> Option<Vendor> {
    let mut counts: std::collections::BTreeMap<Vendor, usize> = Default::default();
    for driver in drivers {
        *counts
            .entry(driver_vendor(driver).unwrap_or(Vendor::Unknown))
            .or_insert(0) += 1;
    }
    counts
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        .map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_are_attributed_by_table_then_domain() {
        assert_eq!(driver_vendor("gpu.nvidia.com"), Some(Vendor::Nvidia));
        assert_eq!(driver_vendor("gpu.amd.com"), Some(Vendor::Amd));
        assert_eq!(driver_vendor("gaudi.intel.com"), Some(Vendor::Intel));
        assert_eq!(driver_vendor("neuron.aws.com"), Some(Vendor::Aws));
        assert_eq!(driver_vendor("gpu.example.com"), Some(Vendor::Example));
        assert_eq!(
            driver_vendor("compute-domain.nvidia.com"),
            Some(Vendor::Nvidia)
        );
        assert_eq!(driver_vendor("nic.example.com"), None);
        assert_eq!(
            driver_vendor("notnvidia.com"),
            None,
            "a whole label, not a suffix"
        );
        assert_eq!(driver_rules("x.gpu.example.com"), &GENERIC);
        assert_eq!(
            drivers_vendor(&["gpu.amd.com", "gpu.amd.com", "gpu.nvidia.com"]),
            Some(Vendor::Amd)
        );
    }
}
