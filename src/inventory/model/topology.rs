//! Topology in the model: a node's place (its NVLink partition and network domains) and what the scan sums
//! up per product and level. `inventory::topology` reads the places and computes the sums.

use crate::inventory::text_map::Text;

/// The level every NVLink label is read as.
pub const NVLINK: &str = "nvlink";

/// The label GPU Feature Discovery (and, on DRA clusters, the ComputeDomain kubelet plugin) writes on a
/// multi-node NVLink node once Fabric Manager has finished: `<ClusterUUID>.<CliqueID>`. The ClusterUUID
/// names the physical NVLink domain (one NVL72 rack), the whole value one NVLink partition of it.
pub const GPU_CLIQUE: &str = "nvidia.com/gpu.clique";

/// A node's place in the topology: its NVLink partition and its network domains. The domains are the
/// labels' own interned values: a fleet shares them (a rack's 18 nodes hold one copy of its clique).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeTopology {
    /// The NVLink partition, and the label it was read from.
    pub nvlink: Option<(&'static str, Text)>,
    /// Per network level (its label key), the domain: table levels in table order, then the extra ones.
    pub network: Vec<(Text, Text)>,
}

impl NodeTopology {
    /// The node's domain at `level` (`nvlink` or a label key).
    pub fn domain(&self, level: &str) -> Option<&str> {
        if level == NVLINK {
            return self.nvlink.as_ref().map(|(_, domain)| &**domain);
        }
        self.network
            .iter()
            .find(|(key, _)| &**key == level)
            .map(|(_, domain)| &**domain)
    }

    /// Whether the node carries GPU Feature Discovery's clique label.
    pub fn has_clique(&self) -> bool {
        self.nvlink
            .as_ref()
            .is_some_and(|(label, _)| *label == GPU_CLIQUE)
    }

    /// Every (level, domain), `nvlink` first.
    pub fn places(&self) -> impl Iterator<Item = (&str, &str)> {
        let nvlink = self.nvlink.iter().map(|(_, domain)| (NVLINK, &**domain));
        nvlink.chain(self.network.iter().map(|(key, domain)| (&**key, &**domain)))
    }

    /// Every (level, domain), `nvlink` first, the domain as the interned value the node's label holds.
    pub fn interned_places(&self) -> impl Iterator<Item = (&str, &Text)> {
        let nvlink = self.nvlink.iter().map(|(_, domain)| (NVLINK, domain));
        nvlink.chain(self.network.iter().map(|(key, domain)| (&**key, domain)))
    }

    /// Whether the node has no known place.
    pub fn is_empty(&self) -> bool {
        self.nvlink.is_none() && self.network.is_empty()
    }
}

/// The physical NVLink domain of a partition read from `nvidia.com/gpu.clique` (`<ClusterUUID>.<CliqueID>`):
/// the ClusterUUID. Other labels name their domain whole.
pub fn physical_domain<'d>(label: &str, partition: &'d str) -> &'d str {
    if label == GPU_CLIQUE {
        partition
            .rsplit_once('.')
            .map_or(partition, |(uuid, _)| uuid)
    } else {
        partition
    }
}

/// How many domains of a level could start a job of `at_least` GPUs now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DomainFit {
    /// The job's size in GPUs (a multiple of the pods' size).
    pub at_least: u64,
    /// Domains whose nodes offer at least that many GPUs to pods of that size.
    pub domains: u32,
}

/// One domain and the GPUs its nodes offer to pods of the level's size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainFree {
    /// The domain (the label's value).
    pub name: String,
    /// `sum(floor(free / gpusPerPod) * gpusPerPod)` over its nodes.
    pub free_gpus: u64,
    /// Its nodes of the product.
    pub nodes: u32,
}

/// Why a domain cannot give what its size promises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DomainProblemReason {
    /// Members of an NVLink partition are NotReady, cordoned, quarantined or short of GPUs.
    NvlinkDomainDegraded,
}

impl DomainProblemReason {
    /// The reason as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            DomainProblemReason::NvlinkDomainDegraded => "NvlinkDomainDegraded",
        }
    }
}

/// What is wrong with one domain (the inventory's, not its nodes': a node is unhealthy only for its own
/// faults).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainProblem {
    /// Why.
    pub reason: DomainProblemReason,
    /// The domain.
    pub domain: String,
    /// The members at fault, by name.
    pub nodes: Vec<String>,
    /// What is lost, in words: the domain, its rack, the nodes at fault and the job that cannot start.
    pub message: String,
}

/// One product's GPUs at one topology level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TopologySummary {
    /// The product, as `products[]` names it.
    pub product: String,
    /// `nvlink` or a node label key.
    pub level: Text,
    /// The pods' size the counts assume: the product's most common GPUs per node.
    pub gpus_per_pod: u64,
    /// Domains with nodes of the product.
    pub domains: u32,
    /// The most GPUs one domain offers to pods of `gpus_per_pod`.
    pub largest_free_gpus: u64,
    /// For each job size that matters, how many domains could start it.
    pub domains_fitting: Vec<DomainFit>,
    /// For the same job sizes, the free GPUs gangs of that size could take, all at once: the level's ladder
    /// of `Fragmentation` (published there, not in `status.topology[]`).
    pub usable: Vec<super::fragmentation::SizeUse>,
    /// The domains offering the most, most first (a few).
    pub largest_domains: Vec<DomainFree>,
    /// Domains with a problem.
    pub degraded_domains: u32,
    /// The first few of their problems.
    pub problems: Vec<DomainProblem>,
}
