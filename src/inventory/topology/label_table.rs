//! The topology labels the operator knows, one row per label: who writes it, what one value groups, and
//! where its level sits. Like the vendor tables, a table and not code: a new provider is a new row.
//!
//! Sources (docs/topology.md has the links): NVIDIA GPU Feature Discovery and the DRA driver's ComputeDomain
//! plugin (`nvidia.com/gpu.clique`), NVIDIA Topograph's `docs/reference/node-labels.md`, CoreWeave, AWS
//! (EKS and SageMaker HyperPod), Google (GKE), Oracle (OKE), Nebius, and Kubernetes' own zone label.

/// What one value of a topology label groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelRole {
    /// One NVLink partition (or, where the provider knows no partitions, one NVLink domain): the GPUs of
    /// its nodes talk over NVLink. All such labels are read as the one level `nvlink`.
    Nvlink,
    /// One network domain; the label's key names the level.
    Network,
}

/// One known topology label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TopologyLabel {
    /// The node label key.
    pub key: &'static str,
    /// Who writes it.
    pub writer: &'static str,
    /// What a value groups.
    pub role: LabelRole,
    /// Its width within its writer's hierarchy: 0 is the widest. Network levels of different writers are
    /// ordered by how many domains they have on the cluster (see `levels`), not by this.
    pub depth: u8,
}

const fn nvlink(key: &'static str, writer: &'static str) -> TopologyLabel {
    TopologyLabel {
        key,
        writer,
        role: LabelRole::Nvlink,
        depth: 0,
    }
}

const fn network(key: &'static str, writer: &'static str, depth: u8) -> TopologyLabel {
    TopologyLabel {
        key,
        writer,
        role: LabelRole::Network,
        depth,
    }
}

pub use crate::inventory::model::GPU_CLIQUE;

/// Every known label. NVLink labels first, in the order they are preferred when a node carries several
/// (the partition before a domain-wide identifier); network labels widest first within each writer.
pub const TOPOLOGY_LABELS: &[TopologyLabel] = &[
    nvlink(
        GPU_CLIQUE,
        "NVIDIA GPU Feature Discovery / DRA ComputeDomain plugin",
    ),
    nvlink("ds.coreweave.com/nvlink.domain", "CoreWeave"),
    nvlink(
        "topology.k8s.aws/ultraserver-id",
        "AWS (SageMaker HyperPod)",
    ),
    nvlink(
        "network.topology.nvidia.com/accelerator",
        "NVIDIA Topograph",
    ),
    nvlink("accelerator.topograph.run/domain", "NVIDIA Topograph"),
    nvlink("topology.nebius.com/nvl-instance-group-id", "Nebius"),
    network(
        "topology.kubernetes.io/zone",
        "Kubernetes (cloud provider)",
        0,
    ),
    network("cloud.google.com/gce-topology-block", "Google (GKE)", 1),
    network("cloud.google.com/gce-topology-subblock", "Google (GKE)", 2),
    network("cloud.google.com/gce-topology-host", "Google (GKE)", 3),
    network("topology.k8s.aws/capacity-block-id", "AWS (EKS)", 1),
    network("topology.k8s.aws/network-node-layer-1", "AWS (EKS)", 2),
    network("topology.k8s.aws/network-node-layer-2", "AWS (EKS)", 3),
    network("topology.k8s.aws/network-node-layer-3", "AWS (EKS)", 4),
    network("oci.oraclecloud.com/rdma.hpc_island_id", "Oracle (OKE)", 1),
    network(
        "oci.oraclecloud.com/host.network_block_id",
        "Oracle (OKE)",
        2,
    ),
    network(
        "oci.oraclecloud.com/rdma.network_block_id",
        "Oracle (OKE)",
        2,
    ),
    network("oci.oraclecloud.com/rdma.local_block_id", "Oracle (OKE)", 3),
    network("oci.oraclecloud.com/host.rack_id", "Oracle (OKE)", 4),
    network("topology.nebius.com/gpu-cluster-id", "Nebius", 1),
    network("topology.nebius.com/tier-1", "Nebius", 2),
    network("topology.nebius.com/tier-2", "Nebius", 3),
    network("topology.nebius.com/tier-3", "Nebius", 4),
    network("network.topology.nvidia.com/core", "NVIDIA Topograph", 1),
    network("network.topology.nvidia.com/spine", "NVIDIA Topograph", 2),
    network("network.topology.nvidia.com/leaf", "NVIDIA Topograph", 3),
    network("fabric.topograph.run/tier-3", "NVIDIA Topograph", 1),
    network("fabric.topograph.run/tier-2", "NVIDIA Topograph", 2),
    network("fabric.topograph.run/tier-1", "NVIDIA Topograph", 3),
    network(
        "topology.kubernetes.io/network-level-3",
        "NVIDIA Topograph (early)",
        1,
    ),
    network(
        "topology.kubernetes.io/network-level-2",
        "NVIDIA Topograph (early)",
        2,
    ),
    network(
        "topology.kubernetes.io/network-level-1",
        "NVIDIA Topograph (early)",
        3,
    ),
];

/// The node name's own label: Kueue's Topology ends with it, but one node is no domain to report.
pub const HOSTNAME: &str = "kubernetes.io/hostname";

/// The row of `key`, if it is a known label.
pub fn known(key: &str) -> Option<&'static TopologyLabel> {
    TOPOLOGY_LABELS.iter().find(|label| label.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_a_valid_label_key_listed_once_and_nvlink_rows_come_first() {
        let mut seen = std::collections::BTreeSet::new();
        for label in TOPOLOGY_LABELS {
            assert!(seen.insert(label.key), "{} listed twice", label.key);
            let (prefix, name) = label.key.split_once('/').expect("a prefixed key");
            assert!(
                prefix.contains('.') && !name.is_empty() && name.len() <= 63,
                "{}",
                label.key
            );
        }
        let first_network = TOPOLOGY_LABELS
            .iter()
            .position(|l| l.role == LabelRole::Network)
            .unwrap();
        assert!(
            TOPOLOGY_LABELS[first_network..]
                .iter()
                .all(|l| l.role == LabelRole::Network)
        );
        assert_eq!(TOPOLOGY_LABELS[0].key, GPU_CLIQUE);
        assert!(known(HOSTNAME).is_none());
    }
}
