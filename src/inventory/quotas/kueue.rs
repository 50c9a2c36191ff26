//! Kueue's objects as the quota rules read them: ResourceFlavors, ClusterQueues, Cohorts, LocalQueues and
//! pending Workloads, each stripped to what is read (the sources make these from `kueue.x-k8s.io` v1beta2 or
//! v1beta1 objects; `sources::kueue`). Quantities are whole units: accelerator quotas are counts.

use std::collections::BTreeMap;

use crate::inventory::model::ResourceMap;
use crate::inventory::topology::gang::Toleration;

/// A `ResourceFlavor`: which nodes it stands for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Flavor {
    /// `metadata.name`.
    pub name: String,
    /// `spec.nodeLabels`: a node is the flavor's when it carries every one of them.
    pub node_labels: BTreeMap<String, String>,
    /// `spec.nodeTaints`: taints the flavor's nodes carry; a workload admitted to the flavor tolerates them.
    pub node_taints: Vec<(String, String, String)>,
    /// `spec.tolerations`: added to the pods of a workload admitted to the flavor.
    pub tolerations: Vec<Toleration>,
    /// `spec.topologyName`, when the flavor uses topology-aware scheduling.
    pub topology: Option<String>,
}

impl Flavor {
    /// What the pods of a workload admitted to this flavor tolerate: the flavor's tolerations, and its node
    /// taints (Kueue admits to the flavor only workloads that tolerate them).
    pub fn pod_tolerations(&self) -> Vec<Toleration> {
        let taints = self
            .node_taints
            .iter()
            .map(|(key, value, effect)| Toleration {
                key: Some(key.clone()),
                value: Some(value.clone()),
                effect: Some(effect.clone()),
            });
        self.tolerations.iter().cloned().chain(taints).collect()
    }
}

/// One flavor's quota of one resource in a ClusterQueue or Cohort.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceQuota {
    /// The resource (`nvidia.com/gpu`).
    pub resource: String,
    /// `nominalQuota`, whole units (a fraction is rounded down).
    pub nominal: u64,
    /// `borrowingLimit`, when set.
    pub borrowing_limit: Option<u64>,
    /// `lendingLimit`, when set.
    pub lending_limit: Option<u64>,
}

/// One flavor of a resource group, with its quotas.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlavorQuotas {
    /// The ResourceFlavor's name.
    pub flavor: String,
    /// Its quota of each covered resource.
    pub resources: Vec<ResourceQuota>,
}

/// A resource group: resources whose flavors are assigned together, and the flavors in the order Kueue tries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceGroup {
    /// `coveredResources`.
    pub covered: Vec<String>,
    /// `flavors`, in order.
    pub flavors: Vec<FlavorQuotas>,
}

/// A `ClusterQueue` (or a `Cohort`, which holds quotas of its own the same way).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaHolder {
    /// `metadata.name`.
    pub name: String,
    /// The cohort it belongs to (`spec.cohortName` in v1beta2, `spec.cohort` in v1beta1; a Cohort's
    /// `spec.parentName`).
    pub cohort: Option<String>,
    /// `spec.resourceGroups`.
    pub groups: Vec<ResourceGroup>,
}

impl QuotaHolder {
    /// The flavors that can serve `resource`, in Kueue's order: those of the group covering it.
    pub fn flavors_for<'q>(&'q self, resource: &'q str) -> impl Iterator<Item = &'q str> + 'q {
        self.groups
            .iter()
            .filter(move |g| g.covered.iter().any(|r| r == resource))
            .flat_map(|g| g.flavors.iter().map(|f| f.flavor.as_str()))
    }
}

/// A `LocalQueue`: the namespace's name for a ClusterQueue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalQueue {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.clusterQueue`.
    pub cluster_queue: String,
}

/// One PodSet of a Workload: how many pods, what each asks for, and where they must land together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSet {
    /// `name`.
    pub name: String,
    /// `count`.
    pub count: u64,
    /// The accelerator resources one pod asks for (containers' requests, or limits where no request is given;
    /// init containers' largest where above), whole units. A flat map: a pod set asks for one or two
    /// resources, and a `BTreeMap`'s leaf spent ~270 B on each of 2,000 pending workloads' (heaptrack at
    /// 65,000 nodes).
    pub per_pod: ResourceMap<u64>,
    /// `topologyRequest.required`: the node label of the level all its pods must share one domain of.
    pub required_level: Option<String>,
}

/// A Workload not admitted: no `QuotaReserved=True`, not `Finished`, not deactivated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PendingWorkload {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `spec.queueName`: a LocalQueue of its namespace.
    pub queue: String,
    /// `spec.podSets`, stripped.
    pub pod_sets: Vec<PodSet>,
}

/// Everything of Kueue the quota rules read.
#[derive(Clone, Copy, Debug, Default)]
pub struct KueueInput<'a> {
    /// Every ResourceFlavor.
    pub flavors: &'a [std::sync::Arc<Flavor>],
    /// Every ClusterQueue.
    pub cluster_queues: &'a [std::sync::Arc<QuotaHolder>],
    /// Every Cohort object (cohorts only named by ClusterQueues have no object, and no quota of their own).
    pub cohorts: &'a [std::sync::Arc<QuotaHolder>],
    /// Every LocalQueue.
    pub local_queues: &'a [std::sync::Arc<LocalQueue>],
    /// Every pending Workload.
    pub workloads: &'a [std::sync::Arc<PendingWorkload>],
}
