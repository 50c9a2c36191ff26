//! What the nodes add up to: per resource, per product and per namespace.

use std::collections::BTreeMap;

/// One resource summed over the nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceTotals {
    /// The resource.
    pub name: String,
    /// Sum of the nodes' capacity.
    pub capacity: u64,
    /// Sum of the nodes' allocatable.
    pub allocatable: u64,
    /// Sum of what is held.
    pub allocated: u64,
    /// Sum of what is free.
    pub free: u64,
}

/// How many nodes could start a job of `at_least` whole GPUs now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobFit {
    /// The job's size in GPUs.
    pub at_least: u32,
    /// Ready, schedulable nodes with at least that many whole GPUs of the product free.
    pub nodes: u32,
}

/// The GPUs of one model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProductTotals {
    /// The model as the nodes name it.
    pub name: String,
    /// Who makes it, when known.
    pub vendor: Option<&'static str>,
    /// GPU nodes of this model.
    pub nodes: u32,
    /// Sum of their `count`.
    pub gpus: u64,
    /// Whole GPUs of this model free now.
    pub free_gpus: u64,
    /// Where a job of 1, 2, 4 or 8 whole GPUs of this model can start.
    pub nodes_with_free_gpus: Vec<JobFit>,
    /// Its physical GPUs whole free, partly free and fully held (`allocation::occupancy`).
    pub occupancy: super::shared_gpu::Occupancy,
}

/// What one namespace's pods and claims hold and wait for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NamespaceTotals {
    /// The namespace.
    pub name: String,
    /// Per resource, what it holds on the nodes.
    pub allocated: BTreeMap<String, u64>,
    /// Its GPU pods the scheduler could not place.
    pub pending_pods: u32,
    /// Per resource (or DeviceClass), what those pending pods ask for.
    pub pending: BTreeMap<String, u64>,
    /// What its holdings are of physical GPUs, in thousandths (`Holding::equivalent`, summed); `None` when
    /// no holding of it has an equivalent.
    pub gpu_equivalents_milli: Option<u64>,
    /// The same by the product of the nodes they are held on (`unknown` where no source names it), for the
    /// chargeback gauge; empty when `gpu_equivalents_milli` is `None`.
    pub gpu_equivalents_by_product: BTreeMap<String, u64>,
}
