//! Kueue's `Topology` (`topologies.kueue.x-k8s.io`): each Topology's levels (`spec.levels[].nodeLabel`,
//! widest first, the hostname last) are the labels a cluster's admins schedule multi-node jobs by, so they are
//! topology levels here too, beside the built-in table (`inventory::topology::label_table`) and
//! `--topology-label`.
//!
//! Kueue serves Topology as `v1beta2` (0.15 on), `v1beta1` and, before 0.13, `v1alpha1`; the versions share
//! `spec.levels[].nodeLabel`, so each is watched as a [`DynamicObject`]. Where Kueue's CRDs are not installed
//! the source is absent (one info line), and discovery looks again (`sources::optional_api`): installing
//! Kueue later starts the watch without a restart.

use std::future::Future;
use std::sync::Arc;

use kube::ResourceExt;
use kube::api::DynamicObject;
use tracing::warn;

use super::KUEUE_GROUP;
use crate::error::Result;
use crate::inventory::topology::TopologyLevels;
use crate::sources::config::SourcesConfig;
use crate::sources::optional_api::OptionalApi;
use crate::sources::reader::{Listed, OneShot, Reader, Start};
use crate::sources::snapshot::Snapshot;
use crate::sources::stripped::StrippedStore;

/// The versions of Kueue's API that serve Topologies, newest first.
pub const TOPOLOGY_VERSIONS: [&str; 3] = ["v1beta2", "v1beta1", "v1alpha1"];

/// One Topology, stripped to its name and level labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KueueTopology {
    /// `metadata.name`.
    pub name: String,
    /// `spec.levels[].nodeLabel`, widest first.
    pub levels: Vec<String>,
}

/// The stripped Topologies.
pub type TopologyStore = StrippedStore<KueueTopology>;

/// The Topology's stripped form; one whose levels do not read is left out, with a warning naming it.
pub fn strip_topology(object: &DynamicObject) -> Option<KueueTopology> {
    let name = object.name_any();
    let levels = object
        .data
        .get("spec")
        .and_then(|spec| spec.get("levels"))
        .and_then(|levels| levels.as_array());
    let read: Option<Vec<String>> = levels.map(|levels| {
        levels
            .iter()
            .filter_map(|level| level.get("nodeLabel").and_then(|l| l.as_str()))
            .map(str::to_owned)
            .collect()
    });
    match read {
        Some(levels) if !levels.is_empty() => Some(KueueTopology { name, levels }),
        _ => {
            warn!(
                topology = %name,
                "Kueue Topology {name}: spec.levels[].nodeLabel does not read; its levels are not used \
                 (check it with kubectl get topologies.kueue.x-k8s.io {name} -o yaml)"
            );
            None
        }
    }
}

/// The topology levels of these Topologies (by name, each widest first) and the `--topology-label` keys.
pub fn levels_of(
    topologies: &[impl AsRef<KueueTopology>],
    flags: &[String],
) -> Arc<TopologyLevels> {
    let mut sorted: Vec<&KueueTopology> = topologies.iter().map(AsRef::as_ref).collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let keys = sorted
        .iter()
        .flat_map(|t| t.levels.iter().map(String::as_str))
        .chain(flags.iter().map(String::as_str));
    TopologyLevels::with_extra(keys)
}

/// Kueue's Topologies, in the newest version served.
pub const TOPOLOGIES: OptionalApi = OptionalApi {
    group: KUEUE_GROUP,
    versions: &TOPOLOGY_VERSIONS,
    kind: "Topology",
    plural: "topologies",
    what: "Kueue Topologies",
    without: "topology levels come from the built-in table and --topology-label, and Kueue's quotas are \
              not checked against the GPUs",
    purpose: "their levels are topology levels",
    quiet_absence: false,
};

/// Kueue's Topologies, whose levels join the built-in table's and `--topology-label`'s.
pub(crate) struct TopologyReader {
    flags: Vec<String>,
}

impl TopologyReader {
    pub(crate) fn new(config: &SourcesConfig) -> TopologyReader {
        TopologyReader {
            flags: config.topology_labels.clone(),
        }
    }
}

impl Reader for TopologyReader {
    type Objects = Vec<Arc<KueueTopology>>;
    type Store = TopologyStore;

    fn name(&self) -> &'static str {
        TOPOLOGIES.plural
    }

    fn watch(
        &self,
        start: &Start<'_>,
    ) -> (TopologyStore, impl Future<Output = ()> + Send + 'static) {
        TOPOLOGIES.watch(
            start.client.clone(),
            start.health.clone(),
            start.signal.clone(),
            strip_topology,
        )
    }

    /// Not waited for: their levels enrich the scan, and a Topology watch that is forbidden (an older RBAC
    /// without the rule) or slow must not hold back the inventory. Their levels arrive as a change, and the
    /// next scan reads the nodes' places at them.
    async fn ready(&self, _: &TopologyStore) {}

    async fn list_once(&self, from: &OneShot<'_>, _: &Snapshot) -> Result<Listed<Self::Objects>> {
        let (topologies, note) = match from {
            OneShot::Dump(dump) => {
                let topologies = dump
                    .kueue
                    .iter()
                    .filter(|o| o.types.as_ref().is_some_and(|t| t.kind == TOPOLOGIES.kind))
                    .filter_map(strip_topology);
                (topologies.collect(), None)
            }
            OneShot::Cluster(cluster) => TOPOLOGIES.list(&cluster.client, strip_topology).await,
        };
        Ok(Listed {
            objects: topologies.into_iter().map(Arc::new).collect(),
            notes: note.into_iter().collect(),
        })
    }

    fn fill(&self, topologies: Self::Objects, snapshot: &mut Snapshot) {
        snapshot.topology = levels_of(&topologies, &self.flags);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(name: &str, levels: serde_json::Value) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
            "metadata": { "name": name },
            "spec": { "levels": levels }
        }))
        .unwrap()
    }

    #[test]
    fn a_topology_strips_to_its_level_labels_and_a_broken_one_is_left_out() {
        let gke = topology(
            "gke",
            serde_json::json!([
                { "nodeLabel": "cloud.google.com/gce-topology-block" },
                { "nodeLabel": "example.com/rack" },
                { "nodeLabel": "kubernetes.io/hostname" }
            ]),
        );
        let stripped = strip_topology(&gke).expect("levels");
        assert_eq!(stripped.levels.len(), 3);
        assert_eq!(
            strip_topology(&topology("broken", serde_json::json!("block"))),
            None
        );
        let levels = levels_of(
            &[std::sync::Arc::new(stripped)],
            &["example.com/pod".to_owned()],
        );
        assert_eq!(levels.extra(), ["example.com/rack", "example.com/pod"]);
    }
}
