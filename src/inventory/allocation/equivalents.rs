//! GPU-equivalents: how much of a physical GPU a pod holds on its node, by the rule of the scheme that shares
//! the node's GPUs (docs/allocation.md, "GPU-equivalents", has each rule with its source). A pure function of
//! the node's entry and the pod's effective requests: a whole GPU is 1, a MIG device its compute slices over
//! the parent's, a time-slicing or MPS replica 1/replicas, a HAMi or Volcano share its memory limit over the
//! device's memory (else its core limit), a vGPU profile its frame buffer over the board's.
//!
//! A request no rule covers (an AMD partition, a registered vendor's share) has no equivalent: it is held and
//! listed under its own resource, and not counted as a fraction of anything.

use super::pod::{GpuPod, PodShare};
use crate::inventory::model::{
    Basis, ClaimRef, Device, DeviceKind, Equivalent, NodeInventory, ResourceMap, SharedCapacity,
};
use crate::inventory::resources::{GPU_RESOURCE, SHARED_GPU_RESOURCE};
use crate::inventory::vendors::nvidia::features::slice_count;
use crate::inventory::vendors::nvidia::vm_gpus::{board_gb, vgpu_type};
use crate::inventory::vendors::sharing_layer::POD_DEVICE_ANNOTATIONS;
use crate::inventory::vendors::unit_of;
use crate::inventory::vendors::vendor_table::Unit;

/// HAMi's per-device limits on an `nvidia.com/gpu` request (HAMi's `nvidia.com/gpumem`,
/// `nvidia.com/gpumem-percentage`, `nvidia.com/gpucores`: `charts/hami/values.yaml`).
const HAMI_MEMORY: &str = "nvidia.com/gpumem";
const HAMI_MEMORY_PERCENT: &str = "nvidia.com/gpumem-percentage";
const HAMI_CORES: &str = "nvidia.com/gpucores";
/// Volcano vGPU's (`volcano-vgpu-device-plugin` `values.yaml`).
const VOLCANO_SHARES: &str = "volcano.sh/vgpu-number";
const VOLCANO_MEMORY: &str = "volcano.sh/vgpu-memory";
const VOLCANO_CORES: &str = "volcano.sh/vgpu-cores";
/// Aliyun's gpushare: GiB of one GPU's memory (`gpushare-device-plugin` `const.go`).
const ALIYUN_MEMORY: &str = "aliyun.com/gpu-mem";

/// KAI-Scheduler's pod annotations of a share of one GPU: a fraction, or MiB of its memory
/// (KAI-Scheduler `docs/gpu-sharing/README.md`). The pod asks for no GPU resource; KAI's reservation pod holds
/// the device.
pub const KAI_FRACTION: &str = "gpu-fraction";
/// See [`KAI_FRACTION`].
pub const KAI_MEMORY: &str = "gpu-memory";
/// Where KAI's reservation pods run (`kai-resource-reservation`; `runai-reservation` before the rename): each
/// holds a whole `nvidia.com/gpu` for the fractions it hosts, and is no team's holding.
pub const KAI_RESERVATION_NAMESPACES: [&str; 2] = ["kai-resource-reservation", "runai-reservation"];

/// KAI-Scheduler's pod label tying fraction pods to the reservation pod that holds their GPU
/// (`pkg/common/constants/constants.go`).
pub const KAI_GPU_GROUP: &str = "runai-gpu-group";

/// Whether a pod annotation is one the accounting reads (the pod watch keeps only these): KAI's shares and
/// the sharing layers' device records.
pub fn is_read_pod_annotation(key: &str) -> bool {
    key == KAI_FRACTION || key == KAI_MEMORY || POD_DEVICE_ANNOTATIONS.contains(&key)
}

/// Whether a pod is a GPU-sharing scheduler's reservation, holding a device for others' fractions.
pub fn is_reservation(pod: &GpuPod) -> bool {
    KAI_RESERVATION_NAMESPACES.contains(&pod.namespace.as_str())
}

/// A share a pod's annotations ask for, as a GPU-equivalent on `node`: the fraction itself, or the memory over
/// the node's GPU memory (`None` where the node's GPU memory is unknown).
pub fn of_share(node: &NodeInventory, share: PodShare) -> Option<Equivalent> {
    match share {
        PodShare::Fraction { milli } => Some(Equivalent {
            milli,
            basis: Basis::Fraction,
        }),
        PodShare::MemoryMib(mib) => {
            let of_mib = node.memory_mib.filter(|m| *m > 0)?;
            Some(fraction(
                1,
                Basis::Memory {
                    mib: mib.min(of_mib),
                    of_mib,
                },
            ))
        }
    }
}

/// The sharing layers whose node annotation lists the devices (`Sharing::strategy` names the layer).
const MEMORY_LAYERS: [&str; 2] = ["HAMi", "Volcano vGPU"];

/// One request's equivalent (`requests`: all of the pod's, for the limits asked beside a share); `None` for a
/// request of 0 or one no rule covers.
pub fn of_request(
    node: &NodeInventory,
    requests: &ResourceMap<u64>,
    resource: &str,
    n: u64,
) -> Option<Equivalent> {
    if n == 0 {
        return None;
    }
    let layer = node.sharing.as_ref().and_then(|s| s.strategy.as_deref());
    let replicas = node
        .sharing
        .as_ref()
        .filter(|s| !matches!(s.strategy.as_deref(), Some(l) if MEMORY_LAYERS.contains(&l)))
        .and_then(|s| s.replicas)
        .filter(|r| *r > 1);
    match resource {
        GPU_RESOURCE => {
            if let Some((slices, of)) = single_strategy_slices(node) {
                return Some(fraction(n, Basis::MigSlices { slices, of }));
            }
            if layer.is_some_and(|l| MEMORY_LAYERS.contains(&l)) {
                return Some(layered(node, requests, n, HAMI_MEMORY, HAMI_CORES));
            }
            Some(match replicas {
                Some(per_gpu) if !node.sharing.as_ref().is_some_and(|s| s.renamed_resource) => {
                    fraction(n, Basis::Replicas { per_gpu })
                }
                _ => fraction(n, Basis::Whole),
            })
        }
        SHARED_GPU_RESOURCE => replicas.map(|per_gpu| fraction(n, Basis::Replicas { per_gpu })),
        VOLCANO_SHARES => Some(layered(node, requests, n, VOLCANO_MEMORY, VOLCANO_CORES)),
        ALIYUN_MEMORY => {
            let of_mib = node.memory_mib.filter(|m| *m > 0)?;
            Some(fraction(
                1,
                Basis::Memory {
                    mib: n.saturating_mul(1024),
                    of_mib,
                },
            ))
        }
        _ => {
            if let Some(profile) = resource.strip_prefix("nvidia.com/mig-") {
                let slices = profile_slices(profile)?;
                return Some(fraction(
                    n,
                    Basis::MigSlices {
                        slices,
                        of: parent_slices(node),
                    },
                ));
            }
            if let Some((product, gb)) = vgpu_type(resource) {
                let of_gb = board_gb(&product)?;
                return Some(fraction(n, Basis::FrameBuffer { gb, of_gb }));
            }
            (unit_of(resource) == Some(Unit::Device)).then(|| fraction(n, Basis::Whole))
        }
    }
}

/// `n` devices of a sharing layer that limits memory or cores per device (HAMi, Volcano vGPU): the memory
/// asked over the device's, else the cores, else the whole device (both layers give a pod that asks for
/// neither all of a device's memory: HAMi's `defaultMem: 0`).
fn layered(
    node: &NodeInventory,
    requests: &ResourceMap<u64>,
    n: u64,
    memory: &str,
    cores: &str,
) -> Equivalent {
    let asked = |name: &str| requests.get(name).copied().filter(|v| *v > 0);
    if let (Some(mib), Some(of_mib)) = (asked(memory), node.memory_mib.filter(|m| *m > 0)) {
        return fraction(
            n,
            Basis::Memory {
                mib: mib.min(of_mib),
                of_mib,
            },
        );
    }
    if let Some(percent) = asked(HAMI_MEMORY_PERCENT).filter(|_| memory == HAMI_MEMORY) {
        // As a memory fraction of a device of unknown size: percent of 100.
        return fraction(
            n,
            Basis::Memory {
                mib: percent.min(100),
                of_mib: 100,
            },
        );
    }
    if let Some(percent) = asked(cores) {
        return fraction(
            n,
            Basis::Cores {
                percent: percent.min(100),
            },
        );
    }
    fraction(n, Basis::Whole)
}

/// `n` times the fraction `basis` names, in thousandths, rounded to the nearest.
fn fraction(n: u64, basis: Basis) -> Equivalent {
    let (num, den) = match basis {
        Basis::Whole => (1, 1),
        Basis::Replicas { per_gpu } => (1, per_gpu),
        Basis::MigSlices { slices, of } => (slices, of),
        Basis::Memory { mib, of_mib } => (mib, of_mib),
        Basis::Cores { percent } => (percent, 100),
        Basis::FrameBuffer { gb, of_gb } => (gb, of_gb),
        Basis::SharedDevice { claims } => (1, claims),
        Basis::Capacity { used, of } => (used, of),
        Basis::Fraction => (1, 1),
    };
    let den = u128::from(den.max(1));
    let milli = (u128::from(n) * u128::from(num) * 1000 + den / 2) / den;
    Equivalent {
        milli: u64::try_from(milli).unwrap_or(u64::MAX),
        basis,
    }
}

/// A claim's part of a DRA device: a whole GPU is 1 and a MIG device its slices; of a device several claims
/// share (KEP-5075), the claim's consumed capacity over the device's, by the capacity it takes most of, else
/// (no consumed capacity published) an equal part each. `None` for a device of another kind.
pub fn of_claim(node: &NodeInventory, device: &Device, claim: &ClaimRef) -> Option<Equivalent> {
    let whole = match &device.kind {
        DeviceKind::Whole => fraction(1, Basis::Whole),
        DeviceKind::Partition(profile) => fraction(
            1,
            Basis::MigSlices {
                slices: profile_slices(profile)?,
                of: parent_slices(node),
            },
        ),
        DeviceKind::Other(_) | DeviceKind::Unnamed => return None,
    };
    let part = |basis: Basis| {
        let each = fraction(1, basis);
        Equivalent {
            milli: whole.milli * each.milli / 1000,
            basis,
        }
    };
    if let Some(shared) = &device.shared
        && let Some((used, of)) = largest_share(shared, claim)
    {
        return Some(part(Basis::Capacity { used, of }));
    }
    match device.claims.len() as u64 {
        0 | 1 => Some(whole),
        claims => Some(part(Basis::SharedDevice { claims })),
    }
}

/// What `claim` consumed of a shared device, as (consumed, capacity) of the capacity it takes the most of.
fn largest_share(shared: &SharedCapacity, claim: &ClaimRef) -> Option<(u64, u64)> {
    let (_, used) = shared.by_claim.iter().find(|(c, _)| c == claim)?;
    used.iter()
        .filter_map(|(name, amount)| {
            let of = u64::try_from(*shared.total.get(name)?)
                .ok()
                .filter(|t| *t > 0)?;
            let used = u64::try_from(*amount).ok()?.min(of);
            Some((used, of))
        })
        // a/b against c/d as a*d against c*b.
        .max_by(|(a, b), (c, d)| {
            (u128::from(*a) * u128::from(*d)).cmp(&(u128::from(*c) * u128::from(*b)))
        })
}

/// Under MIG strategy `single` every `nvidia.com/gpu` is a MIG device of the node's one profile
/// (`NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`): its slices and the parent's.
pub(super) fn single_strategy_slices(node: &NodeInventory) -> Option<(u64, u64)> {
    let mig = node.mig.as_ref()?;
    if mig.strategy.as_deref() != Some("single") {
        return None;
    }
    let (_, profile) = node.product.as_deref()?.split_once("-MIG-")?;
    Some((profile_slices(profile)?, parent_slices(node)))
}

/// The compute slices of a MIG profile (`3g.40gb`, `1c.3g.40gb`, `3g.40gb+me`: 3), as GPU Feature Discovery's
/// labels are read.
pub(super) fn profile_slices(profile: &str) -> Option<u64> {
    slice_count(profile).map(u64::from).filter(|n| *n > 0)
}

/// The compute slices of the node's GPU: 4 on an A30 and an RTX PRO 6000 Blackwell, 7 on the A100, H100,
/// H200, B200 and GB200 (NVIDIA's MIG user guide, "Supported MIG Profiles"); 7 when the product is unknown.
pub(super) fn parent_slices(node: &NodeInventory) -> u64 {
    let product = node
        .product
        .as_deref()
        .unwrap_or_default()
        .to_ascii_uppercase();
    if product.contains("A30")
        || product.contains("RTX-PRO-6000")
        || product.contains("RTX PRO 6000")
    {
        4
    } else {
        7
    }
}

#[cfg(test)]
#[path = "equivalents_tests.rs"]
mod tests;
