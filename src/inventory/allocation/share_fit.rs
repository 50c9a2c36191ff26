//! `fit` for a share of a GPU: where a pod asking for GPU memory, a fraction of a GPU or a MIG profile can
//! start now, by each scheme's own placement rule, naming the nodes and the GPUs (docs/allocation.md, "Fit
//! for a shared request"):
//! - a sharing layer's card (HAMi, Volcano vGPU) takes it when it is healthy, has a share slot left and
//!   enough free memory (the layer's scheduler places a pod on one card with enough memory and cores left);
//! - a KAI GPU group's GPU takes it when its fractions leave enough of it (KAI places a fraction on a GPU
//!   shared already, or reserves a free one);
//! - a whole free GPU (not time-sliced, not MIG) takes any share that fits its memory;
//! - a MIG profile fits a free MIG device of that profile: the device plugin's (`nvidia.com/mig-<profile>`,
//!   or `nvidia.com/gpu` under strategy `single`), a free DRA partition of it, or room on a partitionable
//!   GPU (`stillFit`).

use std::sync::Arc;

use super::free_whole_gpus;
use crate::inventory::model::{DeviceKind, NodeInventory, SharedGpu};
use crate::inventory::resources::GPU_RESOURCE;
use crate::inventory::topology::Toleration;
use crate::inventory::topology::gang::untolerated_taint;
use crate::inventory::totals::same_product_key;

/// A share of one GPU a pod asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Share {
    /// MiB of one GPU's memory (HAMi's `nvidia.com/gpumem`, KAI's `gpu-memory`).
    MemoryMib(u64),
    /// Thousandths of one GPU (KAI's `gpu-fraction`).
    Fraction(u64),
    /// A MIG device of this profile (`1g.10gb`).
    MigProfile(String),
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Share::MemoryMib(mib) => write!(f, "{mib} MiB of one GPU's memory"),
            Share::Fraction(milli) => write!(
                f,
                "{} of one GPU",
                crate::inventory::model::Equivalent::decimal(*milli)
            ),
            Share::MigProfile(profile) => write!(f, "a MIG {profile} device"),
        }
    }
}

/// What `fit` is asked for a share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShareRequest {
    /// The share.
    pub share: Share,
    /// The GPU model (`None`: any).
    pub product: Option<String>,
    /// Taints the pod tolerates.
    pub tolerations: Vec<Toleration>,
}

/// One place a share fits: a named GPU, or `count` GPUs or devices of one kind on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharePlace {
    /// The node.
    pub node: String,
    /// The GPU or device, where the objects name it (a card's UUID, a KAI group, a DRA device).
    pub gpu: Option<String>,
    /// The scheme whose rule places it: `HAMi`, `KAI`, `whole GPU`, `MIG`, `DRA`.
    pub scheme: String,
    /// How many such GPUs or devices (1 for a named one).
    pub count: u64,
    /// What is free there, in words (`61440 MiB free`, `0.5 free`).
    pub free: String,
}

/// Where a share fits now.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShareAnswer {
    /// It fits somewhere.
    pub fits: bool,
    /// Where, by node then GPU.
    pub places: Vec<SharePlace>,
    /// Why not, when it fits nowhere.
    pub why: Option<String>,
}

/// Where `request` fits among `nodes`: Ready, schedulable nodes of the product, whose taints it tolerates.
pub fn fit_share(nodes: &[Arc<NodeInventory>], request: &ShareRequest) -> ShareAnswer {
    let product = request.product.as_deref().map(same_product_key);
    let mut places = Vec::new();
    let (mut considered, mut left_out) = (0usize, LeftOut::default());
    for node in nodes {
        if let Some(asked) = &product
            && node.product.as_deref().map(same_product_key).as_ref() != Some(asked)
        {
            continue;
        }
        if !node.ready {
            left_out.not_ready += 1;
            continue;
        }
        if node.unschedulable {
            left_out.cordoned += 1;
            continue;
        }
        if untolerated_taint(node, &request.tolerations).is_some() {
            left_out.tainted += 1;
            continue;
        }
        considered += 1;
        match &request.share {
            Share::MigProfile(profile) => places.extend(mig_places(node, profile)),
            share => places.extend(share_places(node, share)),
        }
    }
    places.sort_by(|a, b| (&a.node, &a.gpu).cmp(&(&b.node, &b.gpu)));
    let why = places.is_empty().then(|| {
        let of = match &request.product {
            Some(product) => format!(" of {product}"),
            None => String::new(),
        };
        format!(
            "none of {considered} Ready, schedulable GPU node(s){of} has {}: no GPU with that much free, no \
             free device of it{}",
            request.share,
            left_out.words()
        )
    });
    ShareAnswer {
        fits: !places.is_empty(),
        places,
        why,
    }
}

/// The nodes of the product a pod cannot start on, by why.
#[derive(Default)]
struct LeftOut {
    not_ready: usize,
    cordoned: usize,
    tainted: usize,
}

impl LeftOut {
    /// `; left out: 3 not Ready, 1 cordoned`, or nothing.
    fn words(&self) -> String {
        let parts: Vec<String> = [
            (self.not_ready, "not Ready"),
            (self.cordoned, "cordoned"),
            (
                self.tainted,
                "with a taint the pod does not tolerate (--toleration)",
            ),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, why)| format!("{n} {why}"))
        .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("; left out: {}", parts.join(", "))
        }
    }
}

/// A memory or fraction share on `node`: its shared GPUs with room, and its whole free GPUs.
fn share_places(node: &NodeInventory, share: &Share) -> Vec<SharePlace> {
    let mut places: Vec<SharePlace> = node
        .shared_gpus
        .iter()
        .filter(|gpu| gpu.has_room() && takes(gpu, share))
        .map(|gpu| SharePlace {
            node: node.name.clone(),
            gpu: Some(gpu.id.clone()),
            scheme: scheme_of(node, gpu),
            count: 1,
            free: free_words(gpu),
        })
        .collect();
    let whole = free_whole_gpus(node);
    let fits_memory = match share {
        Share::MemoryMib(mib) => node.memory_mib.is_some_and(|m| m >= *mib),
        _ => true,
    };
    // A layer's cards are listed above, free or not: its GPUs are not also whole ones.
    if whole > 0 && fits_memory && node.shared_gpus.iter().all(|g| g.slots.is_none()) {
        places.push(SharePlace {
            node: node.name.clone(),
            gpu: None,
            scheme: "whole GPU".to_owned(),
            count: whole,
            free: match node.memory_mib {
                Some(mib) => format!("whole, {mib} MiB each"),
                None => "whole".to_owned(),
            },
        });
    }
    places
}

/// Whether `gpu` has `share` free: the memory, or the fraction (and its memory, where known).
fn takes(gpu: &SharedGpu, share: &Share) -> bool {
    let free_milli = 1000 - gpu.held_milli();
    match share {
        Share::MemoryMib(mib) => gpu.free_memory_mib().is_some_and(|free| free >= *mib),
        Share::Fraction(milli) => {
            free_milli >= *milli
                && gpu
                    .free_memory_mib()
                    .zip(gpu.memory_mib)
                    .is_none_or(|(free, total)| free.saturating_mul(1000) >= milli * total)
        }
        Share::MigProfile(_) => false,
    }
}

/// The scheme of a shared GPU: the node's layer for a listed card, KAI for a group.
fn scheme_of(node: &NodeInventory, gpu: &SharedGpu) -> String {
    if gpu.id.starts_with("group/") {
        return "KAI".to_owned();
    }
    node.sharing
        .as_ref()
        .and_then(|s| s.strategy.clone())
        .unwrap_or_else(|| "sharing layer".to_owned())
}

fn free_words(gpu: &SharedGpu) -> String {
    let free = crate::inventory::model::Equivalent::decimal(1000 - gpu.held_milli());
    match gpu.free_memory_mib() {
        Some(mib) => format!("{mib} MiB free ({free} of the GPU)"),
        None => format!("{free} of the GPU free"),
    }
}

/// A MIG device of `profile` on `node`: the device plugin's free ones, the DRA partitions, or room on a
/// partitionable GPU.
fn mig_places(node: &NodeInventory, profile: &str) -> Vec<SharePlace> {
    let place = |gpu: Option<String>, scheme: &str, count: u64, free: String| SharePlace {
        node: node.name.clone(),
        gpu,
        scheme: scheme.to_owned(),
        count,
        free,
    };
    let mut places = Vec::new();
    let resource = format!("nvidia.com/mig-{profile}");
    let single = node
        .product
        .as_deref()
        .and_then(|p| p.split_once("-MIG-"))
        .is_some_and(|(_, p)| p == profile)
        && node.mig.as_ref().and_then(|m| m.strategy.as_deref()) == Some("single");
    let plugin_free = if single {
        node.free.get(GPU_RESOURCE)
    } else {
        node.free.get(&resource)
    };
    if let Some(&n) = plugin_free.filter(|n| **n > 0) {
        let as_resource = if single { GPU_RESOURCE } else { &resource };
        places.push(place(None, "MIG", n, format!("{n} free as {as_resource}")));
    }
    let mut dra_free = 0;
    for device in &node.devices {
        if device.free && device.kind == DeviceKind::Partition(profile.to_owned()) {
            dra_free += 1;
            places.push(place(
                Some(device.name.clone()),
                "DRA",
                1,
                format!("free ({})", device.resource),
            ));
        }
    }
    if dra_free == 0
        && let Some((name, &n)) = node
            .still_fit
            .iter()
            .find(|(name, n)| name.ends_with(&format!("/mig-{profile}")) && **n > 0)
    {
        places.push(place(
            None,
            "DRA",
            n,
            format!("{n} more fit on the partitionable GPUs ({name})"),
        ));
    }
    places
}

#[cfg(test)]
#[path = "share_fit_tests.rs"]
mod tests;
