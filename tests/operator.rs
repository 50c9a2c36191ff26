//! The article's operator against a real API server: CRD, inventory, ConfigMap, and both pitfalls.

mod common;

use std::time::Duration;

use common::{TEST_LABEL, TestEnv, eventually, is_homelab, kubeconfig_path};
use gpu_inventory_operator::crd::{CRD_NAME, GpuInventory, GpuInventoryStatus};
use gpu_inventory_operator::publish::crd as crd_install;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(30);
const REACT: Duration = Duration::from_secs(2);

/// Home-lab nodes loaded, operator started, inventory and ConfigMap converged.
async fn converged_home_lab(test: &str) -> (TestEnv, common::OperatorProcess) {
    let env = TestEnv::new(test).await;
    env.load_fixture("homelab-nodes.yaml").await;
    let operator = env.start_operator("2s");
    env.wait_inventory(
        &env.inventory_name(),
        CONVERGE,
        "the home-lab inventory",
        is_homelab,
    )
    .await;
    env.wait_configmap(CONVERGE, "the ConfigMap's 4 node entries", |d| d.len() == 5)
        .await;
    (env, operator)
}

#[tokio::test]
async fn crd_installs_itself_and_matches_the_crd_subcommand() {
    let (env, operator) = converged_home_lab("crd").await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let printed = std::process::Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .arg("crd")
        .output()
        .unwrap();
    assert!(printed.status.success());
    let text = String::from_utf8(printed.stdout).unwrap();
    let printed: Vec<CustomResourceDefinition> = text
        .split("\n---\n")
        .map(|doc| serde_saphyr::from_str(doc).expect("crd prints YAML documents"))
        .collect();
    let names: Vec<&str> = printed
        .iter()
        .map(|c| c.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, [CRD_NAME, "gpunodes.homelab.youngju.dev"]);
    let short: Vec<_> = printed
        .iter()
        .map(|c| c.spec.names.short_names.clone())
        .collect();
    assert_eq!(
        short,
        [
            Some(vec!["gpuinv".to_owned()]),
            Some(vec!["gpunode".to_owned()])
        ]
    );
    for crd in &printed {
        let name = crd.metadata.name.as_deref().unwrap();
        let installed = crds.get(name).await.expect("CRD installed");
        let established = installed
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Established" && c.status == "True");
        assert!(established, "CRD {name} is Established");
        assert_eq!(crd.spec.scope, "Cluster");
        // The server adds defaults (listKind, conversion); every field we print must be what the server holds.
        let ours = serde_json::to_value(&crd.spec).unwrap();
        let theirs = serde_json::to_value(&installed.spec).unwrap();
        assert_eq!(
            crd_install::not_contained(&ours, &theirs, "spec"),
            None,
            "{name}"
        );
    }
    drop(operator);
}

#[tokio::test]
async fn home_lab_inventory_matches_the_article() {
    let (env, _operator) = converged_home_lab("homelab").await;
    let inv = env.inventory(&env.inventory_name()).await.unwrap();
    let status = inv.status.unwrap();
    let names: Vec<String> = status.nodes.iter().map(|n| n.name.clone()).collect();
    assert_eq!(
        names,
        ["nuc1", "nuc2", "omen", "omen2"].map(|n| env.node_name(n))
    );
    let nuc1 = &status.nodes[0];
    assert_eq!(
        nuc1.product.as_deref(),
        Some("NVIDIA-GeForce-RTX-4070-Laptop-GPU-SHARED")
    );
    assert_eq!(
        (nuc1.ready, nuc1.count, nuc1.memory_mib),
        (false, 1, Some(8188))
    );
    assert_eq!(nuc1.workload_config.as_deref(), Some("vm-passthrough"));
    for n in &status.nodes[1..] {
        assert_eq!(
            (n.ready, n.product.as_deref(), n.count, n.memory_mib),
            (false, None, 0, None),
            "{}",
            n.name
        );
    }
    assert_eq!(
        status.nodes[3].workload_config.as_deref(),
        Some("container")
    );
    assert!(status.observed_time.is_some());
    assert_eq!(status.observed_generation, inv.metadata.generation);
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "GpuNodesNotReady")
    );

    let cm = env.configmap().await.unwrap();
    let data = cm.data.unwrap();
    let entry: serde_json::Value = serde_json::from_str(&data[&env.node_name("nuc1")]).unwrap();
    assert_eq!(
        entry["product"],
        "NVIDIA-GeForce-RTX-4070-Laptop-GPU-SHARED"
    );
    assert_eq!(entry["memoryMiB"], 8188);
    let omen: serde_json::Value = serde_json::from_str(&data[&env.node_name("omen")]).unwrap();
    assert_eq!(omen["product"], serde_json::Value::Null);
    let summary: serde_json::Value = serde_json::from_str(&data["_summary"]).unwrap();
    assert_eq!(
        (
            summary["totalGpuNodes"].as_u64(),
            summary["totalGpus"].as_u64()
        ),
        (Some(4), Some(1))
    );
    assert!(
        _operator.log().contains(&format!(
            "reconciled GpuInventory cr={} gpu_nodes=4 ready=0 gpus=1",
            env.inventory_name()
        )),
        "the article's log line:\n{}",
        _operator.log()
    );
}

#[tokio::test]
async fn pitfall_1_status_apply_needs_api_version_and_kind() {
    let env = TestEnv::new("pitfall1").await;
    crd_install::install_crd(&env.client, Duration::from_secs(30))
        .await
        .expect("install CRD");
    let api: Api<GpuInventory> = Api::all(env.client.clone());
    let mut inv: GpuInventory = serde_json::from_value(json!({
        "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuInventory",
        "metadata": { "name": env.inventory_name(), "labels": { TEST_LABEL: env.id } },
        "spec": { "note": "pitfall 1" }
    }))
    .unwrap();
    inv = api.create(&PostParams::default(), &inv).await.unwrap();
    let params = PatchParams::apply("gpu-inventory-operator").force();
    let bare = json!({ "status": { "totalGpuNodes": 1 } });
    let err = api
        .patch_status(&env.inventory_name(), &params, &Patch::Apply(bare))
        .await
        .expect_err("rejected");
    assert!(
        err.to_string().contains("invalid object type"),
        "the article's error: {err}"
    );
    let status = GpuInventoryStatus {
        total_gpu_nodes: 1,
        ..Default::default()
    };
    let ours = gpu_inventory_operator::publish::status::status_apply_body(&status);
    let applied = api
        .patch_status(&env.inventory_name(), &params, &Patch::Apply(ours))
        .await
        .expect("accepted");
    assert_eq!(applied.status.unwrap().total_gpu_nodes, 1);
    assert!(inv.metadata.uid.is_some());
}

#[tokio::test]
async fn pitfall_2_nothing_is_written_while_nothing_changes() {
    let (env, operator) = converged_home_lab("pitfall2").await;
    // Let the start-up writes settle, then watch two requeue periods (2 s each) go by.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let inv_rv = env
        .inventory(&env.inventory_name())
        .await
        .unwrap()
        .metadata
        .resource_version;
    let cm_rv = env.configmap().await.unwrap().metadata.resource_version;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        env.inventory(&env.inventory_name())
            .await
            .unwrap()
            .metadata
            .resource_version,
        inv_rv
    );
    assert_eq!(
        env.configmap().await.unwrap().metadata.resource_version,
        cm_rv
    );
    let log = operator.log();
    assert_eq!(
        log.matches("reconciled GpuInventory").count(),
        1,
        "one status write only:\n{log}"
    );
    assert_eq!(
        log.matches("updated node-status ConfigMap").count(),
        1,
        "one ConfigMap write only:\n{log}"
    );
}

/// An operator that loses its Lease exits and is restarted (by its Deployment; the soak does the same): a
/// start with the CRD and the default inventory already in place writes neither (the soak's audit log counted
/// the CRD patch and the default inventory's create in its quiet minute before this).
#[tokio::test]
async fn a_restart_writes_neither_the_crd_nor_the_default_inventory() {
    let (env, first) = converged_home_lab("restart").await;
    assert!(
        first.log().contains("CRD installed and established"),
        "{}",
        first.log()
    );
    let rv = env
        .inventory(&env.inventory_name())
        .await
        .unwrap()
        .metadata
        .resource_version;
    drop(first);
    let second = env.start_operator("2s");
    let log = eventually(CONVERGE, "the restarted operator's CRD check", || async {
        let log = second.log();
        log.contains("CRD installed and established").then_some(log)
    })
    .await;
    assert!(
        log.contains("CRD already installed as this version defines it; not applied"),
        "{log}"
    );
    assert!(!log.contains("CRD applied"), "{log}");
    assert!(!log.contains("created default GpuInventory"), "{log}");
    // It converges on the inventory it found, whose status it finds already right: nothing written.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let inventory = env.inventory(&env.inventory_name()).await.unwrap();
    assert!(is_homelab(inventory.status.as_ref().unwrap()));
    assert_eq!(inventory.metadata.resource_version, rv);
}

#[tokio::test]
async fn node_changes_reach_status_and_configmap_within_two_seconds() {
    let (env, _operator) = converged_home_lab("react").await;
    let inv = env.inventory_name();
    let nuc1 = env.node_name("nuc1");

    env.set_ready(&nuc1, "True").await;
    env.wait_inventory(&inv, REACT, "nuc1 Ready in the status", |s| {
        s.ready_gpu_nodes == 1
    })
    .await;
    env.wait_configmap(REACT, "nuc1 Ready in the ConfigMap", |d| {
        d[&nuc1].contains("\"ready\":true")
    })
    .await;

    env.set_label(&nuc1, "nvidia.com/gpu.count", Some("2"))
        .await;
    env.wait_inventory(&inv, REACT, "2 GPUs on nuc1", |s| s.total_gpus == 2)
        .await;
    env.wait_configmap(REACT, "count 2 in the ConfigMap", |d| {
        d[&nuc1].contains("\"count\":2")
    })
    .await;

    let omen = env.node_name("omen");
    env.delete_node(&omen).await;
    env.wait_inventory(&inv, REACT, "omen gone from the status", |s| {
        s.total_gpu_nodes == 3
    })
    .await;
    env.wait_configmap(REACT, "omen gone from the ConfigMap", |d| {
        !d.contains_key(&omen)
    })
    .await;
}

#[tokio::test]
async fn a_deleted_configmap_comes_back_and_hand_edits_are_undone() {
    let (env, _operator) = converged_home_lab("configmap").await;
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), &env.namespace);
    api.delete("gpu-node-status", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_configmap(Duration::from_secs(5), "the ConfigMap recreated", |d| {
        d.len() == 5
    })
    .await;

    let nuc2 = env.node_name("nuc2");
    let original = env.configmap().await.unwrap().data.unwrap()[&nuc2].clone();
    let edit = json!({ "data": { nuc2.clone(): "{\"hand\":\"edited\"}", "stray-key": "x" } });
    api.patch(
        "gpu-node-status",
        &PatchParams::default(),
        &Patch::Merge(edit),
    )
    .await
    .unwrap();
    env.wait_configmap(Duration::from_secs(5), "the hand edit undone", |d| {
        d[&nuc2] == original && !d.contains_key("stray-key")
    })
    .await;
}

#[tokio::test]
async fn two_inventories_with_different_selectors() {
    let (env, _operator) = converged_home_lab("selectors").await;
    let api: Api<GpuInventory> = Api::all(env.client.clone());
    let vm_name = format!("{}-vm", env.id);
    let vm: GpuInventory = serde_json::from_value(json!({
        "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuInventory",
        "metadata": { "name": vm_name, "labels": { TEST_LABEL: env.id } },
        "spec": { "note": "VM passthrough pool", "nodeSelector": {
            "matchLabels": { "nvidia.com/gpu.workload.config": "vm-passthrough" } } }
    }))
    .unwrap();
    api.create(&PostParams::default(), &vm).await.unwrap();
    let status = env
        .wait_inventory(&vm_name, CONVERGE, "the vm-passthrough inventory", |s| {
            s.total_gpu_nodes == 3
        })
        .await;
    let names: Vec<String> = status
        .status
        .unwrap()
        .nodes
        .into_iter()
        .map(|n| n.name)
        .collect();
    assert_eq!(names, ["nuc1", "nuc2", "omen"].map(|n| env.node_name(n)));
    let all = env
        .inventory(&env.inventory_name())
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!(
        all.total_gpu_nodes, 4,
        "the default inventory still covers all four"
    );
}

#[tokio::test]
async fn kubectl_get_shows_the_printer_columns() {
    let (env, _operator) = converged_home_lab("kubectl").await;
    let name = env.inventory_name();
    let output = eventually(CONVERGE, "kubectl get gpuinv", || async {
        let out = std::process::Command::new("kubectl")
            .args([
                "--kubeconfig",
                &kubeconfig_path().display().to_string(),
                "get",
                "gpuinv",
                &name,
            ])
            .output()
            .expect("kubectl runs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        out.status.success().then_some(text)
    })
    .await;
    let mut lines = output.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "GPU-NODES",
            "READY",
            "GPUS",
            "FREE",
            "FREE-BY-VENDOR",
            "STATUS",
            "AGE"
        ]
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    // FREE is 0: no home-lab node is Ready, so no GPU can be handed out now.
    assert_eq!(
        &row[..7],
        [
            name.as_str(),
            "4",
            "0",
            "1",
            "0",
            "nvidia=0",
            "GpuNodesNotReady"
        ]
    );
}
