//! Who makes a node's accelerators.

use std::fmt;

/// The maker of a node's GPUs or accelerators. Vendors are never summed across one another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vendor {
    /// NVIDIA GPUs.
    Nvidia,
    /// AMD Instinct and Radeon GPUs.
    Amd,
    /// Intel GPUs (i915, xe) and Gaudi through Intel's DRA driver.
    Intel,
    /// Habana (Intel) Gaudi through Habana's device plugin.
    Habana,
    /// AWS Trainium and Inferentia (Neuron).
    Aws,
    /// Google TPUs.
    Google,
    /// The simulated devices of Kubernetes' DRA example driver: no real hardware, never a real vendor.
    Example,
    /// Accelerators no rule attributes to a maker (an unknown DRA driver, a vendor-neutral resource).
    Unknown,
}

impl Vendor {
    /// Every vendor, in the order ties between them are broken.
    pub const ALL: [Vendor; 8] = [
        Vendor::Nvidia,
        Vendor::Amd,
        Vendor::Intel,
        Vendor::Habana,
        Vendor::Aws,
        Vendor::Google,
        Vendor::Example,
        Vendor::Unknown,
    ];

    /// The name the API shows (`vendor`, the `homelab.youngju.dev/vendor` label, the metrics' `vendor`);
    /// `None` for [`Vendor::Unknown`], which the API leaves out.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            Vendor::Nvidia => "nvidia",
            Vendor::Amd => "amd",
            Vendor::Intel => "intel",
            Vendor::Habana => "habana",
            Vendor::Aws => "aws",
            Vendor::Google => "google",
            Vendor::Example => "example",
            Vendor::Unknown => return None,
        })
    }

    /// The vendor the API calls `name`, if this version knows it.
    pub fn from_name(name: &str) -> Option<Vendor> {
        Vendor::ALL.into_iter().find(|v| v.name() == Some(name))
    }
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().unwrap_or("unknown"))
    }
}
