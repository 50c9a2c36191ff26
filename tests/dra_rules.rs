//! DRA as Kubernetes 1.36-1.37 runs it, on the real scheduler and API server: a pod asking for
//! `nvidia.com/gpu` placed on a DRA node through a claim the scheduler makes (KEP-5004) is counted once; a
//! DeviceTaintRule takes a device out of the free ones and names itself until it is deleted; a device the
//! kubelet reports `Unhealthy` in a pod's status (KEP-4680) is an issue until it clears; a device two claims
//! share (KEP-5075) is counted once with what they consumed; partitions the scheduler allocates from shared
//! counters in a slice of their own (KEP-4815) leave what still fits.

mod common;

use std::time::Duration;

use common::dra::{self, CONVERGE, Pool, reasons, wait_entry};
use common::{DeleteOnDrop, TestEnv, eventually};
use gpu_inventory_operator::sources::taint_rules::{taint_rule_resource, taint_rules_served};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The scheduler places a pod within seconds; the rest of this is the claim's round trips.
const SCHEDULE: Duration = Duration::from_secs(60);

async fn server_minor(client: &Client) -> u32 {
    let version = client.apiserver_version().await.expect("server version");
    version
        .minor
        .trim_end_matches('+')
        .parse()
        .expect("minor version")
}

/// Deletes a cluster-scoped object when the test ends, passed or not (`kubectl delete`, synchronous).
/// A pod pinned to `node` asking for one `nvidia.com/gpu`, tolerating `toleration` (a taint key) if given.
fn one_gpu_pod(name: &str, node: &str, toleration: Option<&str>) -> Pod {
    let tolerations: Vec<Value> = toleration
        .map(|key| json!({ "key": key, "operator": "Exists" }))
        .into_iter()
        .collect();
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "nodeSelector": { "kubernetes.io/hostname": node },
            "tolerations": tolerations,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "limits": { "nvidia.com/gpu": "1" } } }]
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn a_pod_asking_nvidia_gpu_placed_on_a_dra_node_through_a_scheduler_made_claim_is_counted_once()
 {
    let env = TestEnv::new("dra-extended").await;
    dra::require_dra(&env.client, "dra-extended").await;
    // A driver and a class of this test's own, so that no other test's DRA nodes serve nvidia.com/gpu
    // through it, and its node tainted, so that no other test's nvidia.com/gpu pod lands there.
    let driver = format!("{}.gpu.example.com", env.id);
    let class = format!("{}-gpu.example.com", env.id);
    let spec = json!({
        "selectors": [{ "cel": { "expression": format!("device.driver == '{driver}'") } }],
        "extendedResourceName": "nvidia.com/gpu"
    });
    let (stored, _class_cleanup) = dra::test_device_class(&env, &class, spec).await;
    assert_eq!(
        stored
            .spec
            .as_ref()
            .and_then(|s| s.extended_resource_name.as_deref()),
        Some("nvidia.com/gpu"),
        "the API server dropped spec.extendedResourceName: it needs the DRAExtendedResource feature gate \
         (GA and on by default in Kubernetes 1.37)"
    );
    let node = env.create_node(dra::dra_node("extended")).await;
    let pool = Pool {
        driver: &driver,
        generation: 1,
        slice_count: 1,
    };
    let devices = vec![dra::gpu(0, &node), dra::gpu(1, &node)];
    dra::publish_pool_slice(&env, &node, &format!("{node}-gpu"), pool, devices).await;
    env.wait_schedulable(&node).await;
    let taint = json!({ "spec": { "taints": [{ "key": "gpuinv-test/dra-extended", "value": env.id,
                                                "effect": "NoSchedule" }] } });
    Api::<Node>::all(env.client.clone())
        .patch(&node, &PatchParams::default(), &Patch::Merge(taint))
        .await
        .expect("tainting the DRA node");
    let _operator = env.start_operator_with("30s", &["--dra-driver", &driver]);
    let (_, before) = wait_entry(&env, "the DRA node serving nvidia.com/gpu", &node, |e| {
        e.free.get("nvidia.com/gpu") == Some(&2)
    })
    .await;
    assert_eq!(
        before.dra_extended_resources.get("nvidia.com/gpu"),
        Some(&class),
        "the entry says DRA serves nvidia.com/gpu here, through which class"
    );
    assert!(
        !before.capacity.contains_key("gpu.nvidia.com/gpu"),
        "{:?}",
        before.capacity
    );

    let pod = dra::create_pod(
        &env,
        one_gpu_pod("train", &node, Some("gpuinv-test/dra-extended")),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    let claim = eventually(
        SCHEDULE,
        "the scheduler binding the pod through a claim it made",
        || async {
            let pod = pods.get(&pod).await.ok()?;
            pod.spec.as_ref()?.node_name.as_ref()?;
            Some(
                pod.status?
                    .extended_resource_claim_status?
                    .resource_claim_name,
            )
        },
    )
    .await;
    let (status, e) = wait_entry(&env, "the pod's GPU counted once", &node, |e| {
        e.allocated.get("nvidia.com/gpu") == Some(&1)
    })
    .await;
    assert!(
        e.issues.is_empty(),
        "no Overcommitted or GpusNotAllocatable for a request the claim meets: {:?}",
        e.issues
    );
    assert_eq!(e.free.get("nvidia.com/gpu"), Some(&1));
    assert_eq!(
        e.allocated.len(),
        1,
        "one name for the GPU, not also gpu.nvidia.com/gpu: {:?}",
        e.allocated
    );
    let usage = status
        .namespaces
        .iter()
        .find(|n| n.name == env.namespace)
        .expect("the test's namespace");
    assert_eq!(
        usage.allocated.get("nvidia.com/gpu"),
        Some(&1),
        "counted once in the namespace (claim {claim}): {:?}",
        usage.allocated
    );
    assert_eq!(usage.allocated.len(), 1, "{:?}", usage.allocated);
    // The device holding it is the claim's, in the node's GpuNode.
    let gpunode = env
        .wait_gpunode(&node, CONVERGE, "the GpuNode with the claim", |s| {
            s.node
                .devices
                .iter()
                .any(|d| d.allocated_to == [format!("{}/{claim}", env.namespace)])
        })
        .await;
    let devices = &gpunode.status.unwrap().node.devices;
    assert!(
        devices.iter().all(|d| d.resource == "nvidia.com/gpu"),
        "{devices:?}"
    );
}

#[tokio::test]
async fn a_device_taint_rule_removes_a_device_from_free_and_names_itself_until_deleted() {
    let env = TestEnv::new("dra-taint-rule").await;
    dra::require_dra(&env.client, "dra-taint-rule").await;
    let minor = server_minor(&env.client).await;
    let Some(version) = taint_rules_served(&env.client).await else {
        panic!(
            "Kubernetes 1.{minor} serves no DeviceTaintRules: resource.k8s.io/v1 serves them from 1.37, \
             v1alpha3 from 1.33 with --runtime-config=resource.k8s.io/v1alpha3=true and the DRADeviceTaints \
             gate (hack/local-cluster.sh sets both); `make integration-test` does not run this test before \
             1.34 (tests/version-gates.txt)"
        )
    };
    let node = env.create_node(dra::dra_node("rule")).await;
    let devices = (0..4).map(|i| dra::gpu(i, &node)).collect();
    dra::publish_slice(&env, &node, &format!("{node}-gpu"), 1, 1, devices).await;
    let _operator = env.start_operator("30s");
    wait_entry(&env, "four free GPUs", &node, |e| {
        e.free.get(dra::WHOLE) == Some(&4) && e.issues.is_empty()
    })
    .await;

    let rules: Api<DynamicObject> =
        Api::all_with(env.client.clone(), &taint_rule_resource(version));
    let rule = |name: &str, device: &str, effect: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": format!("resource.k8s.io/{version}"), "kind": "DeviceTaintRule",
            "metadata": { "name": name },
            "spec": {
                "deviceSelector": { "driver": dra::DRIVER, "pool": node, "device": device },
                "taint": { "key": "example.com/maintenance", "value": "ticket-42", "effect": effect }
            }
        }))
        .unwrap()
    };
    let drain = format!("{}-drain", env.id);
    let inform = format!("{}-inform", env.id);
    let _cleanup = DeleteOnDrop(vec![
        format!("devicetaintrules.{version}.resource.k8s.io/{drain}"),
        format!("devicetaintrules.{version}.resource.k8s.io/{inform}"),
    ]);
    rules
        .create(&PostParams::default(), &rule(&drain, "gpu-1", "NoSchedule"))
        .await
        .unwrap_or_else(|e| panic!("creating DeviceTaintRule {drain}: {e}"));
    // `None` (inform only) is a valid effect from 1.35.
    let informs = minor >= 35;
    if informs {
        rules
            .create(&PostParams::default(), &rule(&inform, "gpu-2", "None"))
            .await
            .unwrap_or_else(|e| panic!("creating DeviceTaintRule {inform}: {e}"));
    }
    let (status, e) = wait_entry(&env, "GpuDeviceTainted by the rule", &node, |e| {
        reasons(e) == ["GpuDeviceTainted"]
    })
    .await;
    assert_eq!(e.free.get(dra::WHOLE), Some(&3), "{:?}", e.free);
    assert_eq!(e.allocatable.get(dra::WHOLE).map(String::as_str), Some("3"));
    assert_eq!(e.count, 4, "a tainted GPU is still a GPU of the node");
    assert!(
        e.issues[0].message.contains(&format!(
            "gpu-1 (example.com/maintenance=ticket-42:NoSchedule (DeviceTaintRule {drain}))"
        )),
        "{}",
        e.issues[0].message
    );
    assert!(
        !e.issues[0].message.contains("gpu-2"),
        "a None taint is no issue: {}",
        e.issues[0].message
    );
    assert_eq!(status.free_gpus, 3);
    let gpunode = env
        .wait_gpunode(&node, CONVERGE, "the GpuNode with the rules' taints", |s| {
            let tainted = |name: &str| {
                s.node
                    .devices
                    .iter()
                    .any(|d| d.name == name && !d.taints.is_empty())
            };
            tainted("gpu-1") && (!informs || tainted("gpu-2"))
        })
        .await;
    let devices = gpunode.status.unwrap().node.devices;
    let device = |name: &str| devices.iter().find(|d| d.name == name).unwrap();
    assert!(!device("gpu-1").free);
    if informs {
        assert!(device("gpu-2").free, "a None taint is shown, not counted");
        assert_eq!(
            device("gpu-2").taints,
            [format!(
                "example.com/maintenance=ticket-42:None (DeviceTaintRule {inform})"
            )]
        );
    } else {
        eprintln!("not checked on Kubernetes 1.{minor}: a None-effect rule (valid from 1.35)");
    }

    rules
        .delete(&drain, &DeleteParams::default())
        .await
        .unwrap_or_else(|e| panic!("deleting DeviceTaintRule {drain}: {e}"));
    let (status, e) = wait_entry(&env, "the device back once the rule is gone", &node, |e| {
        e.issues.is_empty()
    })
    .await;
    assert_eq!(e.free.get(dra::WHOLE), Some(&4));
    assert_eq!(status.free_gpus, 4);
}

#[tokio::test]
async fn a_pod_s_allocated_device_reported_unhealthy_is_an_issue_until_it_clears() {
    let env = TestEnv::new("device-health").await;
    let list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2" });
    let gpu_node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "health", "labels": { "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                                    "nvidia.com/gpu.count": "2" } },
        "status": { "capacity": list, "allocatable": list,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }] }
    }))
    .unwrap();
    let node = env.create_node(gpu_node).await;
    env.wait_schedulable(&node).await;
    let pod = dra::create_pod(&env, one_gpu_pod("train", &node, None)).await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    // Running, with the container status KWOK writes for it.
    eventually(SCHEDULE, "the pod running", || async {
        let pod = pods.get(&pod).await.ok()?;
        let status = pod.status?;
        (status.phase.as_deref() == Some("Running") && status.container_statuses.is_some())
            .then_some(())
    })
    .await;
    let _operator = env.start_operator("30s");
    wait_entry(&env, "the pod's GPU allocated", &node, |e| {
        e.allocated.get("nvidia.com/gpu") == Some(&1) && e.issues.is_empty()
    })
    .await;

    // What the kubelet writes when the device plugin reports the GPU failed (KEP-4680).
    let report = |health: &str| {
        let pods = pods.clone();
        let pod = pod.clone();
        let health = health.to_owned();
        async move {
            let mut current = pods.get_status(&pod).await.expect("the pod");
            let status = current.status.as_mut().unwrap();
            let container = &mut status.container_statuses.as_mut().unwrap()[0];
            container.allocated_resources_status = Some(
                serde_json::from_value(json!([{ "name": "nvidia.com/gpu",
                    "resources": [{ "resourceID": "GPU-3f2a9c1e-0", "health": health }] }]))
                .unwrap(),
            );
            let stored = pods
                .replace_status(&pod, &PostParams::default(), &current)
                .await
                .expect("writing the pod's status as the kubelet does");
            let kept = stored
                .status
                .and_then(|s| s.container_statuses)
                .is_some_and(|c| c.iter().any(|c| c.allocated_resources_status.is_some()));
            assert!(
                kept,
                "the API server dropped containerStatuses[].allocatedResourcesStatus: it needs the \
                 ResourceHealthStatus feature gate (beta from Kubernetes 1.36)"
            );
        }
    };
    report("Unhealthy").await;
    let (_, e) = wait_entry(&env, "AllocatedDeviceUnhealthy", &node, |e| {
        reasons(e) == ["AllocatedDeviceUnhealthy"]
    })
    .await;
    let message = &e.issues[0].message;
    assert!(
        message.contains(&format!(
            "pod {}/{pod}: nvidia.com/gpu GPU-3f2a9c1e-0 (container cuda)",
            env.namespace
        )),
        "names the pod, the resource and the device: {message}"
    );
    report("Healthy").await;
    wait_entry(&env, "the issue cleared", &node, |e| e.issues.is_empty()).await;
}

#[tokio::test]
async fn a_pod_s_allocated_device_reported_unknown_past_the_grace_is_an_issue_until_it_clears() {
    let env = TestEnv::new("device-unknown").await;
    let list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2" });
    let gpu_node: Node = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": "unknown", "labels": { "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                                                     "nvidia.com/gpu.count": "2" } },
        "status": { "capacity": list, "allocatable": list,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }] }
    }))
    .unwrap();
    let node = env.create_node(gpu_node).await;
    env.wait_schedulable(&node).await;
    let pod = dra::create_pod(&env, one_gpu_pod("train", &node, None)).await;
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &env.namespace);
    eventually(SCHEDULE, "the pod running", || async {
        let pod = pods.get(&pod).await.ok()?;
        let status = pod.status?;
        (status.phase.as_deref() == Some("Running") && status.container_statuses.is_some())
            .then_some(())
    })
    .await;
    // A grace of 6 s, looked at again every 2 s (the requeue).
    let _operator = env.start_operator_with("2s", &["--resources-grace", "6s"]);
    wait_entry(&env, "the pod's GPU allocated", &node, |e| {
        e.allocated.get("nvidia.com/gpu") == Some(&1) && e.issues.is_empty()
    })
    .await;
    let mut current = pods.get_status(&pod).await.expect("the pod");
    let container = &mut current
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0];
    container.allocated_resources_status = Some(
        serde_json::from_value(json!([{ "name": "nvidia.com/gpu",
            "resources": [{ "resourceID": "GPU-77aa", "health": "Unknown" }] }]))
        .unwrap(),
    );
    pods.replace_status(&pod, &PostParams::default(), &current)
        .await
        .expect("writing the pod's status as the kubelet does");
    let written = std::time::Instant::now();
    let (_, e) = wait_entry(&env, "AllocatedDeviceHealthUnknown", &node, |e| {
        reasons(e) == ["AllocatedDeviceHealthUnknown"]
    })
    .await;
    assert!(
        written.elapsed() >= std::time::Duration::from_secs(6),
        "held back for the grace: appeared after {:?}",
        written.elapsed()
    );
    assert!(
        e.issues[0].message.contains("GPU-77aa"),
        "{}",
        e.issues[0].message
    );
    // The pod going clears it.
    pods.delete(&pod, &Default::default())
        .await
        .expect("deleting the pod");
    wait_entry(&env, "the issue cleared", &node, |e| e.issues.is_empty()).await;
}

#[tokio::test]
async fn a_shared_device_is_allocated_to_two_claims_and_counted_once() {
    let env = TestEnv::new("dra-shared").await;
    dra::require_dra(&env.client, "dra-shared").await;
    dra::ensure_device_classes(&env.client).await;
    let node = env.create_node(dra::dra_node("shared")).await;
    // One GPU that claims may share (consumable capacity, KEP-5075), 80Gi of memory to hand out.
    let mut gpu = dra::gpu(0, &node);
    gpu["allowMultipleAllocations"] = json!(true);
    gpu["capacity"] = json!({ "memory": { "value": "80Gi",
        "requestPolicy": { "default": "10Gi", "validRange": { "min": "1Gi" } } } });
    dra::publish_slice(&env, &node, &format!("{node}-gpu"), 1, 1, vec![gpu]).await;
    let stored = Api::<k8s_openapi::api::resource::v1::ResourceSlice>::all(env.client.clone())
        .get(&format!("{node}-gpu"))
        .await
        .expect("the slice");
    let shareable = stored.spec.devices.unwrap_or_default()[0].allow_multiple_allocations;
    assert_eq!(
        shareable,
        Some(true),
        "the API server dropped allowMultipleAllocations: it needs the DRAConsumableCapacity feature gate \
         (beta, on by default, from Kubernetes 1.36)"
    );
    env.wait_schedulable(&node).await;
    let _operator = env.start_operator("30s");
    for (pod, memory) in [("notebook-a", "10Gi"), ("notebook-b", "30Gi")] {
        let request = json!({ "name": "gpu", "exactly": { "deviceClassName": "gpu.nvidia.com",
                              "capacity": { "requests": { "memory": memory } } } });
        dra::template_pod(&env, pod, &node, request).await;
    }
    dra::claims_allocated(&env, &["notebook-a", "notebook-b"]).await;
    let gpunode = env
        .wait_gpunode(&node, CONVERGE, "the shared GPU held by both claims", |s| {
            s.node.devices.iter().any(|d| d.allocated_to.len() == 2)
        })
        .await;
    let status = gpunode.status.unwrap();
    let device = &status.node.devices[0];
    assert_eq!(
        device.capacity.get("memory").map(String::as_str),
        Some("80Gi")
    );
    assert_eq!(
        device.consumed_capacity.get("memory").map(String::as_str),
        Some("40Gi"),
        "what both claims consumed: {device:?}"
    );
    assert_eq!(
        status.node.allocated.get(dra::WHOLE),
        Some(&1),
        "one device, however many claims share it: {:?}",
        status.node.allocated
    );
    assert_eq!(status.node.count, 1);
    assert!(status.node.issues.is_empty(), "{:?}", status.node.issues);
}

#[tokio::test]
async fn partitionable_slices_with_counters_in_a_slice_of_their_own_are_allocated_and_counted() {
    let env = TestEnv::new("dra-partitions").await;
    dra::require_dra(&env.client, "dra-partitions").await;
    dra::ensure_device_classes(&env.client).await;
    let node = env.create_node(dra::dra_node("partitions")).await;
    // An A100 as NVIDIA's DynamicMIG publishes it (KEP-4815): a counter set in a slice of its own, and the
    // GPU and its possible partitions as alternatives consuming it, in another.
    let pool = || Pool {
        driver: dra::DRIVER,
        generation: 1,
        slice_count: 2,
    };
    dra::publish_counter_slice(
        &env,
        &node,
        &format!("{node}-counters"),
        pool(),
        json!([{ "name": "gpu-0-counters",
                 "counters": { "memory": { "value": "80Gi" }, "multiprocessors": { "value": "98" } } }]),
    )
    .await;
    let consumes = |memory: &str, sms: u32| {
        json!([{ "counterSet": "gpu-0-counters",
                 "counters": { "memory": { "value": memory }, "multiprocessors": { "value": sms.to_string() } } }])
    };
    let parent = format!("GPU-{node}-0");
    let mut whole = dra::gpu(0, &node);
    whole["consumesCounters"] = consumes("80Gi", 98);
    let mut devices = vec![whole];
    for (profile, n, memory, sms) in [("1g.10gb", 7, "10Gi", 14), ("3g.40gb", 2, "40Gi", 42)] {
        for i in 0..n {
            let mut d = dra::mig(&format!("gpu-0-{}-{i}", &profile[..2]), profile, &parent);
            d["consumesCounters"] = consumes(memory, sms);
            devices.push(d);
        }
    }
    dra::publish_pool_slice(&env, &node, &format!("{node}-devices"), pool(), devices).await;
    env.wait_schedulable(&node).await;
    let _operator = env.start_operator("30s");
    let (_, idle) = wait_entry(&env, "the partitionable GPU", &node, |e| {
        e.still_fit.get(dra::WHOLE) == Some(&1)
    })
    .await;
    assert_eq!(idle.count, 1, "one physical GPU, not one per alternative");
    assert_eq!(idle.still_fit.get("gpu.nvidia.com/mig-1g.10gb"), Some(&7));
    assert_eq!(idle.still_fit.get("gpu.nvidia.com/mig-3g.40gb"), Some(&2));

    let request = json!({ "name": "gpu", "exactly": { "deviceClassName": "mig.nvidia.com", "count": 1,
        "selectors": [{ "cel": { "expression": "device.attributes['gpu.nvidia.com'].profile == '3g.40gb'" } }] } });
    dra::template_pod(&env, "train", &node, request).await;
    dra::claims_allocated(&env, &["train"]).await;
    let (status, e) = wait_entry(&env, "a 3g.40gb partition allocated", &node, |e| {
        e.allocated.get("gpu.nvidia.com/mig-3g.40gb") == Some(&1)
    })
    .await;
    assert_eq!(e.count, 1);
    assert_eq!(
        e.still_fit,
        [
            ("gpu.nvidia.com/mig-1g.10gb".to_owned(), 4),
            ("gpu.nvidia.com/mig-3g.40gb".to_owned(), 1),
        ]
        .into(),
        "40Gi and 56 SMs left: 4 x 1g.10gb or 1 x 3g.40gb still fit, and no whole GPU"
    );
    assert_eq!(e.free.get(dra::WHOLE), Some(&0));
    assert_eq!(status.free_gpus, 0);
    assert!(e.issues.is_empty(), "{:?}", e.issues);
}
