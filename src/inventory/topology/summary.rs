//! `status.topology[]`: per product and level, what the domains offer to a gang of the product's pods, how
//! many could start a job of each size that matters, and what is wrong with the NVLink partitions. Bounded
//! whatever the fleet: a few numbers per (product, level), sizes that double, a few domains and problems.

use std::sync::Arc;

use super::domains::{domains_at, levels_of};
use super::gang::{self, ProductNodes};
use super::nvlink_health;
use crate::inventory::model::{DomainFit, DomainFree, NVLINK, NodeInventory, TopologySummary};

/// How many of the largest domains a summary lists.
pub const LARGEST_DOMAINS: usize = 5;

/// How many domain problems a summary lists (all are counted).
pub const PROBLEMS_LISTED: usize = 8;

/// The job sizes, in pods, that `domainsFitting` answers for: powers of two, and 18 and its doublings
/// (an NVL72 rack is 18 nodes of 4 GPUs), up to the largest domain.
pub fn pod_counts_up_to(pods: u64) -> Vec<u64> {
    let mut counts: Vec<u64> = Vec::new();
    let mut power = 1u64;
    while power <= pods {
        counts.push(power);
        power = power.saturating_mul(2);
    }
    let mut racks = 18u64;
    while racks <= pods {
        counts.push(racks);
        racks = racks.saturating_mul(2);
    }
    counts.sort_unstable();
    counts.dedup();
    counts
}

/// The summaries of every product and level, products by name.
pub fn summarize(nodes: &[Arc<NodeInventory>]) -> Vec<TopologySummary> {
    let mut summaries = Vec::new();
    for product in gang::by_product(nodes) {
        summaries.extend(product_summaries(&product));
    }
    summaries
}

fn product_summaries(product: &ProductNodes<'_>) -> Vec<TopologySummary> {
    let Some(k) = gang::gpus_per_node(product.nodes.iter().copied()) else {
        return Vec::new();
    };
    levels_of(&product.nodes)
        .into_iter()
        .map(|level| {
            let domains = domains_at(&product.nodes, level, k);
            let largest_size = domains.values().map(|d| d.size).max().unwrap_or(0);
            let domains_fitting = pod_counts_up_to(largest_size / k)
                .into_iter()
                .map(|pods| {
                    let at_least = pods * k;
                    let fitting = domains.values().filter(|d| d.offered >= at_least).count();
                    DomainFit {
                        at_least,
                        domains: u32::try_from(fitting).unwrap_or(u32::MAX),
                    }
                })
                .collect();
            let mut largest: Vec<DomainFree> = domains
                .iter()
                .map(|(name, d)| DomainFree {
                    name: (*name).to_owned(),
                    free_gpus: d.offered,
                    nodes: u32::try_from(d.nodes.len()).unwrap_or(u32::MAX),
                })
                .collect();
            largest.sort_by(|a, b| b.free_gpus.cmp(&a.free_gpus).then(a.name.cmp(&b.name)));
            let largest_free_gpus = largest.first().map_or(0, |d| d.free_gpus);
            largest.truncate(LARGEST_DOMAINS);
            let mut problems = if level == NVLINK {
                nvlink_health::domain_problems(&domains, k)
            } else {
                Vec::new()
            };
            let degraded_domains = u32::try_from(problems.len()).unwrap_or(u32::MAX);
            problems.truncate(PROBLEMS_LISTED);
            TopologySummary {
                product: product.name.clone(),
                level,
                gpus_per_pod: k,
                domains: u32::try_from(domains.len()).unwrap_or(u32::MAX),
                largest_free_gpus,
                domains_fitting,
                largest_domains: largest,
                degraded_domains,
                problems,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_sizes_double_and_include_racks_of_18_up_to_the_largest_domain() {
        assert_eq!(pod_counts_up_to(18), [1, 2, 4, 8, 16, 18]);
        assert_eq!(pod_counts_up_to(40), [1, 2, 4, 8, 16, 18, 32, 36]);
        assert_eq!(pod_counts_up_to(0), Vec::<u64>::new());
        assert!(
            pod_counts_up_to(65_000 * 8).len() < 40,
            "bounded whatever the fleet"
        );
    }
}
