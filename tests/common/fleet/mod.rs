//! The multi-cluster tests' clusters (issue 41): more API servers beside the test cluster, the GPU nodes on them,
//! one kubeconfig with a context per cluster (and contexts that cannot be reached), and the two multi-cluster
//! APIs, `ClusterProperty` (about.k8s.io, KEP-2149) and `ClusterProfile` (multicluster.x-k8s.io, KEP-4322).
//!
//! - [`ExtraCluster`]: a cluster of its own per call (etcd + kube-apiserver from hack/local-cluster.sh, its own
//!   ports and state dir), taken down when dropped. No controllers and no KWOK: what a test writes stays as
//!   written, so a node is Ready or NotReady because the test said so ([`add_gpu_node`], [`set_ready`]).
//! - [`write_fleet_kubeconfig`]: the contexts the plugin reads at once; [`SilentServer`]: an endpoint that
//!   accepts and never answers (a cluster that times out).
//! - [`install_crd`] with [`CLUSTER_PROPERTY_CRD`] / [`CLUSTER_PROFILE_CRD`] (upstream's CRDs, tests/fixtures/fleet),
//!   and [`write_cluster_profile`]: a hub's inventory as a cluster manager writes it.

pub mod cluster;
pub mod crds;
pub mod kubeconfig;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {
    cluster::{ExtraCluster, add_gpu_node, set_ready},
    crds::{
        CLUSTER_MANAGER, CLUSTER_PROFILE_CRD, CLUSTER_PROPERTY_CRD, cluster_profile_resource,
        install_crd, served, write_cluster_profile,
    },
    kubeconfig::{SilentServer, write_fleet_kubeconfig},
};
