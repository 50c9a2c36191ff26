//! The GPU summary the multi-cluster way (docs/fleet.md), on a real API server of its own (tests/common/fleet):
//! the operator, with nothing but deploy/'s RBAC, keeps the `ClusterProperty` once about-api's CRD appears, follows
//! a change within 2 s and writes nothing in a quiet minute; on a hub with cluster-inventory-api's CRD, the
//! property copied into a `ClusterProfile` as a KEP-4322 cluster manager copies it (Open Cluster Management's hub
//! and agent do not run here: the test is that manager), and `fleet` shows it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::fleet::{
    CLUSTER_PROFILE_CRD, CLUSTER_PROPERTY_CRD, ExtraCluster, add_gpu_node, install_crd, set_ready,
    write_cluster_profile,
};
use common::offline_cli::{operator, plugin, row, text};
use common::{OperatorProcess, eventually, kubeconfig_path};
use gpu_inventory_operator::crd::{DEFAULT_CLUSTER_PROPERTY, cluster_property_resource};
use gpu_inventory_operator::publish::content::wire::read_summary_value;
use kube::api::{Api, DynamicObject};
use kube::config::Kubeconfig;
use serde_json::Value;

const H100: &str = "NVIDIA-H100-80GB-HBM3";
/// deploy/'s namespace and service account.
const NAMESPACE: &str = "gpu-inventory-system";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:gpu-inventory-system:gpu-inventory-operator";

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("run kubectl")
}

/// The cluster's kubeconfig, impersonating deploy/'s service account.
fn as_service_account(cluster: &ExtraCluster) -> PathBuf {
    let mut config = Kubeconfig::read_from(&cluster.kubeconfig).unwrap();
    for named in &mut config.auth_infos {
        if let Some(auth) = named.auth_info.as_mut() {
            auth.impersonate = Some(SERVICE_ACCOUNT.to_owned());
        }
    }
    let path = cluster.state_dir.join("operator-kubeconfig.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

/// The ClusterProperty's value, if it is there.
async fn property(api: &Api<DynamicObject>) -> Option<(String, String)> {
    let object = api.get_opt(DEFAULT_CLUSTER_PROPERTY).await.unwrap()?;
    let value = object.data["spec"]["value"].as_str()?.to_owned();
    Some((value, object.metadata.resource_version.unwrap_or_default()))
}

fn writes(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("updated ClusterProperty"))
        .count()
}

#[tokio::test]
async fn the_cluster_property_follows_the_gpus_and_a_hub_shows_it() {
    let cluster = ExtraCluster::up("fleet-prop").await;
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let applied = kubectl(
        &cluster.kubeconfig,
        &["apply", "-k", deploy.to_str().unwrap()],
    );
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );
    add_gpu_node(&cluster.client, "h100-1", H100, 8, &[]).await;
    add_gpu_node(&cluster.client, "h100-2", H100, 8, &[]).await;
    let mut operator_process = OperatorProcess::start(
        &format!("fleet-prop-{}", std::process::id()),
        &[
            "run",
            "--kubeconfig",
            as_service_account(&cluster).to_str().unwrap(),
            "--namespace",
            NAMESPACE,
            "--requeue",
            "5s",
            "--metrics-addr",
            "127.0.0.1:0",
        ]
        .map(str::to_owned),
    );

    // No about-api yet: said once, and nothing written.
    eventually(
        Duration::from_secs(30),
        "the ClusterProperty API said absent",
        || async {
            operator_process
                .log()
                .contains("ClusterProperties (about.k8s.io) unavailable")
                .then_some(())
        },
    )
    .await;

    // about-api's CRD installed: found at the next discovery (every 30 s), the summary written.
    install_crd(&cluster.client, CLUSTER_PROPERTY_CRD).await;
    let resource = cluster_property_resource("v1beta1");
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
    let (value, _) = eventually(Duration::from_secs(50), "the ClusterProperty", || {
        property(&api)
    })
    .await;
    let summary = read_summary_value(&value).unwrap();
    assert_eq!(
        (summary.nodes, summary.gpus, summary.free, summary.unhealthy),
        (2, 16, 16, 0)
    );
    assert_eq!(summary.products[0].product, H100);
    assert_eq!(summary.products[0].largest_free_gang, 8);
    assert!(value.len() <= 1024);

    // A node goes NotReady: the property follows within 2 s.
    let changed = Instant::now();
    set_ready(&cluster.client, "h100-2", false).await;
    let (value, version) = eventually(
        Duration::from_secs(10),
        "the property after the change",
        || async {
            let (value, version) = property(&api).await?;
            (read_summary_value(&value).ok()?.unhealthy == 8).then_some((value, version))
        },
    )
    .await;
    let followed = changed.elapsed();
    println!("the ClusterProperty followed the change in {followed:?}");
    assert!(followed <= Duration::from_secs(2), "{followed:?}");

    // A quiet minute (requeues every 5 s): not rewritten.
    let written = writes(&operator_process.log());
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (_, after) = property(&api).await.unwrap();
    assert_eq!(after, version, "rewritten in a quiet minute");
    assert_eq!(
        writes(&operator_process.log()),
        written,
        "{}",
        operator_process.log()
    );
    assert!(
        !operator_process
            .log()
            .to_ascii_lowercase()
            .contains("forbidden"),
        "deploy/'s RBAC suffices:\n{}",
        operator_process.log()
    );
    // That RBAC grants this one name, nothing else of the group.
    for (verb, object, allowed) in [
        (
            "patch",
            format!("clusterproperties.about.k8s.io/{DEFAULT_CLUSTER_PROPERTY}"),
            "yes",
        ),
        (
            "patch",
            "clusterproperties.about.k8s.io/cluster.clusterset.k8s.io".to_owned(),
            "no",
        ),
        (
            "delete",
            format!("clusterproperties.about.k8s.io/{DEFAULT_CLUSTER_PROPERTY}"),
            "no",
        ),
    ] {
        let out = kubectl(
            &cluster.kubeconfig,
            &["auth", "can-i", verb, &object, "--as", SERVICE_ACCOUNT],
        );
        assert_eq!(text(&out).trim(), allowed, "{verb} {object}");
    }
    operator_process.signal("TERM");
    let _ = operator_process.wait_exit(Duration::from_secs(10));

    // The hub (this cluster again): the property as a cluster manager copies it into a ClusterProfile, one
    // profile of a member without the operator, one of a member on a newer format.
    install_crd(&cluster.client, CLUSTER_PROFILE_CRD).await;
    let newer = r#"{"v":2,"nodes":1,"gpus":8,"free":8,"unhealthy":0}"#;
    for (name, properties) in [
        ("lab-p", vec![(DEFAULT_CLUSTER_PROPERTY, value.as_str())]),
        ("cpu-only", vec![("cluster.clusterset.k8s.io", "cpu-only")]),
        ("upgraded", vec![(DEFAULT_CLUSTER_PROPERTY, newer)]),
    ] {
        write_cluster_profile(&cluster.client, "fleet-system", name, &properties).await;
    }
    let hub = cluster.kubeconfig.to_str().unwrap();
    let out = operator(&["fleet", "--kubeconfig", hub]);
    let table = text(&out);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a summary that does not read:\n{table}"
    );
    assert_eq!(
        row(&table, "fleet-system/lab-p"),
        [
            "fleet-system/lab-p",
            "2",
            "16",
            "8",
            "8",
            "NVIDIA-H100-80GB-HBM3 16 (8 free)"
        ]
    );
    assert!(
        row(&table, "fleet-system/cpu-only")
            .last()
            .unwrap()
            .contains("no gpus.homelab.youngju.dev property")
    );
    assert!(
        row(&table, "fleet-system/upgraded")
            .last()
            .unwrap()
            .contains("version 2"),
        "{table}"
    );
    assert!(table.contains("FLEET: 1 of 3 cluster(s) read"), "{table}");
    assert_eq!(
        row(&table, "nvidia"),
        [
            "nvidia",
            H100,
            "1",
            "16",
            "8",
            "8",
            "8 (fleet-system/lab-p)"
        ]
    );
    let out = plugin(
        "fleet-hub",
        &[
            "--kubeconfig",
            hub,
            "fleet",
            "-n",
            "fleet-system",
            "-o",
            "json",
        ],
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["clusters"][0]["cluster"], "fleet-system/lab-p");
    assert_eq!(json["clusters"][0]["summary"]["gpus"], 16);
    assert!(json["clusters"][0]["observed"].is_string());
    assert_eq!(
        json["withoutSummary"],
        serde_json::json!(["fleet-system/cpu-only"])
    );
    assert_eq!(json["errors"][0]["cluster"], "fleet-system/upgraded");
    assert_eq!(json["totals"]["unhealthy"], 8);

    // A cluster that is no hub: said so.
    let out = operator(&["fleet", "--kubeconfig", kubeconfig_path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("serves no ClusterProfiles"), "{said}");
}
