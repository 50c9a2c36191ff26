//! Fragmentation on the wire (`status.fragmentation`), and read back.

use crate::crd::{
    BlockedPodEntry, FragmentationStatus, LevelFragmentationEntry, ProductFragmentationEntry,
    SizeUseEntry,
};
use crate::inventory::model::{
    BlockedPod, FRAGMENTED_CAPACITY, Fragmentation, LevelFragmentation, ProductFragmentation,
    SizeUse,
};

/// The inventory's fragmentation; `None` when there is nothing to say (no product, no blocked pod).
pub fn fragmentation(model: &Fragmentation) -> Option<FragmentationStatus> {
    if model.products.is_empty() && model.blocked_pods == 0 {
        return None;
    }
    Some(FragmentationStatus {
        products: model.products.iter().map(product).collect(),
        blocked_pods: model.blocked_pods,
        blocked: model
            .blocked
            .iter()
            .map(|b| BlockedPodEntry {
                reason: FRAGMENTED_CAPACITY.to_owned(),
                namespace: b.namespace.clone(),
                pod: b.name.clone(),
                gpus: b.gpus,
                product: b.product.clone(),
                free_gpus: b.free_gpus,
                largest_piece: b.largest_piece,
            })
            .collect(),
    })
}

fn product(p: &ProductFragmentation) -> ProductFragmentationEntry {
    ProductFragmentationEntry {
        product: p.product.clone(),
        free_gpus: p.free_gpus,
        largest_piece: p.largest_piece,
        pieces: p.pieces,
        sizes: sizes(&p.sizes),
        levels: p
            .levels
            .iter()
            .map(|l| LevelFragmentationEntry {
                level: l.level.clone(),
                gpus_per_pod: l.gpus_per_pod,
                largest_piece: l.largest_piece,
                sizes: sizes(&l.sizes),
            })
            .collect(),
    }
}

fn sizes(sizes: &[SizeUse]) -> Vec<SizeUseEntry> {
    sizes
        .iter()
        .map(|s| SizeUseEntry {
            gpus: s.gpus,
            usable_gpus: s.usable_gpus,
            asked: s.asked,
        })
        .collect()
}

/// A published fragmentation read back (blocked pods of a reason this version does not know are left out).
pub fn read_fragmentation(wire: Option<&FragmentationStatus>) -> Fragmentation {
    let Some(wire) = wire else {
        return Fragmentation::default();
    };
    let read_sizes = |sizes: &[SizeUseEntry]| -> Vec<SizeUse> {
        sizes
            .iter()
            .map(|s| SizeUse {
                gpus: s.gpus,
                usable_gpus: s.usable_gpus,
                asked: s.asked,
            })
            .collect()
    };
    Fragmentation {
        products: wire
            .products
            .iter()
            .map(|p| ProductFragmentation {
                product: p.product.clone(),
                free_gpus: p.free_gpus,
                largest_piece: p.largest_piece,
                pieces: p.pieces,
                sizes: read_sizes(&p.sizes),
                levels: p
                    .levels
                    .iter()
                    .map(|l| LevelFragmentation {
                        level: l.level.clone(),
                        gpus_per_pod: l.gpus_per_pod,
                        largest_piece: l.largest_piece,
                        sizes: read_sizes(&l.sizes),
                    })
                    .collect(),
            })
            .collect(),
        blocked_pods: wire.blocked_pods,
        blocked: wire
            .blocked
            .iter()
            .filter(|b| b.reason == FRAGMENTED_CAPACITY)
            .map(|b| BlockedPod {
                namespace: b.namespace.clone(),
                name: b.pod.clone(),
                gpus: b.gpus,
                product: b.product.clone(),
                free_gpus: b.free_gpus,
                largest_piece: b.largest_piece,
            })
            .collect(),
    }
}
