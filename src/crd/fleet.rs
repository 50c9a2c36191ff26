//! The `ClusterProperty` (`about.k8s.io`, KEP-2149) the operator keeps, and the `ClusterProfile`
//! (`multicluster.x-k8s.io/v1alpha1`, KEP-4322) a hub reads it from: names, and the summary's JSON as
//! `spec.value` (and the profile's `status.properties[].value`) carries it.

use kube::api::ApiResource;
use serde::{Deserialize, Serialize};

/// The ClusterProperty's API group.
pub const CLUSTER_PROPERTY_GROUP: &str = "about.k8s.io";
/// Its versions, newest first: about-api serves v1beta1 (storage) and v1alpha1.
pub const CLUSTER_PROPERTY_VERSIONS: &[&str] = &["v1beta1", "v1alpha1"];
/// The default name of the ClusterProperty, and of the property a hub's ClusterProfiles carry.
pub const DEFAULT_CLUSTER_PROPERTY: &str = "gpus.homelab.youngju.dev";
/// The ClusterProfile's API group and version.
pub const CLUSTER_PROFILE_API: (&str, &str) = ("multicluster.x-k8s.io", "v1alpha1");
/// The most a ClusterProfile's property value may hold (its CRD's `maxLength`), and so the summary.
pub const PROPERTY_VALUE_MAX: usize = 1024;
/// The summary's format version; a reader refuses a newer one.
pub const SUMMARY_FORMAT: u32 = 1;

/// The ClusterProperty's kind and its plural.
pub const CLUSTER_PROPERTY_KIND: (&str, &str) = ("ClusterProperty", "clusterproperties");

/// The ClusterProperty kind at `version` (one of [`CLUSTER_PROPERTY_VERSIONS`]), for a dynamic API.
pub fn cluster_property_resource(version: &str) -> ApiResource {
    ApiResource {
        group: CLUSTER_PROPERTY_GROUP.into(),
        version: version.into(),
        api_version: format!("{CLUSTER_PROPERTY_GROUP}/{version}"),
        kind: CLUSTER_PROPERTY_KIND.0.into(),
        plural: CLUSTER_PROPERTY_KIND.1.into(),
    }
}

/// One cluster's GPUs as compact JSON: `{"v":1,"nodes":..,"gpus":..,"free":..,"unhealthy":..,"products":[..]}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSummaryValue {
    /// The format version ([`SUMMARY_FORMAT`]).
    pub v: u32,
    /// GPU nodes.
    pub nodes: u32,
    /// GPUs.
    pub gpus: u64,
    /// Whole GPUs free now.
    pub free: u64,
    /// GPUs on nodes that are not Ready or carry a Degraded issue.
    pub unhealthy: u64,
    /// Per vendor and product, most GPUs first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<ProductValue>,
    /// Products left out to stay within [`PROPERTY_VALUE_MAX`] (the smallest); their GPUs are in the totals.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more: u32,
}

/// One product in [`GpuSummaryValue`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductValue {
    /// Who makes it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// The model.
    pub product: String,
    /// GPU nodes.
    pub nodes: u32,
    /// GPUs.
    pub gpus: u64,
    /// Free GPUs.
    pub free: u64,
    /// Unhealthy GPUs.
    pub unhealthy: u64,
    /// The largest free NVLink gang.
    pub gang: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
