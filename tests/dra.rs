//! DRA on the real scheduler and KWOK nodes: nodes known only by their ResourceSlices, claims the scheduler
//! allocates from ResourceClaimTemplates (whole GPUs and MIG devices) counted within 2 s and free again when
//! their pods go, pods waiting on GPU claims, and a server without `resource.k8s.io/v1` (Kubernetes 1.32).
//! Pools, generations, taints and deleted nodes are in tests/dra_pools.rs.

mod common;

use std::time::{Duration, Instant};

use common::allocation::{counts, entry, node_holds, wait_gpus_available};
use common::dra::{self, WHOLE};
use common::{OperatorProcess, TestEnv, eventually};
use gpu_inventory_operator::crd::GpuInventoryStatus;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};

const CONVERGE: Duration = Duration::from_secs(30);
/// The issue's promise: a claim allocated or released is in the status within 2 s.
const FOLLOW: Duration = Duration::from_secs(2);
const MIG: &str = "gpu.nvidia.com/mig-1g.10gb";

/// Nothing allocated / everything free on the node below.
const NONE_ALLOCATED: &[(&str, u64)] = &[(WHOLE, 0), (MIG, 0)];
const ALL_FREE: &[(&str, u64)] = &[(WHOLE, 2), (MIG, 2)];

/// On a server that serves DRA (the test fails on one that does not: it is gated in tests/version-gates.txt): a schedulable DRA node with two
/// whole GPUs and GPU 1 split into two 1g.10gb MIG devices, an operator, and its status once it counts them
/// all free.
async fn converged_on_dra_node(
    env: &TestEnv,
    test: &str,
) -> (String, OperatorProcess, GpuInventoryStatus) {
    dra::require_dra(&env.client, test).await;
    dra::ensure_device_classes(&env.client).await;
    let node = env.create_node(dra::dra_node("dra")).await;
    let parent = format!("GPU-{node}-1");
    let devices = vec![
        dra::gpu(0, &node),
        dra::gpu(2, &node),
        dra::mig("gpu-1-mig-1g10gb-0", "1g.10gb", &parent),
        dra::mig("gpu-1-mig-1g10gb-1", "1g.10gb", &parent),
    ];
    dra::publish_slice(env, &node, &format!("{node}-gpu"), 1, 1, devices).await;
    env.wait_schedulable(&node).await;
    let operator = env.start_operator("30s");
    let status = node_holds(
        env,
        Instant::now(),
        CONVERGE,
        &node,
        NONE_ALLOCATED,
        ALL_FREE,
    )
    .await;
    (node, operator, status)
}

#[tokio::test]
async fn claims_the_scheduler_allocates_are_counted_within_2_s_and_free_again_when_their_pods_go() {
    let env = TestEnv::new("dra-follow").await;
    let (node, operator, status) = converged_on_dra_node(&env, "dra-follow").await;
    let e = entry(&status, &node).unwrap();
    assert_eq!(e.sources, ["dra"]);
    assert_eq!(e.count, 3, "two whole GPUs and the MIG devices' parent");
    assert_eq!(e.product.as_deref(), Some("NVIDIA A100-SXM4-80GB"));
    assert_eq!(e.memory_mib, Some(81920));
    assert!(
        e.issues.is_empty(),
        "no GpuLabelsMissing or GpusNotAllocatable on a DRA node: {:?}",
        e.issues
    );
    assert!(
        e.devices.is_empty(),
        "devices one by one are for scan, not the status"
    );
    assert_eq!(status.free_gpus, 2);

    dra::claim_pod(&env, "train", &node, "gpu.nvidia.com", 1).await;
    dra::claim_pod(&env, "notebook", &node, "mig.nvidia.com", 1).await;
    let seen = dra::claims_allocated(&env, &["train", "notebook"]).await;
    let status = node_holds(
        &env,
        seen,
        FOLLOW,
        &node,
        &[(WHOLE, 1), (MIG, 1)],
        &[(WHOLE, 1), (MIG, 1)],
    )
    .await;
    assert_eq!(status.free_gpus, 1);
    let ns = status
        .namespaces
        .iter()
        .find(|n| n.name == env.namespace)
        .expect("the test's namespace");
    assert_eq!(ns.allocated, counts(&[(WHOLE, 1), (MIG, 1)]));
    let summary = status.resources.iter().find(|r| r.name == WHOLE).unwrap();
    assert_eq!(
        (
            summary.capacity,
            summary.allocatable,
            summary.allocated,
            summary.free
        ),
        (2, 2, 1, 1)
    );
    // Per device type on /metrics, as the status says.
    let (_, metrics) = operator.http_get("/metrics").await;
    let inventory = env.inventory_name();
    for (name, resource, value) in [
        ("resource_capacity", MIG, 2.0),
        ("resource_allocated", WHOLE, 1.0),
        ("resource_free", MIG, 1.0),
    ] {
        let series =
            format!("gpu_inventory_{name}{{inventory=\"{inventory}\",resource=\"{resource}\"}}");
        assert_eq!(
            common::metric(&metrics, &series),
            Some(value),
            "{series}: {metrics}"
        );
    }

    // `scan` of the same cluster lists the devices, the allocated ones with their claims.
    let scanned = common::fresh_scan::scan_status(&env);
    let devices = &entry(&scanned, &node).unwrap().devices;
    assert_eq!(devices.len(), 4);
    let held: Vec<&str> = devices
        .iter()
        .filter(|d| !d.allocated_to.is_empty())
        .map(|d| d.resource.as_str())
        .collect();
    assert_eq!(held.len(), 2, "{devices:?}");
    assert!(held.contains(&WHOLE) && held.contains(&MIG), "{devices:?}");
    assert!(devices.iter().all(|d| {
        d.allocated_to
            .iter()
            .all(|c| c.starts_with(&format!("{}/", env.namespace)))
    }));

    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    for pod in ["train", "notebook"] {
        pods.delete(pod, &DeleteParams::default()).await.unwrap();
    }
    let gone = eventually(CONVERGE, "the pods gone", || async {
        pods.list(&Default::default())
            .await
            .ok()?
            .items
            .is_empty()
            .then(Instant::now)
    })
    .await;
    // The claim controller releases the generated claims once their pods are gone; give it its time, then
    // the operator its 2 s.
    let released = dra::claims_released(&env).await.max(gone);
    node_holds(&env, released, FOLLOW, &node, NONE_ALLOCATED, ALL_FREE).await;
}

#[tokio::test]
async fn pods_waiting_on_gpu_claims_make_gpus_available_false() {
    let env = TestEnv::new("dra-demand").await;
    let (node, _operator, _) = converged_on_dra_node(&env, "dra-demand").await;
    dra::claim_pod(&env, "huge", &node, "gpu.nvidia.com", 9).await;
    let (status, condition) = wait_gpus_available(&env, CONVERGE, "False", |_| true).await;
    assert_eq!(condition.reason, "GpuDemandExceedsSupply");
    assert_eq!(
        condition.message,
        format!(
            "1 GPU pod waiting, unschedulable: {}: 1 pod (9 gpu.nvidia.com); 2 whole GPUs free",
            env.namespace
        )
    );
    assert_eq!(status.pending_gpu_pods, 1);

    Api::<Pod>::namespaced(env.client.clone(), &env.namespace)
        .delete("huge", &DeleteParams::default())
        .await
        .unwrap();
    wait_gpus_available(&env, CONVERGE, "True", |s| s.pending_gpu_pods == 0).await;
}

#[tokio::test]
async fn the_operator_says_once_whether_dra_is_served() {
    let env = TestEnv::new("dra-api").await;
    let served = env
        .client
        .list_api_group_resources("resource.k8s.io/v1")
        .await
        .is_ok();
    env.load_fixture_only("homelab-nodes.yaml", &["nuc1"]).await;
    let operator = env.start_operator("30s");
    env.wait_inventory(
        &env.inventory_name(),
        CONVERGE,
        "the GFD node inventoried",
        |s| s.total_gpu_nodes == 1,
    )
    .await;
    // Past one discovery refresh (30 s): an absent API is looked for again, quietly.
    tokio::time::sleep(Duration::from_secs(35)).await;
    let log = operator.log();
    let unavailable = log.matches("DRA unavailable").count();
    let watching = log.matches("DRA API served").count();
    if served {
        assert_eq!((unavailable, watching), (0, 1), "{log}");
    } else {
        assert_eq!(
            (unavailable, watching),
            (1, 0),
            "said once, not once per check: {log}"
        );
        assert!(log.contains("resource.k8s.io/v1"), "{log}");
    }
    assert!(
        !log.contains("WARN") && !log.contains("ERROR"),
        "nothing alarming: {log}"
    );
    let status = env
        .inventory(&env.inventory_name())
        .await
        .unwrap()
        .status
        .unwrap();
    assert_eq!((status.total_gpu_nodes, status.total_gpus), (1, 1));
}
