//! Real GPU nodes (tests/fixtures/real-nodes.yaml, from vendors' docs and users' issues) on a real API server:
//! the operator's inventory and ConfigMap say what the offline `scan` says, and a cluster without GPU Feature
//! Discovery (GKE, EKS, AKS style) whose GPU nodes are Ready and allocatable is not Degraded.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{TEST_LABEL, TestEnv, fixture_nodes, kubeconfig_path};
use gpu_inventory_operator::crd::{GpuInventoryStatus, GpuNodeEntry};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(30);

/// The test's nodes as the API server holds them.
async fn nodes_on_server(env: &TestEnv) -> Vec<Node> {
    let params = ListParams::default().labels(&format!("{TEST_LABEL}={}", env.id));
    Api::<Node>::all(env.client.clone())
        .list(&params)
        .await
        .expect("list the test's nodes")
        .items
}

/// `gpu-inventory-operator scan -f <file> -o json` of these nodes: (exit code, status).
fn offline_scan(env: &TestEnv, what: &str, nodes: &[Node]) -> (i32, GpuInventoryStatus) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{}-{what}.json", env.id));
    let list = json!({ "apiVersion": "v1", "kind": "List", "items": nodes });
    std::fs::write(&path, serde_json::to_vec_pretty(&list).unwrap()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(["scan", "-f", &path.display().to_string(), "-o", "json"])
        .output()
        .expect("run scan");
    let status = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "scan -o json printed no status ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), status)
}

/// What a person compares: product, count, memory, sources and issue reasons.
fn reading(e: &GpuNodeEntry) -> (Option<&str>, u64, Option<u64>, Vec<&str>, Vec<&str>) {
    (
        e.product.as_deref(),
        e.count,
        e.memory_mib,
        e.sources.iter().map(String::as_str).collect(),
        e.issues.iter().map(|i| i.reason.as_str()).collect(),
    )
}

/// Type, status, reason and message of each condition (times differ between two writers).
fn conditions(s: &GpuInventoryStatus) -> Vec<(String, String, String, String)> {
    s.conditions
        .iter()
        .map(|c| {
            (
                c.type_.clone(),
                c.status.clone(),
                c.reason.clone(),
                c.message.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn real_nodes_read_the_same_in_the_cluster_as_offline() {
    let env = TestEnv::new("real-nodes").await;
    let fixture = fixture_nodes("real-nodes.yaml");
    for node in fixture.clone() {
        env.create_node(node).await;
    }
    // What the server holds: the fixture plus what the API server fills in (a missing allocatable block
    // becomes a copy of capacity).
    let on_server = nodes_on_server(&env).await;
    assert_eq!(on_server.len(), fixture.len());
    let (code, expected) = offline_scan(&env, "server", &on_server);
    assert_eq!(code, 1, "the real nodes have issues: scan exits 1");
    assert_eq!(
        (expected.total_gpu_nodes, expected.ready_gpu_nodes),
        (11, 1)
    );

    // The fixture file itself, renamed like the test's nodes, reads the same node by node.
    let renamed: Vec<Node> = fixture
        .into_iter()
        .map(|mut n| {
            n.metadata.name = Some(env.node_name(n.metadata.name.as_deref().unwrap()));
            n
        })
        .collect();
    let (_, from_file) = offline_scan(&env, "fixture", &renamed);
    let by_reading = |s: &GpuInventoryStatus| -> Vec<_> {
        s.nodes
            .iter()
            .map(|e| {
                let (p, c, m, src, issues) = reading(e);
                (
                    e.name.clone(),
                    p.map(str::to_owned),
                    c,
                    m,
                    src.join(","),
                    issues.join(","),
                )
            })
            .collect()
    };
    assert_eq!(by_reading(&expected), by_reading(&from_file));

    let operator = env.start_operator("2s");
    let inventory = env
        .wait_inventory(
            &env.inventory_name(),
            CONVERGE,
            "the inventory of the real nodes",
            |s| s.nodes == expected.nodes,
        )
        .await;
    let status = inventory.status.unwrap();
    assert_eq!(
        (
            status.total_gpu_nodes,
            status.ready_gpu_nodes,
            status.total_gpus
        ),
        (
            expected.total_gpu_nodes,
            expected.ready_gpu_nodes,
            expected.total_gpus
        )
    );
    assert_eq!(conditions(&status), conditions(&expected));
    let gke = status
        .nodes
        .iter()
        .find(|e| e.name.contains("gke-k80"))
        .expect("the GKE node is a GPU node");
    assert_eq!(
        (gke.product.as_deref(), gke.sources.clone()),
        (Some("nvidia-tesla-k80"), vec!["cloud".to_owned()])
    );

    let configmap = env
        .wait_configmap(CONVERGE, "one key per real GPU node", |d| {
            d.len() == expected.nodes.len() + 1
        })
        .await;
    let data = configmap.data.unwrap();
    for entry in &expected.nodes {
        let value = data
            .get(&entry.name)
            .unwrap_or_else(|| panic!("ConfigMap key {}", entry.name));
        let in_configmap: GpuNodeEntry = serde_json::from_str(value).unwrap();
        assert_eq!(&in_configmap, entry, "{}", entry.name);
    }
    drop(operator);
}

/// A GPU node as a cloud provider without GPU Feature Discovery shows it: its cloud labels, and the device
/// plugin's `nvidia.com/gpu` in capacity and allocatable.
fn cloud_node(name: &str, labels: &[(&str, &str)], gpus: &str) -> Node {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": name, "labels": labels },
        "status": {
            "capacity": { "cpu": "8", "nvidia.com/gpu": gpus },
            "allocatable": { "cpu": "7910m", "nvidia.com/gpu": gpus }
        }
    }))
    .unwrap()
}

/// Creates the nodes and makes them Ready; `set_ready` hands them to KWOK, which keeps them Ready as a kubelet
/// would (without it, the node lifecycle controller would turn them Unknown after its grace period).
async fn create_ready_nodes(env: &TestEnv, nodes: Vec<Node>) -> Vec<String> {
    let mut names = Vec::new();
    for node in nodes {
        let name = env.create_node(node).await;
        env.set_ready(&name, "True").await;
        names.push(name);
    }
    names
}

#[tokio::test]
async fn a_fleet_without_gpu_feature_discovery_is_not_degraded() {
    let env = TestEnv::new("no-gfd").await;
    let operator = env.start_operator("2s");
    let inventory = env.inventory_name();
    env.wait_inventory(&inventory, CONVERGE, "the empty inventory", |s| {
        s.conditions.iter().any(|c| c.reason == "NoGpuNodes")
    })
    .await;

    let k8s_node1 = fixture_nodes("real-nodes.yaml")
        .into_iter()
        .find(|n| n.metadata.name.as_deref() == Some("k8s-device-plugin-issue-165-k8s-node1"))
        .unwrap();
    let fleet = vec![
        cloud_node(
            "gke-l4",
            &[("cloud.google.com/gke-accelerator", "nvidia-l4")],
            "1",
        ),
        cloud_node(
            "karpenter-g5",
            &[
                ("karpenter.k8s.aws/instance-gpu-name", "a10g"),
                ("karpenter.k8s.aws/instance-gpu-count", "4"),
                ("karpenter.k8s.aws/instance-gpu-memory", "24576"),
                ("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
            ],
            "4",
        ),
        cloud_node(
            "eks-g4dn",
            &[("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4")],
            "1",
        ),
        cloud_node(
            "aks-nc6",
            &[("kubernetes.azure.com/accelerator", "nvidia")],
            "1",
        ),
        k8s_node1,
    ];
    let names = create_ready_nodes(&env, fleet).await;
    let healthy = env
        .wait_inventory(
            &inventory,
            Duration::from_secs(20),
            "5 Ready GPU nodes, not Degraded",
            |s| {
                s.total_gpu_nodes == 5
                    && s.ready_gpu_nodes == 5
                    && s.conditions
                        .iter()
                        .any(|c| c.type_ == "Degraded" && c.status == "False")
            },
        )
        .await
        .status
        .unwrap();
    assert_eq!(healthy.total_gpus, 8, "1 + 4 + 1 + 1 + 1");
    for node in &healthy.nodes {
        assert!(node.issues.is_empty(), "{}: {:?}", node.name, node.issues);
    }
    let product = |suffix: &str| {
        healthy
            .nodes
            .iter()
            .find(|n| n.name.ends_with(suffix))
            .and_then(|n| n.product.clone())
    };
    assert_eq!(product("gke-l4").as_deref(), Some("nvidia-l4"));
    assert_eq!(product("karpenter-g5").as_deref(), Some("a10g"));
    assert_eq!(
        product("aks-nc6"),
        None,
        "AKS names the vendor, not the model"
    );

    let printed = std::process::Command::new("kubectl")
        .args([
            "--kubeconfig",
            &kubeconfig_path().display().to_string(),
            "get",
            "gpuinventory",
            &inventory,
        ])
        .output()
        .expect("run kubectl");
    let table = String::from_utf8_lossy(&printed.stdout);
    assert!(
        table.contains("AllGpuNodesReady"),
        "kubectl get gpuinventory: {table}"
    );
    assert_eq!(names.len(), 5);
    drop(operator);
}
