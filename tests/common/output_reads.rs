//! Reading and awaiting the operator's outputs for a test: its inventory, ConfigMap, GpuNodes and events.

use std::collections::BTreeMap;

use gpu_inventory_operator::crd::{GpuInventory, GpuNode, GpuNodeStatus};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams};
use testkit::waits::Deadline;

use super::operator_process::inventory_summary;
use super::test_env::{TEST_LABEL, TestEnv};
use super::waiting::wait_for;

impl TestEnv {
    /// The test's inventory `name`, if it exists and can be read. Right after the operator starts on a fresh
    /// cluster its CRD may not be served yet: that reads as "not there yet", and callers poll.
    pub async fn inventory(&self, name: &str) -> Option<GpuInventory> {
        match Api::<GpuInventory>::all(self.client.clone())
            .get_opt(name)
            .await
        {
            Ok(found) => found,
            Err(e) => {
                eprintln!("reading GpuInventory {name}: {e} (retrying)");
                None
            }
        }
    }

    /// The test's node-status ConfigMap, if it exists.
    pub async fn configmap(&self) -> Option<ConfigMap> {
        Api::<ConfigMap>::namespaced(self.client.clone(), &self.namespace)
            .get_opt("gpu-node-status")
            .await
            .expect("get ConfigMap")
    }

    /// The events regarding the object `name` (cluster-scoped objects' events live in `default`), oldest first.
    pub async fn events_about(&self, name: &str) -> Vec<k8s_openapi::api::core::v1::Event> {
        let api: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), "default");
        let params = ListParams::default().fields(&format!("involvedObject.name={name}"));
        let mut events = api.list(&params).await.expect("list events").items;
        events.sort_by_key(|e| e.metadata.creation_timestamp.clone().map(|t| t.0));
        events
    }

    /// Waits until the default inventory's status satisfies `check`; a timeout shows the last status seen.
    pub async fn wait_inventory(
        &self,
        name: &str,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&gpu_inventory_operator::crd::GpuInventoryStatus) -> bool,
    ) -> GpuInventory {
        wait_for(deadline, what, || async {
            let Some(inv) = self.inventory(name).await else {
                return Err(format!("no GpuInventory {name}"));
            };
            match inv.status.as_ref() {
                None => Err(format!("GpuInventory {name} without a status")),
                Some(status) if check(status) => Ok(inv),
                Some(status) => Err(inventory_summary(status)),
            }
        })
        .await
    }

    /// Every GpuNode's of this test and the inventory's resourceVersion: equal before and after a quiet minute
    /// when the operator wrote nothing.
    pub async fn written_versions(&self) -> Vec<(String, String)> {
        let mut versions: Vec<(String, String)> = self
            .gpunodes()
            .await
            .into_iter()
            .filter_map(|n| Some((n.metadata.name?, n.metadata.resource_version?)))
            .collect();
        let inventory = self
            .inventory(&self.inventory_name())
            .await
            .expect("the inventory");
        versions.push((
            "GpuInventory".to_owned(),
            inventory.metadata.resource_version.unwrap_or_default(),
        ));
        versions
    }

    /// The GpuNode of node `name`, if it exists.
    pub async fn gpunode(&self, name: &str) -> Option<GpuNode> {
        match Api::<GpuNode>::all(self.client.clone()).get_opt(name).await {
            Ok(found) => found,
            Err(e) => {
                eprintln!("reading GpuNode {name}: {e} (retrying)");
                None
            }
        }
    }

    /// The GpuNodes of this test's nodes (they carry the test's label, copied from their nodes).
    pub async fn gpunodes(&self) -> Vec<GpuNode> {
        let params = ListParams::default().labels(&format!("{TEST_LABEL}={}", self.id));
        Api::<GpuNode>::all(self.client.clone())
            .list(&params)
            .await
            .map(|l| l.items)
            .unwrap_or_default()
    }

    /// Waits until the GpuNode of `name` exists and its status satisfies `check`; a timeout shows the last
    /// status seen.
    pub async fn wait_gpunode(
        &self,
        name: &str,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&GpuNodeStatus) -> bool,
    ) -> GpuNode {
        wait_for(deadline, what, || async {
            let Some(node) = self.gpunode(name).await else {
                return Err(format!("no GpuNode {name}"));
            };
            match node.status.as_ref() {
                None => Err(format!("GpuNode {name} without a status")),
                Some(status) if check(status) => Ok(node),
                Some(status) => Err(format!(
                    "GpuNode {name}: count {}, ready {}, product {:?}, issues {:?}",
                    status.node.count, status.node.ready, status.node.product, status.issue_reasons
                )),
            }
        })
        .await
    }

    /// Waits until the ConfigMap's data satisfies `check`; a timeout shows the last keys seen.
    pub async fn wait_configmap(
        &self,
        deadline: impl Into<Deadline>,
        what: &str,
        check: impl Fn(&BTreeMap<String, String>) -> bool,
    ) -> ConfigMap {
        wait_for(deadline, what, || async {
            let Some(cm) = self.configmap().await else {
                return Err("no ConfigMap gpu-node-status".to_owned());
            };
            match cm.data.as_ref() {
                None => Err("the ConfigMap without data".to_owned()),
                Some(data) if check(data) => Ok(cm),
                Some(data) => Err(format!(
                    "{} keys: {}",
                    data.len(),
                    data.keys().take(20).cloned().collect::<Vec<_>>().join(", ")
                )),
            }
        })
        .await
    }
}
