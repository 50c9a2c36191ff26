//! Every domain of one level, per product: what `--group-by <level>` lists (`scan` and the kubectl plugin).
//! Each domain's GPUs, what it offers to a gang of the product's pods (the gang rule with the product's GPUs
//! per node, as `status.topology[]` counts it) and what is wrong with it. One row per domain, so unbounded:
//! for tables, never for the status (which keeps the few largest, `summary`).

use std::sync::Arc;

use super::domains::{DomainTally, domain_of, domains_at};
use super::gang;
use super::nvlink_health;
use crate::inventory::model::{DomainProblem, IssueReason, NVLINK, NodeInventory};

/// One domain of one product at the level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainRow {
    /// The product, as `products[]` names it.
    pub product: String,
    /// The domain (the label's value; the node's name at the hostname level).
    pub name: String,
    /// Its nodes of the product.
    pub nodes: u32,
    /// Their GPUs (each node's count, whatever its state).
    pub gpus: u64,
    /// What they offer to pods of `gpus_per_pod`: `sum(floor(free / K) * K)`.
    pub free_gpus: u64,
    /// The pods' size the offer assumes (K): the product's most common GPUs per node; 0 when no node of the
    /// product counts a GPU.
    pub gpus_per_pod: u64,
    /// The domain's own problems (`NvlinkDomainDegraded`, at the `nvlink` level).
    pub problems: Vec<DomainProblem>,
    /// The reasons of its nodes' issues, each once, in the order of `IssueReason`.
    pub node_issues: Vec<IssueReason>,
}

/// Nodes of one product with no place at the level (no such label, an empty value).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unplaced {
    /// The product.
    pub product: String,
    /// The nodes, by name.
    pub nodes: Vec<String>,
}

/// The domains of one level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelDomains {
    /// `nvlink`, a node label key, or `kubernetes.io/hostname`.
    pub level: String,
    /// Products by name, each one's domains by name.
    pub rows: Vec<DomainRow>,
    /// Per product, the nodes that are in no domain of the level.
    pub unplaced: Vec<Unplaced>,
}

/// The domains of `level` among the GPU nodes (nodes no source names the product of are left out, as the
/// summaries leave them out).
pub fn level_domains(nodes: &[Arc<NodeInventory>], level: &str) -> LevelDomains {
    let mut out = LevelDomains {
        level: level.to_owned(),
        ..LevelDomains::default()
    };
    for product in gang::by_product(nodes) {
        let k = gang::gpus_per_node(product.nodes.iter().copied()).unwrap_or(0);
        let domains = domains_at(&product.nodes, level, k, &[]);
        let problems = if level == NVLINK {
            // The summary's own counts of a domain, so that its problems are worded as status.topology's.
            let tallies: Vec<DomainTally<'_>> = domains
                .iter()
                .map(|(name, d)| DomainTally {
                    name,
                    nodes: u32::try_from(d.nodes.len()).unwrap_or(u32::MAX),
                    offered: d.offered,
                    size: d.size,
                    members: d.nodes.clone(),
                })
                .collect();
            // Every row shows its own problem: all of them are worded here.
            nvlink_health::domain_problems(&tallies, k, usize::MAX).1
        } else {
            Vec::new()
        };
        for (name, domain) in &domains {
            let mut node_issues: Vec<IssueReason> = domain
                .nodes
                .iter()
                .flat_map(|n| n.issues.iter().map(|i| i.reason))
                .collect();
            node_issues.sort_unstable();
            node_issues.dedup();
            out.rows.push(DomainRow {
                product: product.name.clone(),
                name: (*name).to_owned(),
                nodes: u32::try_from(domain.nodes.len()).unwrap_or(u32::MAX),
                gpus: domain
                    .nodes
                    .iter()
                    .fold(0u64, |sum, n| sum.saturating_add(n.count)),
                free_gpus: domain.offered,
                gpus_per_pod: k,
                problems: problems
                    .iter()
                    .filter(|p| p.domain == *name)
                    .cloned()
                    .collect(),
                node_issues,
            });
        }
        let unplaced: Vec<String> = product
            .nodes
            .iter()
            .filter(|n| domain_of(n, level).is_none())
            .map(|n| n.name.clone())
            .collect();
        if !unplaced.is_empty() {
            out.unplaced.push(Unplaced {
                product: product.name.clone(),
                nodes: unplaced,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::DomainProblemReason;
    use crate::inventory::topology::tests::fleet;

    const SUBBLOCK: &str = "cloud.google.com/gce-topology-subblock";

    fn row<'a>(domains: &'a LevelDomains, name: &str) -> &'a DomainRow {
        domains
            .rows
            .iter()
            .find(|r| r.name == name)
            .unwrap_or_else(|| panic!("no row {name} in {:?}", domains.rows))
    }

    #[test]
    fn every_nvlink_partition_is_a_row_with_what_it_offers_and_its_problems() {
        let inventory = fleet();
        let nvlink = level_domains(&inventory.nodes, NVLINK);
        let names: Vec<&str> = nvlink.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1",
                "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.2",
                "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766",
                "a2221497-dbce-4964-8826-684c3694fd45.2478",
            ]
        );
        // Rack 2's first partition: nodes 1-4 hold 2 of 4 GPUs, so they offer no pod of 4.
        let half_busy = row(&nvlink, "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1");
        assert_eq!(
            (half_busy.nodes, half_busy.gpus, half_busy.free_gpus),
            (9, 36, 20)
        );
        assert!(half_busy.problems.is_empty() && half_busy.node_issues.is_empty());
        // Rack 3 without its clique-less node: NotReady, cordoned and two busy nodes offer nothing.
        let rack_3 = row(&nvlink, "a2221497-dbce-4964-8826-684c3694fd45.2478");
        assert_eq!((rack_3.nodes, rack_3.gpus, rack_3.free_gpus), (17, 68, 52));
        assert_eq!(rack_3.gpus_per_pod, 4);
        assert_eq!(rack_3.problems.len(), 1);
        assert_eq!(
            rack_3.problems[0].reason,
            DomainProblemReason::NvlinkDomainDegraded
        );
        assert_eq!(rack_3.problems[0].nodes, ["gb200-r3-n01", "gb200-r3-n02"]);
        assert_eq!(
            rack_3.node_issues,
            [IssueReason::NotReady, IssueReason::Unschedulable]
        );
        // The summary's largest domains are the same numbers.
        let summary = inventory
            .topology
            .iter()
            .find(|s| s.level == NVLINK)
            .unwrap();
        for largest in &summary.largest_domains {
            assert_eq!(row(&nvlink, &largest.name).free_gpus, largest.free_gpus);
            assert_eq!(row(&nvlink, &largest.name).nodes, largest.nodes);
        }
        assert_eq!(
            nvlink.unplaced,
            [Unplaced {
                product: "NVIDIA-GB200".to_owned(),
                nodes: vec!["gb200-r3-n03".to_owned()],
            }]
        );
    }

    #[test]
    fn a_network_level_counts_every_node_and_has_no_domain_problems() {
        let inventory = fleet();
        let subblocks = level_domains(&inventory.nodes, SUBBLOCK);
        assert_eq!(subblocks.rows.len(), 3);
        let rack_3 = row(&subblocks, "subblock-3");
        assert_eq!((rack_3.nodes, rack_3.gpus, rack_3.free_gpus), (18, 72, 56));
        assert!(rack_3.problems.is_empty());
        assert_eq!(
            rack_3.node_issues,
            [
                IssueReason::NotReady,
                IssueReason::Unschedulable,
                IssueReason::NvlinkCliqueMissing
            ]
        );
        assert!(subblocks.unplaced.is_empty());
        let nothing = level_domains(&inventory.nodes, "example.com/rack");
        assert!(nothing.rows.is_empty());
        assert_eq!(nothing.unplaced[0].nodes.len(), 54, "no node has the label");
    }
}
