//! Topology on the wire: a node's places (`GpuNode.status.topology`, level -> domain) and the inventory's
//! `status.topology[]`; and both read back.

use std::collections::BTreeMap;

use crate::crd::{DomainFreeGpus, DomainProblemEntry, DomainsFitting, TopologyLevelSummary};
use crate::inventory::model::{
    DomainFit, DomainFree, DomainProblem, DomainProblemReason, NVLINK, NodeTopology,
    TopologySummary,
};

/// A node's places, level -> domain.
pub fn places(topology: &NodeTopology) -> BTreeMap<String, String> {
    topology
        .places()
        .map(|(level, domain)| (level.to_owned(), domain.to_owned()))
        .collect()
}

/// A node's places read back (the NVLink label it came from is not on the wire: `nvlink` stands for it).
pub fn read_places(places: &BTreeMap<String, String>) -> NodeTopology {
    let mut topology = NodeTopology::default();
    for (level, domain) in places {
        if level == NVLINK {
            topology.nvlink = Some((NVLINK, domain.as_str().into()));
        } else {
            topology
                .network
                .push((level.as_str().into(), domain.as_str().into()));
        }
    }
    topology
}

/// One product's level.
pub fn summary(summary: &TopologySummary) -> TopologyLevelSummary {
    TopologyLevelSummary {
        product: summary.product.clone(),
        level: summary.level.to_string(),
        gpus_per_pod: summary.gpus_per_pod,
        domains: summary.domains,
        largest_free_gpus: summary.largest_free_gpus,
        domains_fitting: summary
            .domains_fitting
            .iter()
            .map(|f| DomainsFitting {
                at_least: f.at_least,
                domains: f.domains,
            })
            .collect(),
        largest_domains: summary
            .largest_domains
            .iter()
            .map(|d| DomainFreeGpus {
                name: d.name.clone(),
                free_gpus: d.free_gpus,
                nodes: d.nodes,
            })
            .collect(),
        degraded_domains: summary.degraded_domains,
        problems: summary
            .problems
            .iter()
            .map(|p| DomainProblemEntry {
                reason: p.reason.as_str().to_owned(),
                domain: p.domain.clone(),
                nodes: p.nodes.clone(),
                message: p.message.clone(),
            })
            .collect(),
    }
}

/// A published level read back; `None` for a level this process cannot keep. Problems of a reason this
/// version does not know are left out.
pub fn read_summary(wire: &TopologyLevelSummary) -> Option<TopologySummary> {
    Some(TopologySummary {
        product: wire.product.clone(),
        level: wire.level.as_str().into(),
        gpus_per_pod: wire.gpus_per_pod,
        domains: wire.domains,
        largest_free_gpus: wire.largest_free_gpus,
        domains_fitting: wire
            .domains_fitting
            .iter()
            .map(|f| DomainFit {
                at_least: f.at_least,
                domains: f.domains,
            })
            .collect(),
        // The level's ladder is published in `status.fragmentation`, and read back from there.
        usable: Vec::new(),
        largest_domains: wire
            .largest_domains
            .iter()
            .map(|d| DomainFree {
                name: d.name.clone(),
                free_gpus: d.free_gpus,
                nodes: d.nodes,
            })
            .collect(),
        degraded_domains: wire.degraded_domains,
        problems: wire
            .problems
            .iter()
            .filter(|p| p.reason == DomainProblemReason::NvlinkDomainDegraded.as_str())
            .map(|p| DomainProblem {
                reason: DomainProblemReason::NvlinkDomainDegraded,
                domain: p.domain.clone(),
                nodes: p.nodes.clone(),
                message: p.message.clone(),
            })
            .collect(),
    })
}
