//! The referee's GPU fleet: KWOK nodes of 4 NVIDIA GB200 GPUs each (GFD's labels), in blocks and subblocks of
//! GKE's topology labels, and pods that hold some of their GPUs, each change waited for until Kueue has it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::json;
use testkit::waits::Deadline;

use super::objects::GPU;
use super::process::KueueProcess;
use crate::common::allocation::node;
use crate::common::test_env::TestEnv;
use crate::common::waiting::wait_for;

/// GKE's block label: the widest level.
pub const BLOCK: &str = "cloud.google.com/gce-topology-block";
/// GKE's subblock label.
pub const SUBBLOCK: &str = "cloud.google.com/gce-topology-subblock";
/// The hostname label: the lowest level.
pub const HOSTNAME: &str = super::assignment::HOSTNAME;
/// The referee's topology, the widest level first.
pub const LEVELS: [&str; 3] = [BLOCK, SUBBLOCK, HOSTNAME];
/// The GPU product, as GFD labels it and `scan` names it.
pub const PRODUCT: &str = "NVIDIA-GB200";
/// GPUs per node (a GB200 NVL72 compute tray).
pub const GPUS_PER_NODE: u32 = 4;

/// A test's nodes by subblock (`"b1-s1"`), in order; node `i` of subblock `b1-s1` is `<id>-b1-s1-n<i>`.
pub struct Fleet {
    id: String,
    /// Node names per subblock.
    pub subblocks: BTreeMap<String, Vec<String>>,
}

impl Fleet {
    /// Creates `nodes` nodes in each `(block, subblock, nodes)` of `layout` and waits until each is Ready and
    /// untainted: Kueue leaves out a node with an untolerated NoSchedule taint, and a new node has one
    /// (`node.kubernetes.io/not-ready`) until the node lifecycle controller sees it Ready.
    pub async fn create(env: &TestEnv, layout: &[(&str, &str, usize)]) -> Fleet {
        let mut fleet = Fleet {
            id: env.id.clone(),
            subblocks: BTreeMap::new(),
        };
        for &(block, subblock, nodes) in layout {
            let key = format!("{block}-{subblock}");
            for i in 0..nodes {
                let labels = json!({
                    BLOCK: fleet.block(block), SUBBLOCK: fleet.subblock(block, subblock),
                    "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": PRODUCT,
                    "nvidia.com/gpu.count": GPUS_PER_NODE.to_string(), "nvidia.com/gpu.memory": "189471",
                });
                let gpus = GPUS_PER_NODE.to_string();
                let name = env
                    .create_node(node(&format!("{key}-n{i}"), labels, &[(GPU, &gpus)]))
                    .await;
                fleet.subblocks.entry(key.clone()).or_default().push(name);
            }
        }
        for name in fleet.subblocks.values().flatten() {
            env.wait_schedulable(name).await;
        }
        fleet
    }

    /// The block label's value of `block` (unique to the test).
    pub fn block(&self, block: &str) -> String {
        format!("{}-{block}", self.id)
    }

    /// The subblock label's value of `subblock` in `block` (unique to the test).
    pub fn subblock(&self, block: &str, subblock: &str) -> String {
        format!("{}-{block}-{subblock}", self.id)
    }

    /// The nodes of `"b1-s1"`.
    pub fn nodes(&self, subblock: &str) -> &[String] {
        &self.subblocks[subblock]
    }

    /// The nodes of every subblock of `block` (`"b1"`).
    pub fn block_nodes(&self, block: &str) -> Vec<String> {
        let prefix = format!("{block}-");
        self.subblocks
            .iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .flat_map(|(_, nodes)| nodes.iter().cloned())
            .collect()
    }
}

/// A pod of no Kueue Workload holding `gpus` GPUs of `node` (as a job started without Kueue does), bound by
/// kube-scheduler; returns once Kueue counts it (its TAS cache logs it at verbosity 5, under the cache's lock,
/// so a scheduling cycle after the line sees the pod).
pub async fn hold_gpus(env: &TestEnv, kueue: &mut KueueProcess, name: &str, node: &str, gpus: u32) {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "nodeSelector": { HOSTNAME: node },
            "automountServiceAccountToken": false,
            "containers": [{ "name": "holder", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "limits": { GPU: gpus.to_string() } } }],
        },
    }))
    .unwrap();
    env.create_pod(pod).await;
    let bound = env.wait_bound(name).await;
    assert_eq!(bound, node, "pod {name} bound elsewhere");
    let (pod_field, ns_field) = (
        format!("\"name\":\"{name}\""),
        format!("\"namespace\":\"{}\"", env.namespace),
    );
    kueue
        .wait_logged(
            "Adding non-TAS pod to the cache",
            &[&pod_field, &ns_field],
            &format!("Kueue counting pod {name} on {node}"),
        )
        .await;
}

/// Deletes pod `name` and returns once it is gone from the API server (KWOK finishes the deletion) and from
/// Kueue's TAS cache. Kueue logs the removal just before it makes it, outside the cache's lock; the Workload a
/// test submits next reaches Kueue's scheduler through a watch and a queue, far later than that.
pub async fn free_gpus(env: &TestEnv, kueue: &mut KueueProcess, name: &str) {
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    pods.delete(name, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting pod {name}: {e}"));
    wait_for(
        Deadline::reaction("KWOK finishing the pod's deletion"),
        &format!("pod {name} gone"),
        || async {
            match pods.get_opt(name).await {
                Ok(None) => Ok(()),
                Ok(Some(_)) => Err("still there".to_owned()),
                Err(e) => Err(format!("reading it: {e}")),
            }
        },
    )
    .await;
    let (pod_field, ns_field) = (
        format!("\"name\":\"{name}\""),
        format!("\"namespace\":\"{}\"", env.namespace),
    );
    kueue
        .wait_logged(
            "Idempotently deleting not found pod",
            &[&pod_field, &ns_field],
            &format!("Kueue forgetting pod {name}"),
        )
        .await;
}

/// Puts taint `key=team-a:effect` on `node` and returns once Kueue has it (it logs every change of a node's
/// taints after taking the node into its cache).
pub async fn taint(env: &TestEnv, kueue: &mut KueueProcess, node: &str, key: &str, effect: &str) {
    let nodes: Api<Node> = Api::all(env.client.clone());
    let body =
        json!({ "spec": { "taints": [{ "key": key, "value": "team-a", "effect": effect }] } });
    nodes
        .patch(node, &PatchParams::default(), &Patch::Merge(body))
        .await
        .unwrap_or_else(|e| panic!("tainting {node}: {e}"));
    kueue
        .wait_logged(
            "Node taints changed, triggering reconcile",
            &[&format!("\"{node}\"")],
            &format!("Kueue seeing {node} tainted {key}:{effect}"),
        )
        .await;
}
