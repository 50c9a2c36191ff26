//! A test's changes to its nodes: readiness, the kubelet's lease, cordon, resources, labels, deletion.

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use testkit::nodes::KWOK_ANNOTATION;
use testkit::waits::Deadline;

use super::cluster_periods::ClusterPeriods;
use super::test_env::TestEnv;
use super::waiting::wait_for;

/// The holder the tests put on a node's Lease to silence its (simulated) kubelet.
const SILENCED_HOLDER: &str = "gpuinv-test-silenced-kubelet";

impl TestEnv {
    /// Sets a node's Ready condition through the status subresource. On a KWOK-managed node the simulated
    /// kubelet is silenced first for anything but `True` (it would report the node Ready again) and given
    /// back for `True` (so the node keeps renewing its Lease).
    pub async fn set_ready(&self, node: &str, status: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        if status != "True" {
            self.silence_kubelet(node).await;
        }
        let mut current = nodes.get_status(node).await.expect("get node status");
        let conditions = current
            .status
            .get_or_insert_with(Default::default)
            .conditions
            .get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "Ready");
        conditions.push(k8s_openapi::api::core::v1::NodeCondition {
            type_: "Ready".into(),
            status: status.into(),
            reason: Some(
                if status == "True" {
                    "KubeletReady"
                } else {
                    "KubeletNotReady"
                }
                .into(),
            ),
            message: Some(format!("set to {status} by the test")),
            last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::now(),
            )),
            last_heartbeat_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                jiff::Timestamp::now(),
            )),
        });
        let body = json!({ "status": { "conditions": conditions } });
        nodes
            .patch_status(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("patching Ready of {node}: {e}"));
        if status == "True" {
            self.resume_kubelet(node).await;
        }
    }

    /// Silences a node's kubelet the way a crashed kubelet does: its Lease stops being renewed, and KWOK
    /// stops touching the node. Done by taking the Lease over (KWOK never renews a Lease held by someone
    /// else until it expires); the renew time is left as it was, so the node lifecycle controller's grace
    /// period counts from the kubelet's last renewal. No-op for a node without a Lease (no kubelet).
    pub async fn silence_kubelet(&self, node: &str) {
        let annotated = Api::<Node>::all(self.client.clone())
            .get(node)
            .await
            .unwrap_or_else(|e| panic!("reading node {node}: {e}"))
            .metadata
            .annotations
            .is_some_and(|a| {
                a.get(KWOK_ANNOTATION.0).map(String::as_str) == Some(KWOK_ANNOTATION.1)
            });
        if annotated {
            // KWOK creates the Lease at its first renewal of the new node: wait for it, or the takeover would
            // miss it.
            let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
            let renew = ClusterPeriods::get().kwok_lease_renew;
            let deadline =
                Deadline::new(renew, format!("KWOK's Lease renewal interval ({renew:?})"))
                    .then(Deadline::reaction("KWOK"));
            wait_for(deadline, &format!("KWOK's Lease for {node}"), || async {
                match leases.get_opt(node).await {
                    Ok(Some(lease)) => Ok(lease),
                    Ok(None) => Err("no Lease yet".to_owned()),
                    Err(e) => Err(format!("reading it: {e}")),
                }
            })
            .await;
        }
        let body =
            json!({ "spec": { "holderIdentity": SILENCED_HOLDER, "leaseDurationSeconds": 86400 } });
        self.patch_node_lease(node, body).await;
    }

    /// Cordons `node` (`spec.unschedulable`), or uncordons it with `false`, as `kubectl cordon` does.
    pub async fn cordon(&self, node: &str, cordon: bool) {
        Api::<Node>::all(self.client.clone())
            .patch(
                node,
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "unschedulable": cordon } })),
            )
            .await
            .unwrap_or_else(|e| panic!("cordoning node {node} ({cordon}): {e}"));
    }

    /// Gives a silenced node's Lease back: it expires at once, KWOK takes it over within its renew interval
    /// ([`ClusterPeriods::kwok_lease_renew`]), renews it, and reports the node as a live kubelet does (Ready when it was not).
    pub async fn resume_kubelet(&self, node: &str) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        let held_by_us = leases
            .get_opt(node)
            .await
            .ok()
            .flatten()
            .is_some_and(|lease| {
                lease.spec.and_then(|s| s.holder_identity).as_deref() == Some(SILENCED_HOLDER)
            });
        if held_by_us {
            self.patch_node_lease(node, json!({ "spec": { "leaseDurationSeconds": 1 } }))
                .await;
        }
    }

    async fn patch_node_lease(&self, node: &str, body: serde_json::Value) {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "kube-node-lease");
        match leases
            .patch(node, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => panic!("patching the Lease of node {node}: {e}"),
        }
    }
    /// Merges `resources` into a node's capacity or allocatable (`field`) through the status subresource.
    pub async fn set_resources(&self, node: &str, field: &str, resources: &[(&str, &str)]) {
        let map: serde_json::Map<String, serde_json::Value> = resources
            .iter()
            .map(|(k, v)| ((*k).to_owned(), json!(v)))
            .collect();
        let body = json!({ "status": { field: map } });
        Api::<Node>::all(self.client.clone())
            .patch_status(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("patching {field} of {node}: {e}"));
    }

    /// Sets (or with `None` removes) a node label.
    pub async fn set_label(&self, node: &str, key: &str, value: Option<&str>) {
        let body = json!({ "metadata": { "labels": { key: value } } });
        Api::<Node>::all(self.client.clone())
            .patch(node, &PatchParams::default(), &Patch::Merge(body))
            .await
            .unwrap_or_else(|e| panic!("labelling {node}: {e}"));
    }

    /// Deletes a node.
    pub async fn delete_node(&self, node: &str) {
        Api::<Node>::all(self.client.clone())
            .delete(node, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("deleting {node}: {e}"));
    }
    /// Waits until the node lifecycle controller has lifted the `not-ready` taint admission puts on a new
    /// node (until then the scheduler rightly calls GPU pods Unschedulable): its next look at the Ready node.
    pub async fn wait_schedulable(&self, node: &str) {
        let nodes: Api<Node> = Api::all(self.client.clone());
        wait_for(
            ClusterPeriods::get().node_monitor_pass(),
            &format!("node {node} without taints"),
            || async {
                let found = nodes
                    .get(node)
                    .await
                    .map_err(|e| format!("reading node {node}: {e}"))?;
                let taints = found.spec.and_then(|s| s.taints).unwrap_or_default();
                if taints.is_empty() {
                    Ok(())
                } else {
                    let keys: Vec<String> = taints
                        .iter()
                        .map(|t| format!("{}:{}", t.key, t.effect))
                        .collect();
                    Err(format!("taints {keys:?}"))
                }
            },
        )
        .await;
    }
}
