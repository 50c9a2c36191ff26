//! One test's slice of the cluster ([`TestEnv`]): its id and label, its namespace, its nodes from the
//! fixtures, and their clean-up (also after a panic).

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use gpu_inventory_operator::crd::{GpuInventory, GpuNode};
use gpu_inventory_operator::sources::dump::parse_node_dump;
use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;
use testkit::nodes::{KWOK_ANNOTATION, is_ready};

use super::cluster_access::{client, kubeconfig_path};

/// The label every object a test creates carries, with the test's id as value.
pub const TEST_LABEL: &str = "gpuinv-test";

/// Cluster-scoped objects a test made outside its namespace (DeviceClasses), deleted with kubectl when the
/// guard goes, so a failed test leaves none behind: `kind/name` each.
pub struct DeleteOnDrop(pub Vec<String>);

impl Drop for DeleteOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig_path())
            .args(["delete", "--ignore-not-found", "--wait=false"])
            .args(&self.0)
            .status();
    }
}

/// The nodes of a fixture file in tests/fixtures.
pub fn fixture_nodes(file: &str) -> Vec<Node> {
    let path = fixture_path(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading fixture {path}: {e}"));
    parse_node_dump(&bytes, &path).expect("fixture parses")
}

/// The path of a fixture file in tests/fixtures.
pub fn fixture_path(file: &str) -> String {
    format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// One test's slice of the cluster: a unique id, a namespace, and the nodes and inventories it made.
pub struct TestEnv {
    /// The client.
    pub client: Client,
    /// Unique id, also the value of [`TEST_LABEL`] and the prefix of node names.
    pub id: String,
    /// The test's namespace (holds the ConfigMap).
    pub namespace: String,
}

impl TestEnv {
    /// Creates the namespace of a new test environment.
    pub async fn new(test: &str) -> TestEnv {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let nonce = (std::process::id() as u64 * 1000
            + COUNTER.fetch_add(1, Ordering::Relaxed) as u64)
            ^ (std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos() as u64);
        let id = format!("t-{}-{:x}", test.replace('_', "-"), nonce % 0xffffff);
        let id: String = id
            .chars()
            .take(40)
            .collect::<String>()
            .trim_end_matches('-')
            .to_owned();
        let client = client().await;
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace = serde_json::from_value(json!({
            "metadata": { "name": id, "labels": { TEST_LABEL: id } }
        }))
        .unwrap();
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create test namespace");
        TestEnv {
            client,
            namespace: id.clone(),
            id,
        }
    }

    /// The test's name for a fixture node.
    pub fn node_name(&self, fixture_name: &str) -> String {
        format!("{}-{fixture_name}", self.id)
    }

    /// The name of the test's default inventory.
    pub fn inventory_name(&self) -> String {
        self.id.clone()
    }

    /// Creates the nodes of a fixture file (renamed and labelled for this test), status included.
    pub async fn load_fixture(&self, file: &str) -> Vec<String> {
        self.load_fixture_only(file, &[]).await
    }

    /// Like [`load_fixture`](Self::load_fixture), but only the named nodes (all when `only` is empty).
    pub async fn load_fixture_only(&self, file: &str, only: &[&str]) -> Vec<String> {
        let mut names = Vec::new();
        for node in fixture_nodes(file) {
            let name = node.metadata.name.clone().unwrap_or_default();
            if only.is_empty() || only.contains(&name.as_str()) {
                names.push(self.create_node(node).await);
            }
        }
        names
    }

    /// Creates one node, renamed and labelled for this test. The API server keeps the status on create.
    ///
    /// On a cluster with controllers (the local cluster, kind) a node whose kubelet never reports goes
    /// `Unknown` after the node lifecycle controller's grace period. So a node created Ready is handed to KWOK
    /// (annotation [`KWOK_ANNOTATION`]), which renews its Lease like a kubelet and keeps it Ready; a node
    /// created NotReady is left alone and stays NotReady (becoming `Unknown`, as a dead kubelet's node does).
    /// KWOK only takes nodes that carry the annotation when they are created: annotating one later does
    /// nothing (KWOK v0.8.0), so `set_ready(.., "True")` on such a node holds only until the grace period.
    pub async fn create_node(&self, mut node: Node) -> String {
        let name = self.node_name(node.metadata.name.as_deref().unwrap_or("node"));
        node.metadata.name = Some(name.clone());
        node.metadata.resource_version = None;
        node.metadata.uid = None;
        node.metadata.creation_timestamp = None;
        node.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(TEST_LABEL.to_owned(), self.id.clone());
        // The hostname label follows the new name where a label value can hold it (63 characters); longer
        // names (some real nodes' are) keep the node's own hostname.
        if let Some(labels) = node.metadata.labels.as_mut()
            && name.len() <= 63
        {
            labels.insert("kubernetes.io/hostname".to_owned(), name.clone());
        }
        if is_ready(&node) {
            let (key, value) = KWOK_ANNOTATION;
            node.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(key.to_owned(), value.to_owned());
        }
        let api: Api<Node> = Api::all(self.client.clone());
        api.create(&PostParams::default(), &node)
            .await
            .unwrap_or_else(|e| panic!("creating node {name}: {e}"));
        name
    }
    /// Deletes what the test created (nodes, inventories, namespace). Runs from `Drop` too.
    pub async fn cleanup(&self) {
        let selector = ListParams::default().labels(&format!("{TEST_LABEL}={}", self.id));
        let nodes: Api<Node> = Api::all(self.client.clone());
        let _ = nodes
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        let inventories: Api<GpuInventory> = Api::all(self.client.clone());
        let _ = inventories
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        // The garbage collector removes a deleted node's GpuNode; without a controller manager
        // (LOCAL_CLUSTER_COMPONENTS=apiserver) nobody would.
        let gpunodes: Api<GpuNode> = Api::all(self.client.clone());
        let _ = gpunodes
            .delete_collection(&DeleteParams::default(), &selector)
            .await;
        let _ = Api::<Namespace>::all(self.client.clone())
            .delete(&self.namespace, &DeleteParams::default())
            .await;
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        let (id, namespace) = (self.id.clone(), self.namespace.clone());
        // Drop cannot await, and the test's client is bound to the test's (now blocked) runtime: a short-lived
        // runtime on its own thread makes a fresh client and does the deletes, also after a panic.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let env = TestEnv {
                    client: client().await,
                    id,
                    namespace,
                };
                env.cleanup().await;
                std::mem::forget(env);
            });
        })
        .join();
    }
}
