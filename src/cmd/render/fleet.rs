//! The fleet's tables: one row per cluster (its summary, or why it could not be read), then the fleet's
//! totals per vendor and product. The same for the plugin across contexts (summaries of live scans) and for
//! the hub's `fleet` (summaries read from ClusterProfiles), so the two read alike.

use super::columns::{aligned, columns};
use crate::inventory::fleet::add_up;
use crate::inventory::model::{ClusterSummary, FleetProduct};

/// One cluster of the fleet: its name and its summary, or why there is none.
pub(crate) struct ClusterRow<'a> {
    /// The context, or the ClusterProfile's name.
    pub(crate) name: &'a str,
    /// Its summary, or the error in words.
    pub(crate) summary: Result<&'a ClusterSummary, &'a str>,
}

/// The clusters' table, then the fleet's totals; unless `headers`, only the clusters' rows.
pub(crate) fn fleet(rows: &[ClusterRow<'_>], headers: bool) -> String {
    let clusters: Vec<Vec<String>> = rows.iter().map(cluster_row).collect();
    let header = ["CLUSTER", "NODES", "GPUS", "FREE", "UNHEALTHY", "PRODUCTS"];
    if !headers {
        return aligned(&header, &clusters, false);
    }
    let mut out = columns(&header, &clusters);
    let read: Vec<(&str, &ClusterSummary)> = rows
        .iter()
        .filter_map(|r| r.summary.ok().map(|s| (r.name, s)))
        .collect();
    let totals = add_up(read);
    let failed = rows.len() - totals.clusters as usize;
    out += &format!(
        "\nFLEET: {} of {} cluster(s) read{}: {} GPU nodes, {} GPUs, {} free, {} unhealthy\n",
        totals.clusters,
        rows.len(),
        if failed > 0 {
            format!(" ({failed} could not be: see above)")
        } else {
            String::new()
        },
        totals.nodes,
        totals.gpus,
        totals.free,
        totals.unhealthy
    );
    if totals.products.is_empty() {
        return out;
    }
    out += &products_table(&totals.products);
    out
}

/// One cluster's row: its counts and products, or the error that kept it from being read.
fn cluster_row(row: &ClusterRow<'_>) -> Vec<String> {
    match row.summary {
        Ok(summary) => vec![
            row.name.to_owned(),
            summary.nodes.to_string(),
            summary.gpus.to_string(),
            summary.free.to_string(),
            summary.unhealthy.to_string(),
            products(summary),
        ],
        Err(error) => vec![
            row.name.to_owned(),
            "-".into(),
            "-".into(),
            "-".into(),
            "-".into(),
            format!("error: {error}"),
        ],
    }
}

/// The fleet's products: per vendor and product, the clusters, the sums and the largest free gang.
fn products_table(products: &[FleetProduct]) -> String {
    let rows: Vec<Vec<String>> = products
        .iter()
        .map(|p| {
            vec![
                p.vendor.clone().unwrap_or_else(|| "-".into()),
                p.product.clone(),
                p.clusters.to_string(),
                p.gpus.to_string(),
                p.free.to_string(),
                p.unhealthy.to_string(),
                match &p.largest_in {
                    Some(cluster) => format!("{} ({cluster})", p.largest_free_gang),
                    None => "0".into(),
                },
            ]
        })
        .collect();
    columns(
        &[
            "VENDOR",
            "PRODUCT",
            "CLUSTERS",
            "GPUS",
            "FREE",
            "UNHEALTHY",
            "LARGEST-FREE-GANG",
        ],
        &rows,
    )
}

/// A cluster's products in one cell: `NVIDIA-H100-80GB-HBM3 16 (8 free), ...`, and how many were left out.
fn products(summary: &ClusterSummary) -> String {
    let mut cell: Vec<String> = summary
        .products
        .iter()
        .map(|p| format!("{} {} ({} free)", p.product, p.gpus, p.free))
        .collect();
    if summary.omitted_products > 0 {
        cell.push(format!("{} more", summary.omitted_products));
    }
    if cell.is_empty() {
        "-".into()
    } else {
        cell.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::ProductSummary;

    fn summary(product: &str, gpus: u64, free: u64, gang: u64) -> ClusterSummary {
        ClusterSummary {
            nodes: 2,
            gpus,
            free,
            unhealthy: 0,
            products: vec![ProductSummary {
                vendor: Some("nvidia".into()),
                product: product.into(),
                nodes: 2,
                gpus,
                free,
                unhealthy: 0,
                largest_free_gang: gang,
            }],
            omitted_products: 0,
        }
    }

    #[test]
    fn clusters_then_the_fleet_and_an_unreadable_cluster_is_named_with_its_error() {
        let a = summary("NVIDIA-H100-80GB-HBM3", 16, 12, 8);
        let b = summary("NVIDIA-H100-80GB-HBM3", 8, 2, 2);
        let text = fleet(
            &[
                ClusterRow {
                    name: "lab-a",
                    summary: Ok(&a),
                },
                ClusterRow {
                    name: "lab-b",
                    summary: Ok(&b),
                },
                ClusterRow {
                    name: "gone",
                    summary: Err("connection refused\u{1b}[2J"),
                },
            ],
            true,
        );
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("CLUSTER  NODES  GPUS  FREE  UNHEALTHY  PRODUCTS"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("lab-a")
                && lines[1].ends_with("NVIDIA-H100-80GB-HBM3 16 (12 free)"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("gone") && lines[3].contains("error: connection refused"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "escaped: {text:?}");
        assert!(text.contains("FLEET: 2 of 3 cluster(s) read (1 could not be: see above): 4 GPU nodes, 24 GPUs, 14 free"), "{text}");
        let total = lines.iter().find(|l| l.starts_with("nvidia")).expect(&text);
        let cells: Vec<&str> = total.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "nvidia",
                "NVIDIA-H100-80GB-HBM3",
                "2",
                "24",
                "14",
                "0",
                "8",
                "(lab-a)"
            ]
        );
    }
}
