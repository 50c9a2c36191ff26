//! Fragmentation under the node and product tables (docs/fragmentation.md): the pods blocked only because the
//! free GPUs are in pieces, each with its product's pieces; with `-o wide`, every product's ladder. Nothing
//! when nothing waits on pieces (a table of a quiet cluster stays as it was).

use crate::crd::{FragmentationStatus, GpuInventoryStatus, ProductFragmentationEntry};
use crate::runtime::terminal_text::visible;

/// The lines, each section after a blank line; empty when there is nothing to say.
pub(super) fn lines(status: &GpuInventoryStatus, wide: bool) -> String {
    let Some(fragmentation) = &status.fragmentation else {
        return String::new();
    };
    let mut out = String::new();
    if fragmentation.blocked_pods > 0 {
        out += &blocked(fragmentation);
    }
    let shown: Vec<&ProductFragmentationEntry> = fragmentation
        .products
        .iter()
        .filter(|p| {
            wide || p
                .sizes
                .iter()
                .any(|s| s.asked && s.usable_gpus < p.free_gpus)
        })
        .filter(|p| p.free_gpus > 0)
        .collect();
    if !shown.is_empty() {
        out += "\nfree GPUs in pieces (of the free GPUs, what pods of each size can use):\n";
        for product in shown {
            out += &ladder(product);
        }
    }
    out
}

/// `blocked by fragmentation (N):` and a line per pod listed.
fn blocked(fragmentation: &FragmentationStatus) -> String {
    let mut out = format!(
        "\nblocked by fragmentation ({}): the free GPUs would hold them, but no node has enough of them free:\n",
        fragmentation.blocked_pods
    );
    for pod in &fragmentation.blocked {
        out += &format!(
            "  {}/{}: {} GPUs of {}; {} free, the largest piece {}\n",
            visible(&pod.namespace),
            visible(&pod.pod),
            pod.gpus,
            visible(&pod.product),
            pod.free_gpus,
            pod.largest_piece
        );
    }
    let unlisted = fragmentation.blocked_pods as usize
        - fragmentation
            .blocked
            .len()
            .min(fragmentation.blocked_pods as usize);
    if unlisted > 0 {
        out += &format!("  ... and {unlisted} more (status.fragmentation.blockedPods)\n");
    }
    out
}

/// `  PRODUCT: F free in P pieces (largest L); 1: 16 (100 %), 8: 0 (0 %) asked`.
fn ladder(product: &ProductFragmentationEntry) -> String {
    let sizes: Vec<String> = product
        .sizes
        .iter()
        .map(|s| {
            let share = (s.usable_gpus * 100)
                .checked_div(product.free_gpus)
                .unwrap_or(0);
            let asked = if s.asked { " asked" } else { "" };
            format!("{}: {} ({share} %){asked}", s.gpus, s.usable_gpus)
        })
        .collect();
    format!(
        "  {}: {} free in {} pieces (largest {}); {}\n",
        visible(&product.product),
        product.free_gpus,
        product.pieces,
        product.largest_piece,
        sizes.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{BlockedPodEntry, SizeUseEntry};

    fn status(blocked: bool) -> GpuInventoryStatus {
        let size = |gpus, usable_gpus, asked| SizeUseEntry {
            gpus,
            usable_gpus,
            asked,
        };
        GpuInventoryStatus {
            fragmentation: Some(FragmentationStatus {
                products: vec![ProductFragmentationEntry {
                    product: "NVIDIA-H100-80GB-HBM3".into(),
                    free_gpus: 16,
                    largest_piece: 5,
                    pieces: 4,
                    sizes: vec![
                        size(1, 16, false),
                        size(2, 14, false),
                        size(4, 12, false),
                        size(8, 0, blocked),
                    ],
                    levels: vec![],
                }],
                blocked_pods: u32::from(blocked),
                blocked: blocked
                    .then(|| BlockedPodEntry {
                        reason: "FragmentedCapacity".into(),
                        namespace: "team-a".into(),
                        pod: "train\u{1b}[2J".into(),
                        gpus: 8,
                        product: "NVIDIA-H100-80GB-HBM3".into(),
                        free_gpus: 16,
                        largest_piece: 5,
                    })
                    .into_iter()
                    .collect(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_blocked_pod_is_said_with_its_products_pieces_and_a_quiet_cluster_says_nothing() {
        let text = lines(&status(true), false);
        assert_eq!(
            text,
            "\nblocked by fragmentation (1): the free GPUs would hold them, but no node has enough of them free:\n\
             \x20 team-a/train\\x1b[2J: 8 GPUs of NVIDIA-H100-80GB-HBM3; 16 free, the largest piece 5\n\
             \nfree GPUs in pieces (of the free GPUs, what pods of each size can use):\n\
             \x20 NVIDIA-H100-80GB-HBM3: 16 free in 4 pieces (largest 5); 1: 16 (100 %), 2: 14 (87 %), \
             4: 12 (75 %), 8: 0 (0 %) asked\n"
        );
        assert_eq!(lines(&status(false), false), "");
        assert!(lines(&status(false), true).contains("16 free in 4 pieces"));
        assert_eq!(lines(&GpuInventoryStatus::default(), true), "");
    }
}
