//! Holdings: what is allocated on a node, by whom, and how much of a physical GPU that is.

use super::device::ClaimRef;

/// Who holds a resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holder {
    /// A pod bound to the node, by its effective request of an extended resource.
    Pod {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A ResourceClaim whose allocation names a device of the node.
    Claim(ClaimRef),
}

impl Holder {
    /// The holder's namespace.
    pub fn namespace(&self) -> &str {
        match self {
            Holder::Pod { namespace, .. } => namespace,
            Holder::Claim(claim) => &claim.namespace,
        }
    }
}

/// One holder's share of one resource on a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holding {
    /// The resource (`nvidia.com/gpu`, `gpu.nvidia.com/gpu`).
    pub resource: String,
    /// Who holds it.
    pub holder: Holder,
    /// How much: the pod's effective request, or 1 device.
    pub amount: u64,
    /// The device held, for a claim (its name in its pool).
    pub device: Option<String>,
    /// How much of a physical GPU this holding is, where a rule says (`allocation::equivalents`): on the
    /// holding of the resource that places the pod (`nvidia.com/gpu`, a MIG profile, a vGPU share), never
    /// on the memory and core amounts beside it.
    pub equivalent: Option<Equivalent>,
}

/// How much of one physical GPU a holder holds, in thousandths (three decimals), and by which rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Equivalent {
    /// Thousandths of a physical GPU.
    pub milli: u64,
    /// The rule that gave it.
    pub basis: Basis,
}

/// The rule a GPU-equivalent was read by (docs/allocation.md, "GPU-equivalents").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Basis {
    /// Whole devices: one each.
    Whole,
    /// Time-slicing or MPS replicas: one over the replicas per GPU each.
    Replicas {
        /// Replicas a GPU is advertised as.
        per_gpu: u64,
    },
    /// A MIG device: its profile's compute slices over the parent GPU's.
    MigSlices {
        /// The profile's compute slices.
        slices: u64,
        /// The parent GPU's.
        of: u64,
    },
    /// A sharing layer's memory limit: MiB per device over the device's memory.
    Memory {
        /// The limit asked, per device.
        mib: u64,
        /// The device's memory.
        of_mib: u64,
    },
    /// A sharing layer's core limit: percent of a device.
    Cores {
        /// The limit asked, per device.
        percent: u64,
    },
    /// A vGPU profile: its frame buffer over the board's (GB).
    FrameBuffer {
        /// The profile's frame buffer.
        gb: u64,
        /// The GPU's.
        of_gb: u64,
    },
    /// A fraction a scheduler's pod annotation names (KAI-Scheduler's `gpu-fraction`).
    Fraction,
    /// A claim's consumed capacity of a device several claims share (KEP-5075), in the capacity's unit.
    Capacity {
        /// What the claim consumed.
        used: u64,
        /// The device's capacity.
        of: u64,
    },
    /// A DRA device several claims share: an equal part of it each.
    SharedDevice {
        /// The claims that share it.
        claims: u64,
    },
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Basis::Whole => f.write_str("whole GPUs"),
            Basis::Replicas { per_gpu } => {
                write!(f, "1/{per_gpu} GPU a replica (time-slicing or MPS)")
            }
            Basis::MigSlices { slices, of } => {
                write!(f, "{slices}/{of} of the GPU's MIG compute slices")
            }
            Basis::Memory { mib, of_mib } => {
                write!(f, "{mib} of {of_mib} MiB of GPU memory a device")
            }
            Basis::Cores { percent } => write!(f, "{percent} % of a GPU's cores a device"),
            Basis::FrameBuffer { gb, of_gb } => write!(f, "a {gb} GB vGPU of a {of_gb} GB GPU"),
            Basis::SharedDevice { claims } => {
                write!(f, "a device {claims} claims share, an equal part each")
            }
            Basis::Fraction => {
                f.write_str("the fraction of a GPU the pod's gpu-fraction annotation names")
            }
            Basis::Capacity { used, of } => {
                write!(
                    f,
                    "{used} of the shared device's {of} (its consumed capacity)"
                )
            }
        }
    }
}

impl Equivalent {
    /// As the API writes it: a decimal with at most three decimals (`2.5`, `0.429`, `1`).
    pub fn decimal(milli: u64) -> String {
        let (whole, part) = (milli / 1000, milli % 1000);
        if part == 0 {
            return whole.to_string();
        }
        format!("{whole}.{part:03}")
            .trim_end_matches('0')
            .to_owned()
    }

    /// Thousandths from [`Equivalent::decimal`]'s text; `None` for anything else.
    pub fn parse_decimal(text: &str) -> Option<u64> {
        let (whole, part) = text.split_once('.').unwrap_or((text, ""));
        if part.len() > 3 || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let part: u64 = format!("{part:0<3}").parse().ok()?;
        whole
            .parse::<u64>()
            .ok()?
            .checked_mul(1000)?
            .checked_add(part)
    }
}
