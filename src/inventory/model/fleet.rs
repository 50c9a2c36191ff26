//! One cluster's GPUs in a few numbers, and a fleet of clusters added up: what the `ClusterProperty` carries
//! to a hub, what `kubectl gpu-inventory --all-contexts` and `fleet` print.

/// One cluster's GPUs: its totals, and per vendor and product.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSummary {
    /// GPU nodes.
    pub nodes: u32,
    /// GPUs (the nodes' `count`).
    pub gpus: u64,
    /// Whole GPUs free now on Ready, schedulable nodes.
    pub free: u64,
    /// GPUs on nodes that are not Ready or carry a `Degraded` issue (a cordon is one).
    pub unhealthy: u64,
    /// Per vendor and product, most GPUs first.
    pub products: Vec<ProductSummary>,
    /// Products left out of `products` (a summary with a size bound); their GPUs are in the totals.
    pub omitted_products: u32,
}

/// One product's GPUs in one cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProductSummary {
    /// Who makes it, when known (`nvidia`, `amd`, ...).
    pub vendor: Option<String>,
    /// The model as the nodes name it; `unknown` for GPU nodes that name none.
    pub product: String,
    /// GPU nodes of the product.
    pub nodes: u32,
    /// Its GPUs.
    pub gpus: u64,
    /// Its whole GPUs free now.
    pub free: u64,
    /// Its GPUs on nodes that are not Ready or carry a `Degraded` issue.
    pub unhealthy: u64,
    /// The most free GPUs of the product one job reaches over NVLink: one NVLink domain's (a GB200 rack's
    /// partition) as the gang rule counts it, or one node's where the nodes name no NVLink domain.
    pub largest_free_gang: u64,
}

/// One product across the clusters of a fleet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetProduct {
    /// Who makes it, when known.
    pub vendor: Option<String>,
    /// The model.
    pub product: String,
    /// Clusters with GPUs of the product.
    pub clusters: u32,
    /// Its GPUs, summed.
    pub gpus: u64,
    /// Its free GPUs, summed.
    pub free: u64,
    /// Its unhealthy GPUs, summed.
    pub unhealthy: u64,
    /// The largest free gang of the product in any one cluster (gangs do not span clusters).
    pub largest_free_gang: u64,
    /// The cluster that offers it (the first by name among equals); `None` when no cluster has a free GPU of it.
    pub largest_in: Option<String>,
}

/// A fleet: every cluster's totals summed, and per product.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetTotals {
    /// Clusters summed (those read; the ones that could not be read are not).
    pub clusters: u32,
    /// GPU nodes.
    pub nodes: u32,
    /// GPUs.
    pub gpus: u64,
    /// Free GPUs.
    pub free: u64,
    /// Unhealthy GPUs.
    pub unhealthy: u64,
    /// Per vendor and product, by vendor then product.
    pub products: Vec<FleetProduct>,
}
