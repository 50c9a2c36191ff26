//! `status.topology[]`: per product and level, what the domains offer to a gang of the product's pods, how
//! many could start a job of each size that matters, and what is wrong with the NVLink partitions. Bounded
//! whatever the fleet: a few numbers per (product, level), sizes that double, a few domains and problems.

use std::sync::Arc;

use super::domains::{DomainTally, LevelTally, tally};
use super::gang::{self, ProductNodes};
use super::nvlink_health;
use crate::inventory::model::{
    DomainFit, DomainFree, NVLINK, NodeInventory, SizeUse, TopologySummary,
};

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

/// The summaries of every product and level, products by name (`products`: `gang::product_groups` of
/// `nodes`).
pub fn summarize(
    nodes: &[Arc<NodeInventory>],
    products: &[(String, Vec<usize>)],
) -> Vec<TopologySummary> {
    let mut summaries = Vec::new();
    for (name, at) in products {
        let product = ProductNodes {
            name: name.clone(),
            nodes: at.iter().map(|i| nodes[*i].as_ref()).collect(),
        };
        summaries.extend(product_summaries(&product));
    }
    summaries
}

fn product_summaries(product: &ProductNodes<'_>) -> Vec<TopologySummary> {
    let Some(k) = gang::gpus_per_node(product.nodes.iter().copied()) else {
        return Vec::new();
    };
    tally(&product.nodes, k)
        .into_iter()
        .map(|level| level_summary(&product.name, level, k))
        .collect()
}

fn level_summary(product: &str, level: LevelTally<'_>, k: u64) -> TopologySummary {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut offered: Vec<u64> = level.domains.iter().map(|d| d.offered).collect();
    offered.sort_unstable();
    let largest_size = level.domains.iter().map(|d| d.size).max().unwrap_or(0);
    let sizes: Vec<u64> = pod_counts_up_to(largest_size / k)
        .into_iter()
        .map(|pods| pods * k)
        .collect();
    let domains_fitting = sizes
        .iter()
        .map(|&at_least| DomainFit {
            at_least,
            domains: count(offered.len() - offered.partition_point(|o| *o < at_least)),
        })
        .collect();
    // What gangs of each size could take of the domains' offers: fragmentation's ladder at this level.
    let usable = sizes
        .iter()
        .map(|&gpus| SizeUse {
            gpus,
            usable_gpus: offered
                .iter()
                .map(|o| o / gpus * gpus)
                .fold(0, u64::saturating_add),
            asked: false,
        })
        .collect();
    // The few that offer the most: selected, then only they are sorted (a level of hosts has a domain a node).
    let mut ranked: Vec<&DomainTally<'_>> = level.domains.iter().collect();
    let most_first = |a: &&DomainTally<'_>, b: &&DomainTally<'_>| {
        b.offered.cmp(&a.offered).then(a.name.cmp(b.name))
    };
    if ranked.len() > LARGEST_DOMAINS {
        ranked.select_nth_unstable_by(LARGEST_DOMAINS, most_first);
        ranked.truncate(LARGEST_DOMAINS);
    }
    ranked.sort_by(most_first);
    let largest: Vec<DomainFree> = ranked
        .iter()
        .map(|d| DomainFree {
            name: d.name.to_owned(),
            free_gpus: d.offered,
            nodes: d.nodes,
        })
        .collect();
    let (degraded_domains, problems) = if level.level == NVLINK {
        nvlink_health::domain_problems(&level.domains, k, PROBLEMS_LISTED)
    } else {
        (0, Vec::new())
    };
    TopologySummary {
        product: product.to_owned(),
        level: level.level.into(),
        gpus_per_pod: k,
        domains: count(level.domains.len()),
        largest_free_gpus: offered.last().copied().unwrap_or(0),
        domains_fitting,
        usable,
        largest_domains: largest,
        degraded_domains,
        problems,
    }
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
