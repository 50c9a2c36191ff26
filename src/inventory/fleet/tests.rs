//! The summary on the GB200 fleet fixture (its docstring: three NVL72 racks of 18 x 4 GPUs; rack 2 split in two
//! partitions with 4 nodes half busy; rack 3 with a NotReady, a cordoned, a clique-less and two busy nodes),
//! worked out by hand; and fleets added up.

use super::*;
use crate::inventory::model::IssueReason;
use crate::inventory::test_support::{entry, inventory};
use crate::inventory::topology::tests::fleet;

#[test]
fn the_gb200_fleet_sums_to_its_racks_and_its_largest_gang_is_one_whole_rack() {
    let summary = summarize(&fleet());
    // 54 nodes x 4. Free: rack 1 all 72; rack 2 72 - 4 x 2 held = 64; rack 3: 18 nodes less NotReady,
    // cordoned and two busy ones = 14 x 4 = 56 (the clique-less node's 4 are free: it is Ready).
    // Unhealthy: the NotReady node's 4, the cordoned node's 4 (Unschedulable) and the clique-less node's 4
    // (NvlinkCliqueMissing): each an issue that loses capacity.
    assert_eq!(
        (summary.nodes, summary.gpus, summary.free, summary.unhealthy),
        (54, 216, 192, 12)
    );
    assert_eq!(summary.products.len(), 1);
    let gb200 = &summary.products[0];
    assert_eq!(
        (gb200.vendor.as_deref(), gb200.product.as_str(), gb200.nodes),
        (Some("nvidia"), "NVIDIA-GB200", 54)
    );
    assert_eq!((gb200.gpus, gb200.free, gb200.unhealthy), (216, 192, 12));
    assert_eq!(
        gb200.largest_free_gang, 72,
        "rack 1: one partition, all free"
    );
}

fn node(name: &str, product: Option<&str>, count: u64, held: u64) -> NodeInventory {
    let mut node = entry(name, true, count, &[]);
    node.product = product.map(str::to_owned);
    node.free.insert("nvidia.com/gpu".to_owned(), count - held);
    node
}

#[test]
fn without_nvlink_domains_a_node_is_the_gang_and_nodes_without_a_product_are_unknown() {
    let mut sick = node("h100-c", Some("NVIDIA-H100-80GB-HBM3"), 8, 0);
    sick.issues = entry("x", true, 0, &[IssueReason::GpusUnhealthy]).issues;
    let mut down = node("h100-d", Some("NVIDIA-H100-80GB-HBM3"), 8, 0);
    down.ready = false;
    let summary = summarize(&inventory(vec![
        node("h100-a", Some("NVIDIA-H100-80GB-HBM3"), 8, 3),
        node("h100-b", Some("NVIDIA-H100-80GB-HBM3"), 8, 0),
        sick,
        down,
        node("mystery", None, 2, 0),
    ]));
    assert_eq!(summary.products.len(), 2, "{:?}", summary.products);
    let h100 = &summary.products[0];
    assert_eq!(h100.product, "NVIDIA-H100-80GB-HBM3", "most GPUs first");
    // Free: 5 + 8 + 8 (the sick node is Ready and schedulable) + 0 (NotReady).
    assert_eq!(
        (h100.nodes, h100.gpus, h100.free, h100.unhealthy),
        (4, 32, 21, 16)
    );
    assert_eq!(h100.largest_free_gang, 8, "one node's 8");
    assert_eq!(summary.products[1].product, UNKNOWN_PRODUCT);
    assert_eq!(
        (summary.gpus, summary.free, summary.unhealthy),
        (34, 23, 16)
    );
}

fn summary(products: &[(&str, &str, u64, u64, u64, u64)]) -> ClusterSummary {
    let products: Vec<ProductSummary> = products
        .iter()
        .map(
            |&(vendor, product, gpus, free, unhealthy, gang)| ProductSummary {
                vendor: Some(vendor.to_owned()),
                product: product.to_owned(),
                nodes: 1,
                gpus,
                free,
                unhealthy,
                largest_free_gang: gang,
            },
        )
        .collect();
    ClusterSummary {
        nodes: products.len() as u32,
        gpus: products.iter().map(|p| p.gpus).sum(),
        free: products.iter().map(|p| p.free).sum(),
        unhealthy: products.iter().map(|p| p.unhealthy).sum(),
        products,
        omitted_products: 0,
    }
}

#[test]
fn a_fleet_sums_per_product_and_its_largest_gang_is_the_largest_in_one_cluster() {
    let east = summary(&[
        ("nvidia", "NVIDIA-H100-80GB-HBM3", 64, 16, 8, 8),
        ("amd", "AMD-Instinct-MI300X", 16, 16, 0, 8),
    ]);
    let west = summary(&[("nvidia", "NVIDIA-H100-80GB-HBM3", 32, 24, 0, 8)]);
    let gb = summary(&[("nvidia", "NVIDIA-GB200", 72, 72, 0, 72)]);
    let totals = add_up([("west", &west), ("east", &east), ("gb", &gb)]);
    assert_eq!(
        (totals.clusters, totals.gpus, totals.free, totals.unhealthy),
        (3, 184, 128, 8)
    );
    let names: Vec<(&str, &str)> = totals
        .products
        .iter()
        .map(|p| (p.vendor.as_deref().unwrap_or("-"), p.product.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("amd", "AMD-Instinct-MI300X"),
            ("nvidia", "NVIDIA-GB200"),
            ("nvidia", "NVIDIA-H100-80GB-HBM3")
        ]
    );
    let h100 = &totals.products[2];
    assert_eq!(
        (h100.clusters, h100.gpus, h100.free, h100.unhealthy),
        (2, 96, 40, 8)
    );
    // 8 in both: gangs do not span clusters, and the first by name among equals is named.
    assert_eq!(
        (h100.largest_free_gang, h100.largest_in.as_deref()),
        (8, Some("east"))
    );
    assert_eq!(totals.products[1].largest_in.as_deref(), Some("gb"));
    assert_eq!(add_up([]), FleetTotals::default());
}
