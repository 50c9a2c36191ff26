//! Fragmentation in the model: how much of a product's free GPUs a request of each size can use, and the
//! pending pods that wait only because the free GPUs are in pieces. `inventory::fragmentation` computes it.

/// What a request of one size can use of a product's free GPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeUse {
    /// The request: GPUs of one pod (on one node), or of one gang (in one domain of a level).
    pub gpus: u64,
    /// The free GPUs requests of that size could take, all at once: `floor(piece / gpus) * gpus` summed over
    /// the pieces (a node's free GPUs, or a domain's offer). `usable / free` is the share usable.
    pub usable_gpus: u64,
    /// Whether a pending pod or Workload asks for this size (the ladder always holds what is asked for).
    pub asked: bool,
}

/// One product's free GPUs at one level, by request size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelFragmentation {
    /// `nvlink` or a network level's label key.
    pub level: String,
    /// The gang's pods' size the offers assume (the product's most common GPUs per node).
    pub gpus_per_pod: u64,
    /// The most GPUs one domain offers: the largest gang that starts now.
    pub largest_piece: u64,
    /// Per gang size (whole pods), what gangs of that size could use.
    pub sizes: Vec<SizeUse>,
}

/// One product's free GPUs, and how they are spread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProductFragmentation {
    /// The product, as `products[]` names it.
    pub product: String,
    /// Free whole GPUs a pod could get now (Ready, schedulable, untainted nodes).
    pub free_gpus: u64,
    /// The most free GPUs on one node: the largest one-node request that starts now.
    pub largest_piece: u64,
    /// Nodes holding some free GPUs.
    pub pieces: u32,
    /// Per one-node request size (1, 2, 4, 8 and every size asked for), what it could use.
    pub sizes: Vec<SizeUse>,
    /// The same per topology level where the product's nodes have one (gang sizes).
    pub levels: Vec<LevelFragmentation>,
}

/// A pending GPU pod that fits in the free GPUs of its product in total, but on no node: blocked only by
/// fragmentation (`FragmentedCapacity`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockedPod {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// The whole GPUs it asks for.
    pub gpus: u64,
    /// The product whose free GPUs would hold it (the one with the most free, of those it may run on).
    pub product: String,
    /// That product's free GPUs on the nodes the pod may run on.
    pub free_gpus: u64,
    /// The most free GPUs on one of those nodes.
    pub largest_piece: u64,
}

/// The reason a blocked pod is reported with.
pub const FRAGMENTED_CAPACITY: &str = "FragmentedCapacity";

/// The inventory's fragmentation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fragmentation {
    /// Per product, by name.
    pub products: Vec<ProductFragmentation>,
    /// How many pending pods are blocked only by fragmentation.
    pub blocked_pods: u32,
    /// The first of them (see `fragmentation::BLOCKED_LISTED`), the largest requests first.
    pub blocked: Vec<BlockedPod>,
}
