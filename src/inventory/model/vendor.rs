//! Who makes a node's accelerators.

use std::fmt;

use crate::inventory::vendors::registry::REGISTRY;

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
    /// A vendor of the accelerator registry's data (`vendors/registry/vendors.tsv`) that no Rust module
    /// reads: Huawei Ascend, Cambricon, Hygon, MetaX, ... By its row in that file.
    Registered(u8),
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
            Vendor::Registered(row) => {
                return REGISTRY.vendors.get(usize::from(row)).map(|v| v.name);
            }
            Vendor::Example => "example",
            Vendor::Unknown => return None,
        })
    }

    /// The vendor the API calls `name`, if this version knows it (built in, or in the registry).
    pub fn from_name(name: &str) -> Option<Vendor> {
        Vendor::ALL
            .into_iter()
            .find(|v| v.name() == Some(name))
            .or_else(|| {
                let (row, vendor) = REGISTRY.vendor(name)?;
                (!vendor.builtin)
                    .then(|| u8::try_from(row).ok().map(Vendor::Registered))
                    .flatten()
            })
    }

    /// Its place among the vendors a scope tracks labellers for: the built-in ones in [`Vendor::ALL`]'s
    /// order, then the registry's by row; `None` past [`Vendor::SLOTS`].
    pub fn slot(self) -> Option<usize> {
        match self {
            Vendor::Registered(row) => {
                Some(Vendor::ALL.len() + usize::from(row)).filter(|s| *s < Vendor::SLOTS)
            }
            other => Vendor::ALL.iter().position(|v| *v == other),
        }
    }

    /// How many vendors a scope tracks labellers for (a 64-bit signal word holds them; `Default` for arrays
    /// stops at 32).
    pub const SLOTS: usize = 32;
}

impl fmt::Display for Vendor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name().unwrap_or("unknown"))
    }
}
