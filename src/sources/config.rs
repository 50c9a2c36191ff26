//! What the sources read ([`SourcesConfig`]): plain values the commands make of their flags.

use std::sync::Arc;

use super::utilization;
use crate::inventory::NodeUniverse;
use crate::inventory::health::HealthTable;
use crate::inventory::selector::LabelSelector;

/// What the sources watch.
#[derive(Clone, Debug, Default)]
pub struct SourcesConfig {
    /// Only nodes matching this label selector (e.g. `nvidia.com/gpu.present=true`); `None`: all nodes.
    pub node_label_selector: Option<String>,
    /// The DRA drivers whose devices are GPUs (`gpu.nvidia.com`); empty: DRA is not read.
    pub dra_drivers: Vec<String>,
    /// Which node conditions are GPU health (kept through stripping, read by the scan).
    pub health: std::sync::Arc<HealthTable>,
    /// `--topology-label`: node label keys that are topology levels, beside the built-in table and Kueue's.
    pub topology_labels: Vec<String>,
    /// `--prometheus-url` and the rest: the utilization source's client and settings; `None`: off.
    pub utilization: Option<(
        utilization::prometheus::Prometheus,
        utilization::UtilizationConfig,
    )>,
}

impl SourcesConfig {
    /// Whether the node watch sees the whole cluster.
    pub(crate) fn universe(&self) -> NodeUniverse {
        match self.node_label_selector {
            Some(_) => NodeUniverse::Subset,
            None => NodeUniverse::Cluster,
        }
    }

    /// The node watch's selector, as the scan's scope: already accepted by the API server's list; one it
    /// would refuse leaves the scope unknown.
    pub(crate) fn watched(&self) -> Option<Arc<LabelSelector>> {
        self.node_label_selector
            .as_deref()
            .and_then(|s| crate::inventory::selector::parse_selector(s).ok())
            .map(Arc::new)
    }
}
