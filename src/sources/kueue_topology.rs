//! The Kueue `Topology` source (`topologies.kueue.x-k8s.io`): each Topology's levels (`spec.levels[].nodeLabel`,
//! widest first, the hostname last) are the labels a cluster's admins schedule multi-node jobs by, so they are
//! topology levels here too, beside the built-in table (`inventory::topology::label_table`) and
//! `--topology-label`.
//!
//! Kueue serves Topology as `v1beta2` (0.15 on), `v1beta1` and, before 0.13, `v1alpha1`; the versions share
//! `spec.levels[].nodeLabel`, so each is watched as a [`DynamicObject`]. Where Kueue's CRDs are not installed
//! the source is absent (one info line), and discovery looks again every [`DISCOVERY_REFRESH`]: installing
//! Kueue later starts the watch without a restart.

use kube::api::{ApiResource, DynamicObject, ListParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use tracing::{info, warn};

use super::changes::ChangeSignal;
use super::discovery::{DISCOVERY_REFRESH, Discovered, wait_until_served};
use super::stripped::{StrippedStore, StrippedWriter, feed, stripped_store};
use crate::error::describe_kube_error;
use crate::inventory::topology::TopologyLevels;
use crate::runtime::backoff;
use crate::runtime::health::Health;

/// Kueue's API group.
pub const KUEUE_GROUP: &str = "kueue.x-k8s.io";

/// The versions of Kueue's API that serve Topologies, newest first.
pub const TOPOLOGY_VERSIONS: [&str; 3] = ["v1beta2", "v1beta1", "v1alpha1"];

/// The watch's name in logs, metrics and health.
const WATCH: &str = "topologies";

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
) -> &'static TopologyLevels {
    let mut sorted: Vec<&KueueTopology> = topologies.iter().map(AsRef::as_ref).collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let keys = sorted
        .iter()
        .flat_map(|t| t.levels.iter().map(String::as_str))
        .chain(flags.iter().map(String::as_str));
    TopologyLevels::with_extra(keys)
}

/// Which version serves Topologies, if any: `Err` when discovery itself failed.
async fn served_version(client: &Client) -> Result<Option<&'static str>, String> {
    for version in TOPOLOGY_VERSIONS {
        match client
            .list_api_group_resources(&format!("{KUEUE_GROUP}/{version}"))
            .await
        {
            Ok(list) if list.resources.iter().any(|r| r.name == WATCH) => return Ok(Some(version)),
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(describe_kube_error(&error)),
        }
    }
    Ok(None)
}

/// The API resource of Topologies at `version`.
pub fn topology_resource(version: &str) -> ApiResource {
    ApiResource {
        group: KUEUE_GROUP.into(),
        version: version.into(),
        api_version: format!("{KUEUE_GROUP}/{version}"),
        kind: "Topology".into(),
        plural: WATCH.into(),
    }
}

/// Every Topology, for a one-shot scan: none where Kueue is not installed or its Topologies cannot be read
/// (said on stderr by the caller through the returned note).
pub async fn list_topologies(client: &Client) -> (Vec<KueueTopology>, Option<String>) {
    let version = match served_version(client).await {
        Ok(Some(version)) => version,
        Ok(None) => return (Vec::new(), None),
        Err(error) => {
            return (
                Vec::new(),
                Some(format!(
                    "Kueue Topologies not read (discovery failed: {error})"
                )),
            );
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &topology_resource(version));
    match api.list(&ListParams::default()).await {
        Ok(list) => (list.items.iter().filter_map(strip_topology).collect(), None),
        Err(error) => (
            Vec::new(),
            Some(format!(
                "Kueue Topologies not read ({}); their levels are not used (grant list on \
                 topologies.kueue.x-k8s.io, or name the labels with --topology-label)",
                describe_kube_error(&error)
            )),
        ),
    }
}

/// Starts the Topology source: its store, and the task that feeds it (run it until shutdown).
pub(crate) fn watch_topologies(
    client: Client,
    health: Health,
    changes: ChangeSignal,
) -> (TopologyStore, impl Future<Output = ()> + Send + 'static) {
    let (store, mut writer) = stripped_store(strip_topology);
    let task = async move {
        let version = wait_for_api(&client, &mut writer).await;
        info!(
            api = %format!("{KUEUE_GROUP}/{version}"),
            "Kueue Topologies served: watching them (their levels are topology levels)"
        );
        let api: Api<DynamicObject> = Api::all_with(client, &topology_resource(version));
        let events = watcher(api, watcher::Config::default()).backoff(backoff::WATCH.backoff());
        feed(WATCH, events, &mut writer, &health, &changes).await;
    };
    (store, task)
}

/// Returns the newest served version once there is one; until then the store is empty and synced, and the
/// absence is said once.
async fn wait_for_api(
    client: &Client,
    writer: &mut StrippedWriter<DynamicObject, KueueTopology>,
) -> &'static str {
    let mut said = false;
    let discover = || async {
        match served_version(client).await {
            Ok(Some(version)) => Discovered::Served(version),
            Ok(None) => Discovered::Absent(
                "the API server serves no topologies.kueue.x-k8s.io (Kueue is not installed)"
                    .to_owned(),
            ),
            Err(error) => Discovered::Failed(error),
        }
    };
    wait_until_served("Kueue Topologies", discover, |why| {
        writer.mark_absent();
        if !said {
            info!(
                "Kueue Topologies unavailable: {why}; topology levels come from the built-in table and \
                 --topology-label, and the API is looked for again every {}s",
                DISCOVERY_REFRESH.as_secs()
            );
            said = true;
        }
    })
    .await
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
