//! GPU-equivalents live (#54): a fleet with whole GPUs, MIG, time-slicing, MPS, HAMi and KAI-Scheduler's fractions
//! with their reservation pod, on KWOK nodes; pods bound by the real scheduler where the node advertises what
//! they ask for, and by `spec.nodeName` where a sharing scheduler of its own binds them (HAMi's, KAI's). What
//! each namespace holds in physical GPUs is computed here by hand from the objects and read back from the
//! operator's GpuInventory and GpuNodes.

mod common;

use std::time::Duration;

use common::allocation::{equivalents, node};
use common::fit_cli::{ShareAnswer, fit_share};
use common::test_env::TEST_LABEL;
use common::{TestEnv, eventually};
use gpu_inventory_operator::crd::GpuNode;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

const CONVERGE: Duration = Duration::from_secs(60);
/// KAI-Scheduler's reservation namespace (its docs): cluster-wide, made if missing and left for other runs.
const RESERVATION: &str = "kai-resource-reservation";

/// Creates a pod with `metadata` (its labels and annotations): on `node` by its hostname label (the scheduler
/// binds it) or, with `bind`, by `spec.nodeName` (as HAMi's and KAI's schedulers bind theirs).
async fn pod(
    env: &TestEnv,
    namespace: &str,
    name: &str,
    node: &str,
    bind: bool,
    metadata: Value,
    limits: Value,
) {
    let mut spec = json!({
        "automountServiceAccountToken": false,
        "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                         "resources": { "limits": limits } }],
    });
    if bind {
        spec["nodeName"] = json!(node);
    } else {
        spec["nodeSelector"] = json!({ "kubernetes.io/hostname": node });
    }
    let mut metadata = metadata;
    metadata["name"] = json!(name);
    let pod: Pod = serde_json::from_value(json!({ "metadata": metadata, "spec": spec })).unwrap();
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
    eventually(
        CONVERGE,
        &format!("creating pod {namespace}/{name}"),
        || async {
            pods.create(&PostParams::default(), &pod)
                .await
                .map_err(|e| eprintln!("creating pod {name}: {e} (retrying)"))
                .ok()
        },
    )
    .await;
}

async fn namespace(env: &TestEnv, name: &str) {
    let api: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    if let Err(e) = api.create(&PostParams::default(), &ns).await {
        assert!(
            e.to_string().contains("already exists"),
            "namespace {name}: {e}"
        );
    }
}

#[tokio::test]
async fn each_namespace_holds_the_gpu_equivalents_its_pods_shares_add_up_to() {
    let env = TestEnv::new("shares").await;
    let (team_a, team_b) = (format!("{}-team-a", env.id), format!("{}-team-b", env.id));
    for ns in [team_a.as_str(), team_b.as_str(), RESERVATION] {
        namespace(&env, ns).await;
    }
    let gfd = |product: &str, extra: Value| {
        let mut labels =
            json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product });
        for (k, v) in extra.as_object().unwrap() {
            labels[k] = v.clone();
        }
        labels
    };
    // Whole H100s.
    let whole = env
        .create_node(node(
            "whole",
            gfd(
                "NVIDIA-H100-80GB-HBM3",
                json!({ "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81559" }),
            ),
            &[("nvidia.com/gpu", "8")],
        ))
        .await;
    // An A100 in MIG mixed strategy: two 3g.20gb and a 1g.5gb (7 compute slices).
    let mig = env
        .create_node(node(
            "mig",
            gfd(
                "NVIDIA-A100-SXM4-40GB",
                json!({ "nvidia.com/mig.strategy": "mixed", "nvidia.com/gpu.count": "1" }),
            ),
            &[
                ("nvidia.com/mig-3g.20gb", "2"),
                ("nvidia.com/mig-1g.5gb", "1"),
            ],
        ))
        .await;
    // A T4 time-sliced 4 ways.
    let sliced = env
        .create_node(node(
            "sliced",
            gfd(
                "Tesla-T4-SHARED",
                json!({ "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4",
                        "nvidia.com/gpu.sharing-strategy": "time-slicing" }),
            ),
            &[("nvidia.com/gpu", "4")],
        ))
        .await;
    // An L4 shared by MPS, 2 clients per GPU.
    let mps = env
        .create_node(node(
            "mps",
            gfd(
                "NVIDIA-L4",
                json!({ "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "2",
                        "nvidia.com/gpu.sharing-strategy": "mps" }),
            ),
            &[("nvidia.com/gpu", "2")],
        ))
        .await;
    // Two A100s that HAMi splits 10 ways each, listed in its register annotation (HAMi 2.4's encoding).
    let mut hami_node = node("hami", json!({ "gpu": "on" }), &[("nvidia.com/gpu", "20")]);
    hami_node.metadata.annotations = Some(
        [(
            "hami.io/node-nvidia-register".to_owned(),
            "GPU-0a1b,10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:GPU-2c3d,10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:"
                .to_owned(),
        )]
        .into(),
    );
    let hami = env.create_node(hami_node).await;
    // A T4 (15360 MiB) that KAI-Scheduler shares by fractions.
    let kai = env
        .create_node(node(
            "kai",
            gfd(
                "NVIDIA-Tesla-T4",
                json!({ "nvidia.com/gpu.count": "1", "nvidia.com/gpu.memory": "15360" }),
            ),
            &[("nvidia.com/gpu", "1")],
        ))
        .await;
    let none = json!({});
    let gpu = |n: u32| json!({ "nvidia.com/gpu": n.to_string() });
    pod(&env, &team_a, "train", &whole, false, none.clone(), gpu(2)).await;
    pod(&env, &team_a, "tune", &sliced, false, none.clone(), gpu(1)).await;
    pod(&env, &team_b, "serve", &mps, false, none.clone(), gpu(1)).await;
    pod(
        &env,
        &team_b,
        "mig",
        &mig,
        false,
        none.clone(),
        json!({ "nvidia.com/mig-3g.20gb": "1" }),
    )
    .await;
    pod(
        &env,
        &team_b,
        "infer",
        &hami,
        true,
        // HAMi's record of the card it gave the container (HAMi `docs/develop/protocol.md`).
        json!({ "annotations": { "hami.io/vgpu-devices-allocated": "GPU-0a1b,NVIDIA,10240,30:;" } }),
        json!({ "nvidia.com/gpu": "1", "nvidia.com/gpumem": "10240", "nvidia.com/gpucores": "30" }),
    )
    .await;
    let reservation = format!("{}-gpu-reservation", env.id);
    // KAI ties the fractions to their reservation pod by the GPU group label.
    let group = json!({ "runai-gpu-group": format!("{}-g1", env.id) });
    let kai_pod = |annotations: Value| json!({ "labels": group, "annotations": annotations });
    pod(
        &env,
        RESERVATION,
        &reservation,
        &kai,
        true,
        kai_pod(json!({})),
        gpu(1),
    )
    .await;
    pod(
        &env,
        &team_a,
        "half",
        &kai,
        true,
        kai_pod(json!({ "gpu-fraction": "0.5" })),
        none.clone(),
    )
    .await;
    pod(
        &env,
        &team_b,
        "lab",
        &kai,
        true,
        kai_pod(json!({ "gpu-memory": "4096" })),
        none.clone(),
    )
    .await;

    // By hand: team-a = 2 whole H100s + 1/4 of a T4 (a replica of 4) + 0.5 (KAI's fraction) = 2.75;
    // team-b = 3/7 of an A100 (0.429) + an MPS client of 2 on an L4 (0.5) + 10240/40960 MiB of a HAMi A100
    // (0.25) + 4096/15360 MiB of a T4 (0.267) = 1.446. The reservation pod holds the T4 for the fractions: no GPU-equivalent of its own.
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "every pod's share in namespaces[]", |s| {
            equivalents(s, &team_a).as_deref() == Some("2.75")
                && equivalents(s, &team_b).as_deref() == Some("1.446")
        })
        .await
        .status
        .unwrap();
    assert_eq!(
        equivalents(&status, RESERVATION),
        None,
        "{:?}",
        status.namespaces
    );
    let reserved = status.namespaces.iter().find(|n| n.name == RESERVATION);
    assert_eq!(
        reserved.and_then(|n| n.allocated.get("nvidia.com/gpu")),
        Some(&1),
        "the reservation pod holds the device: {:?}",
        status.namespaces
    );
    // The KAI node's GpuNode lists the fractions, each with its rule.
    let gpunodes: Api<GpuNode> = Api::all(env.client.clone());
    let holders = eventually(
        CONVERGE,
        "the KAI node's GpuNode with its holders",
        || async {
            let object = gpunodes.get(&kai).await.ok()?;
            let holders = object.status?.node.holders;
            (holders.len() == 2).then_some(holders)
        },
    )
    .await;
    let parts: Vec<(&str, &str)> = holders
        .iter()
        .map(|h| (h.name.as_str(), h.gpu_equivalents.as_str()))
        .collect();
    assert_eq!(parts, [("half", "0.5"), ("lab", "0.267")]);
    assert!(
        holders[1].basis.contains("4096 of 15360 MiB"),
        "{}",
        holders[1].basis
    );

    // Physical GPUs, by hand: the H100 node 2 held of 8 (6 whole free, 2 fully held); the MIG A100 3 of its 7
    // slices held (partly free); the time-sliced T4 1 replica of 4 and the MPS L4 1 client of 2 (partly
    // free); HAMi's card GPU-0a1b holds 10240 of 40960 MiB (partly free), GPU-2c3d nothing (whole free); the
    // KAI T4 0.5 + 0.267 of its group's GPU (partly free). 14 GPUs: 7 whole free, 5 partly free, 2 held.
    let occupancy = (
        status.whole_free_gpus,
        status.partly_free_gpus,
        status.fully_held_gpus,
    );
    assert_eq!(occupancy, (7, 5, 2), "{:?}", status.products);
    assert_eq!(status.total_gpus, 14);

    // `fit` for a share names the GPUs a hand check finds among this test's nodes.
    let selector = format!("{TEST_LABEL}={}", env.id);
    let places = |answer: &ShareAnswer| -> Vec<(String, Option<String>, u64)> {
        answer
            .places
            .iter()
            .map(|p| (p.node.clone(), p.gpu.clone(), p.count))
            .collect()
    };
    // 20 GiB: HAMi's cards have 30720 and 40960 MiB free; the H100 node 6 whole GPUs of 81559 MiB; the KAI
    // GPU 15360 - 7680 - 4096 = 3584 MiB; the time-sliced, MPS and MIG GPUs are no whole GPUs.
    let memory = fit_share(&["--gpu-memory", "20Gi"], &selector);
    assert_eq!(
        places(&memory),
        [
            (hami.clone(), Some("GPU-0a1b".to_owned()), 1),
            (hami.clone(), Some("GPU-2c3d".to_owned()), 1),
            (whole.clone(), None, 6),
        ],
        "{memory:?}"
    );
    // 0.2 of a GPU: the KAI GPU has 1 - 0.5 - 0.267 = 0.233 left (3584 MiB >= 0.2 x 15360) as well.
    let fraction = fit_share(&["--fraction", "0.2"], &selector);
    assert_eq!(
        places(&fraction),
        [
            (hami.clone(), Some("GPU-0a1b".to_owned()), 1),
            (hami.clone(), Some("GPU-2c3d".to_owned()), 1),
            (kai.clone(), Some(format!("group/{}-g1", env.id)), 1),
            (whole.clone(), None, 6),
        ],
        "{fraction:?}"
    );
    // 0.3: not on the KAI GPU any more.
    assert_eq!(fit_share(&["--fraction", "0.3"], &selector).places.len(), 3);
    // MIG: one 3g.20gb of two is free, and the 1g.5gb; no 2g.10gb exists.
    let mig_free = fit_share(&["--mig-profile", "3g.20gb"], &selector);
    assert_eq!(places(&mig_free), [(mig.clone(), None, 1)], "{mig_free:?}");
    let none_such = fit_share(&["--mig-profile", "2g.10gb"], &selector);
    assert!(!none_such.fits && none_such.why.is_some(), "{none_such:?}");

    let pods: Api<Pod> = Api::namespaced(env.client.clone(), RESERVATION);
    let _ = pods.delete(&reservation, &DeleteParams::default()).await;
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    for ns in [&team_a, &team_b] {
        let _ = namespaces.delete(ns, &DeleteParams::default()).await;
    }
    env.cleanup().await;
}
