//! The foundation: the test cluster is a real API server with RBAC, and nodes keep their status on create.

mod common;

use common::TestEnv;
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

#[tokio::test]
async fn a_home_lab_node_is_created_not_ready_and_read_back() {
    let env = TestEnv::new("cluster-node").await;
    let names = env.load_fixture("homelab-nodes.yaml").await;
    assert_eq!(names.len(), 8);
    let nodes: Api<Node> = Api::all(env.client.clone());
    let nuc1 = nodes
        .get(&env.node_name("nuc1"))
        .await
        .expect("read nuc1 back");
    let ready = nuc1
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .expect("Ready condition kept on create");
    assert_eq!(ready.status, "False");
    assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
    let labels = nuc1.metadata.labels.unwrap();
    assert_eq!(
        labels["nvidia.com/gpu.product"],
        "NVIDIA-GeForce-RTX-4070-Laptop-GPU-SHARED"
    );

    env.set_ready(&env.node_name("nuc1"), "True").await;
    let nuc1 = nodes.get(&env.node_name("nuc1")).await.unwrap();
    let ready = nuc1
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "True", "status subresource changes are kept");
}

#[tokio::test]
async fn rbac_is_enforced() {
    let env = TestEnv::new("cluster-rbac").await;
    let mut config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(common::kubeconfig_path()).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    config.auth_info.impersonate = Some("system:serviceaccount:nobody:nobody".into());
    let nobody = kube::Client::try_from(config).unwrap();
    let err = Api::<Node>::all(nobody)
        .list(&Default::default())
        .await
        .expect_err("RBAC must refuse");
    assert!(err.to_string().contains("forbidden"), "{err}");
    drop(env);
}
