//! Topology against a real API server, the operator running: racks of GB200 nodes (the fixture's racks 1 and
//! 3) get `status.topology[]` and each GpuNode its `status.topology`; a cordon in a rack makes its NVLink
//! partition degraded (status, the Degraded condition, one Warning event) and the uncordon clears it; a node
//! losing its clique label while its rack mates keep theirs is `NvlinkCliqueMissing`.

mod common;

use std::time::Duration;

use common::{TestEnv, eventually, fixture_nodes};
use gpu_inventory_operator::crd::GpuInventoryStatus;

const CONVERGE: Duration = Duration::from_secs(30);
const CHANGE: Duration = Duration::from_secs(10);
const RACK_3: &str = "a2221497-dbce-4964-8826-684c3694fd45.2478";

/// The nodes of racks 1 and 3, every one Ready, schedulable and labelled (the test breaks them itself).
async fn two_healthy_racks(env: &TestEnv) {
    for mut node in fixture_nodes("topology/gb200-fleet.yaml") {
        let name = node.metadata.name.clone().unwrap_or_default();
        if !(name.starts_with("gb200-r1-") || name.starts_with("gb200-r3-")) {
            continue;
        }
        node.spec = None;
        if let Some(conditions) = node.status.as_mut().and_then(|s| s.conditions.as_mut()) {
            for c in conditions.iter_mut() {
                c.status = "True".into();
            }
        }
        if name == "gb200-r3-n03" {
            node.metadata
                .labels
                .as_mut()
                .unwrap()
                .insert("nvidia.com/gpu.clique".into(), RACK_3.into());
        }
        env.create_node(node).await;
    }
}

fn nvlink(
    status: &GpuInventoryStatus,
) -> Option<&gpu_inventory_operator::crd::TopologyLevelSummary> {
    status.topology.iter().find(|s| s.level == "nvlink")
}

fn degraded_message(status: &GpuInventoryStatus) -> String {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded")
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn racks_show_their_domains_and_a_cordon_degrades_its_partition_until_uncordoned() {
    let env = TestEnv::new("topology-racks").await;
    two_healthy_racks(&env).await;
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    // Both racks whole: every node Ready and untainted (the node lifecycle controller's `not-ready` taint on a
    // new node lasts until it reports Ready, and a tainted node offers nothing, as Kueue leaves it out).
    let healthy = env
        .wait_inventory(
            &inv,
            CONVERGE,
            "two healthy partitions, 72 GPUs each",
            |s| {
                nvlink(s).is_some_and(|n| {
                    n.domains_fitting
                        .iter()
                        .any(|f| f.at_least == 72 && f.domains == 2)
                }) && nvlink(s).is_some_and(|n| {
                    n.domains == 2 && n.largest_free_gpus == 72 && n.degraded_domains == 0
                })
            },
        )
        .await
        .status
        .unwrap();
    let block = healthy
        .topology
        .iter()
        .find(|s| s.level == "cloud.google.com/gce-topology-block")
        .expect("the block level");
    assert_eq!((block.domains, block.gpus_per_pod), (2, 4));
    let fits_72 = nvlink(&healthy)
        .unwrap()
        .domains_fitting
        .iter()
        .find(|f| f.at_least == 72)
        .map(|f| f.domains);
    assert_eq!(fits_72, Some(2), "{:?}", nvlink(&healthy));
    let member = env.node_name("gb200-r3-n07");
    let gpunode = env
        .wait_gpunode(&member, CONVERGE, "its places", |s| {
            !s.node.topology.is_empty()
        })
        .await;
    let places = &gpunode.status.unwrap().node.topology;
    assert_eq!(places.get("nvlink").map(String::as_str), Some(RACK_3));
    assert_eq!(
        places
            .get("cloud.google.com/gce-topology-subblock")
            .map(String::as_str),
        Some("subblock-3")
    );

    let cordoned = env.node_name("gb200-r3-n02");
    env.cordon(&cordoned, true).await;
    let degraded = env
        .wait_inventory(&inv, CHANGE, "rack 3 degraded", |s| {
            nvlink(s).is_some_and(|n| n.degraded_domains == 1)
        })
        .await
        .status
        .unwrap();
    let problem = &nvlink(&degraded).unwrap().problems[0];
    assert_eq!(
        (problem.reason.as_str(), problem.domain.as_str()),
        ("NvlinkDomainDegraded", RACK_3)
    );
    assert_eq!(problem.nodes, std::slice::from_ref(&cordoned));
    assert!(
        problem.message.contains("17 of 18 nodes usable")
            && problem.message.contains("a 72-GPU job cannot start here"),
        "{}",
        problem.message
    );
    assert!(
        degraded_message(&degraded).contains("NvlinkDomainDegraded: 1 domain"),
        "{}",
        degraded_message(&degraded)
    );
    // The healthy members of the degraded partition have no issue of their own.
    let mate = env.gpunode(&member).await.unwrap().status.unwrap();
    assert!(mate.node.issues.is_empty(), "{:?}", mate.node.issues);
    let warning = eventually(CHANGE, "the NvlinkDomainDegraded event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("NvlinkDomainDegraded"))
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(warning.message.unwrap_or_default().contains(&cordoned));

    env.cordon(&cordoned, false).await;
    env.wait_inventory(&inv, CHANGE, "rack 3 whole again", |s| {
        nvlink(s).is_some_and(|n| n.degraded_domains == 0)
    })
    .await;
    eventually(CHANGE, "the NvlinkDomainDegradedResolved event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("NvlinkDomainDegradedResolved"))
    })
    .await;
    env.cleanup().await;
}

#[tokio::test]
async fn a_node_losing_its_clique_while_its_rack_mates_keep_theirs_is_nvlink_clique_missing() {
    let env = TestEnv::new("topology-clique").await;
    two_healthy_racks(&env).await;
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "two partitions", |s| {
        nvlink(s).is_some_and(|n| n.domains == 2)
    })
    .await;
    let node = env.node_name("gb200-r3-n03");
    env.set_label(&node, "nvidia.com/gpu.clique", None).await;
    let gpunode = env
        .wait_gpunode(&node, CHANGE, "NvlinkCliqueMissing", |s| {
            s.node
                .issues
                .iter()
                .any(|i| i.reason == "NvlinkCliqueMissing")
        })
        .await
        .status
        .unwrap();
    let issue = gpunode
        .node
        .issues
        .iter()
        .find(|i| i.reason == "NvlinkCliqueMissing")
        .unwrap();
    assert_eq!(issue.severity, "Degraded");
    assert!(
        issue.message.contains("35 other NVIDIA-GB200 node(s)"),
        "{}",
        issue.message
    );
    assert!(!gpunode.node.topology.contains_key("nvlink"));
    let status = env
        .wait_inventory(&inv, CHANGE, "the problem node listed", |s| {
            s.problem_nodes.iter().any(|p| p.name == node)
        })
        .await
        .status
        .unwrap();
    // Rack 3's partition has 17 members now, all usable: no domain problem.
    assert_eq!(nvlink(&status).unwrap().degraded_domains, 0);
    eventually(CHANGE, "the NvlinkCliqueMissing event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("NvlinkCliqueMissing"))
    })
    .await;
    env.cleanup().await;
}
