//! Which held GPUs sit idle, against a real Prometheus (v0.316.0, built from its Go module) holding
//! dcgm-exporter's history back-filled with promtool in the exporter's own series and labels
//! (tests/common/prometheus), and the real scheduler and KWOK nodes holding the pods (docs/utilization.md).
//!
//! The history runs from two hours ago to twenty minutes ahead, so that every case reads the same for the
//! length of a test: Prometheus answers an instant query from the latest sample at or before the query's time.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::allocation::node;
use common::prometheus::utilization_fleet::{
    BACK, CONVERGE, GPU, HOLD, MIG, ROUND, bound_pod, gpunode_idle, gpunode_idle_entries,
    h100_node, held, history, idle_of, mig_node, operator_for, other_namespace, state,
    wait_gpunode_idle,
};
use common::prometheus::{self, dcgm_labels};
use common::{TestEnv, eventually, metric};
use gpu_inventory_operator::crd::{GpuInventoryStatus, NamespaceUsage};
use jiff::{Timestamp, ToSpan};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::Api;
use serde_json::json;

#[tokio::test]
async fn idle_pods_and_mig_instances_are_told_apart_from_busy_young_and_unmeasured_ones_and_a_quiet_minute_writes_nothing()
 {
    let env = TestEnv::new("idle-pods").await;
    let ns = env.namespace.clone();
    let gpus = env.create_node(h100_node("gpus", 8)).await;
    let mig = env.create_node(mig_node("mig")).await;
    env.wait_schedulable(&gpus).await;
    env.wait_schedulable(&mig).await;
    // The namespace holds no idle unit at first: the idle pods come once the operator reads the activity, so
    // that the namespace starting to hold idle GPUs is a transition (one event).
    held(&env, "busy", &gpus, GPU, 1).await;
    held(&env, "young", &gpus, GPU, 1).await;
    held(&env, "unmeasured", &gpus, GPU, 1).await;
    held(&env, "mig-busy", &mig, MIG, 1).await;

    let on = |gpu: u32, pod: &str| {
        dcgm_labels(&gpus, gpu)
            .pod(&ns, pod, "cuda")
            .scraped("gpu-metrics", "10.0.0.7:9400")
    };
    let two_hours = 2.hours();
    let mut series = vec![
        // Busy: both signals high.
        history(on(0, "busy").gpu_util(), 85.0, two_hours),
        history(on(0, "busy").gr_engine_active(), 0.8, two_hours),
        // Idle on both of its GPUs for two hours.
        history(on(1, "idle").gpu_util(), 0.0, two_hours),
        history(on(1, "idle").gr_engine_active(), 0.0, two_hours),
        history(on(2, "idle").gpu_util(), 0.0, two_hours),
        history(on(2, "idle").gr_engine_active(), 0.0, two_hours),
        // Idle, but only for the last ten minutes: younger than the window.
        history(on(3, "young").gpu_util(), 0.0, 10.minutes()),
        // Behind a ServiceMonitor without honor_labels: the holder's labels as exported_*, the exporter pod's
        // as the plain ones; and no profiling (GPU_UTIL only).
        history(
            on(4, "relabelled")
                .exported()
                .exporter_pod("gpu-operator", "nvidia-dcgm-exporter-x7k2p")
                .gpu_util(),
            0.0,
            two_hours,
        ),
        // GPU 5 ("unmeasured") has no series at all.
    ];
    // MIG: GPU_UTIL reads 0 for every instance, busy or not; the engine activity tells them apart.
    for (instance, pod, activity) in [(1, "mig-busy", 0.7), (2, "mig-idle", 0.0)] {
        let labels = dcgm_labels(&mig, 0)
            .mig("1g.10gb", instance)
            .pod(&ns, pod, "cuda");
        series.push(history(labels.gpu_util(), 0.0, two_hours));
        series.push(history(labels.gr_engine_active(), activity, two_hours));
    }
    let prometheus = prometheus::start(&env.id, &series);
    let _operator = operator_for(&env, &prometheus);
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "the activity read", |s| {
            state(s) == "Current"
        })
        .await
        .status
        .unwrap();
    assert_eq!(
        idle_of(&status, &ns),
        None,
        "busy, young and unmeasured pods are not idle"
    );

    held(&env, "idle", &gpus, GPU, 2).await;
    held(&env, "relabelled", &gpus, GPU, 1).await;
    held(&env, "mig-idle", &mig, MIG, 1).await;
    let status = env
        .wait_inventory(&inv, ROUND, "idle units in the test's namespace", |s| {
            idle_of(s, &ns).is_some_and(|idle| idle.len() == 2 && idle.get(GPU) == Some(&3))
        })
        .await
        .status
        .unwrap();
    let expected = BTreeMap::from([(GPU.to_owned(), 3), (MIG.to_owned(), 1)]);
    assert_eq!(
        idle_of(&status, &ns),
        Some(&expected),
        "idle: 2 + 1 relabelled, and one MIG instance"
    );
    let utilization = status.utilization.as_ref().unwrap();
    assert_eq!(
        (utilization.source.as_str(), utilization.window.as_str()),
        (prometheus.url().as_str(), "30m")
    );
    assert!(
        utilization
            .message
            .contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE"),
        "{}",
        utilization.message
    );

    assert_eq!(
        wait_gpunode_idle(&env, &gpus, 2).await,
        vec![
            (format!("{ns}/idle"), GPU.to_owned(), 2),
            (format!("{ns}/relabelled"), GPU.to_owned(), 1)
        ],
        "busy, young and unmeasured pods are not idle"
    );
    assert_eq!(
        wait_gpunode_idle(&env, &mig, 1).await,
        vec![(format!("{ns}/mig-idle"), MIG.to_owned(), 1)]
    );
    let gpunode = env.gpunode(&gpus).await.unwrap();
    let since: Timestamp = gpunode.status.unwrap().node.idle[0]
        .idle_since
        .parse()
        .unwrap();
    let age = Timestamp::now().duration_since(since);
    assert!(
        age >= jiff::SignedDuration::from_mins(30) && age < jiff::SignedDuration::from_mins(32),
        "idleSince is the start of the window it was first found idle in: {since}"
    );
    let warning = eventually(ROUND, "the IdleGpus event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("IdleGpus"))
    })
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert!(
        warning
            .message
            .as_deref()
            .unwrap_or_default()
            .contains(&format!("namespace {ns} holds"))
    );

    // A quiet minute: Prometheus is asked every 2 s and answers the same; nothing is written.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = env.written_versions().await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        before,
        env.written_versions().await,
        "the operator wrote in a quiet minute"
    );
    let events = env.events_about(&inv).await;
    let idle_events = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("IdleGpus"))
        .count();
    assert_eq!(
        idle_events, 1,
        "one event per namespace that starts holding idle GPUs, not one per query"
    );

    // The idle pods go: their units leave the GpuNode and the namespace with the pods, and the namespace's
    // last one makes the Normal event.
    let pods: Api<Pod> = Api::namespaced(env.client.clone(), &ns);
    pods.delete("idle", &Default::default()).await.unwrap();
    env.wait_inventory(&inv, ROUND, "the idle pod gone", |s| {
        idle_of(s, &ns).is_some_and(|idle| idle.get(GPU) == Some(&1))
    })
    .await;
    for pod in ["relabelled", "mig-idle"] {
        pods.delete(pod, &Default::default()).await.unwrap();
    }
    env.wait_inventory(&inv, ROUND, "no idle unit left", |s| {
        state(s) == "Current" && idle_of(s, &ns).is_none()
    })
    .await;
    let resolved = eventually(ROUND, "the IdleGpusResolved event", || async {
        env.events_about(&inv)
            .await
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("IdleGpusResolved"))
    })
    .await;
    assert_eq!(resolved.type_.as_deref(), Some("Normal"));
    drop(prometheus);
}

#[tokio::test]
async fn prometheus_stopped_holds_the_last_answer_then_makes_the_figures_unknown_and_withheld_and_they_return()
 {
    let env = TestEnv::new("idle-faults").await;
    let ns = env.namespace.clone();
    let gpus = env.create_node(h100_node("gpus", 8)).await;
    env.wait_schedulable(&gpus).await;
    held(&env, "idle", &gpus, GPU, 1).await;
    let labels = dcgm_labels(&gpus, 0).pod(&ns, "idle", "cuda");
    let series = vec![
        history(labels.gpu_util(), 0.0, 2.hours()),
        history(labels.gr_engine_active(), 0.0, 2.hours()),
    ];
    let mut prometheus = prometheus::start(&env.id, &series);
    let operator = operator_for(&env, &prometheus);
    let inv = env.inventory_name();
    env.wait_inventory(&inv, CONVERGE, "the idle pod", |s| {
        idle_of(s, &ns).is_some()
    })
    .await;

    prometheus.stop();
    let stopped = Instant::now();
    // First the hold: the last answer stands, and the message says the latest round failed.
    let message = |s: &GpuInventoryStatus| {
        s.utilization
            .as_ref()
            .map(|u| u.message.clone())
            .unwrap_or_default()
    };
    let held = env
        .wait_inventory(&inv, ROUND, "the last answer held", |s| {
            state(s) == "Current" && message(s).contains("the latest round failed")
        })
        .await
        .status
        .unwrap();
    eprintln!(
        "the last answer held {} ms after Prometheus stopped",
        stopped.elapsed().as_millis()
    );
    assert!(
        idle_of(&held, &ns).is_some() && message(&held).contains("held until"),
        "the figures stand through the hold: {}",
        message(&held)
    );
    assert!(
        !gpunode_idle(&env, &gpus).await.is_empty(),
        "and the GpuNode keeps its idle entries"
    );
    let unknown = env
        .wait_inventory(&inv, HOLD + ROUND, "state Unknown", |s| {
            state(s) == "Unknown"
        })
        .await
        .status
        .unwrap();
    eprintln!(
        "Unknown {} ms after Prometheus stopped",
        stopped.elapsed().as_millis()
    );
    let utilization = unknown.utilization.as_ref().unwrap();
    assert!(
        utilization.message.contains("unreachable"),
        "{}",
        utilization.message
    );
    assert!(
        utilization.idle.is_empty(),
        "withheld, not 0: {utilization:?}"
    );
    assert_eq!(
        idle_of(&unknown, &ns),
        None,
        "the namespace's idle units are withheld"
    );
    eventually(ROUND, "the GpuNode's idle entries withheld", || async {
        gpunode_idle(&env, &gpus).await.is_empty().then_some(())
    })
    .await;
    // Everything else goes on: the node and its allocation are still there.
    let entry = unknown
        .nodes
        .iter()
        .find(|n| n.name == gpus)
        .expect("the node");
    assert_eq!(entry.allocated.get(GPU), Some(&1));
    let (_, metrics) = operator.http_get("/metrics").await;
    assert!(
        metrics.contains("gpu_inventory_utilization_known{inventory=\""),
        "{metrics}"
    );
    assert!(
        !metrics.contains("gpu_inventory_idle_gpus{"),
        "no idle series while unknown"
    );

    prometheus.restart().unwrap_or_else(|e| panic!("{e}"));
    let back = Instant::now();
    env.wait_inventory(&inv, BACK, "Current again, the idle pod back", |s| {
        state(s) == "Current" && idle_of(s, &ns).is_some()
    })
    .await;
    eprintln!(
        "Current {} ms after Prometheus restarted",
        back.elapsed().as_millis()
    );
    let (_, metrics) = operator.http_get("/metrics").await;
    let series = format!(
        "gpu_inventory_idle_gpus{{inventory=\"{inv}\",namespace=\"{ns}\",resource=\"{GPU}\"}} 1"
    );
    assert!(metrics.contains(&series), "{series} not in /metrics");
    let reasons: Vec<String> = env
        .events_about(&inv)
        .await
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    for reason in ["UtilizationUnknown", "UtilizationCurrent"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "no {reason} event in {reasons:?}"
        );
    }
}

#[tokio::test]
async fn a_dra_claims_idle_gpu_is_the_claims() {
    use common::dra;
    let env = TestEnv::new("idle-dra").await;
    dra::require_dra(&env.client, "a_dra_claims_idle_gpu_is_the_claims").await;
    dra::ensure_device_classes(&env.client).await;
    let node = env.create_node(dra::dra_node("dra")).await;
    let devices = vec![dra::gpu(0, &node), dra::gpu(1, &node)];
    dra::publish_slice(&env, &node, &format!("{node}-gpu"), 1, 1, devices).await;
    env.wait_schedulable(&node).await;
    dra::claim_pod(&env, "trainer", &node, "gpu.nvidia.com", 1).await;
    let allocated = dra::pod_claim_devices(&env, "trainer").await;
    let claims: Api<k8s_openapi::api::resource::v1::ResourceClaim> =
        Api::namespaced(env.client.clone(), &env.namespace);
    let claim = claims
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let claim_name = claim.metadata.name.clone().unwrap();
    let device = allocated.first().expect("an allocated device").clone();
    let series = vec![history(
        dcgm_labels(&node, 0)
            .pod(&env.namespace, "trainer", "cuda")
            .dra_claim(&env.namespace, &claim_name, &node, &device)
            .gr_engine_active(),
        0.0,
        2.hours(),
    )];
    let prometheus = prometheus::start(&env.id, &series);
    let _operator = operator_for(&env, &prometheus);
    env.wait_inventory(
        &env.inventory_name(),
        CONVERGE,
        "the claim's idle GPU",
        |s| idle_of(s, &env.namespace).is_some(),
    )
    .await;
    assert_eq!(
        wait_gpunode_idle(&env, &node, 1).await,
        vec![(
            format!("{}/{claim_name}", env.namespace),
            dra::WHOLE.to_owned(),
            1
        )]
    );
    let gpunode = env.gpunode(&node).await.unwrap();
    let entry = &gpunode.status.unwrap().node.idle[0];
    assert_eq!(
        (entry.pod.as_deref(), entry.claim.is_some()),
        (None, true),
        "{entry:?}"
    );
    drop(prometheus);
}

/// Shared GPUs (#54): a time-sliced T4 (4 replicas of its one GPU) that two namespaces' pods share, and two HAMi
/// A100 cards, from the real Prometheus. The idle T4's series names one of its pods, as dcgm-exporter's default
/// does: both holders are idle with a replica each. HAMi's cards have series without pod labels (a HAMi share's
/// device ID matches no GPU): the idle card's pods are idle with their memory's part of it, the busy card's pod
/// is not, and the status says one shared GPU is busy without guessing whose use it is.
#[tokio::test]
async fn idle_shared_gpus_make_every_holder_idle_with_its_share_and_busy_ones_no_one() {
    let env = TestEnv::new("idle-shared").await;
    let (team_a, team_b) = (env.namespace.clone(), other_namespace(&env, "b").await);
    let sliced = env
        .create_node(node(
            "sliced",
            json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "Tesla-T4-SHARED",
                    "nvidia.com/gpu.count": "1", "nvidia.com/gpu.replicas": "4",
                    "nvidia.com/gpu.sharing-strategy": "time-slicing" }),
            &[(GPU, "4")],
        ))
        .await;
    // Two A100s of 40960 MiB that HAMi splits 10 ways each (HAMi 2.4's register encoding).
    let (card_a, card_b) = (
        "GPU-5c3e1f0a-77d2-4b1e-9a65-0c1d2e3f4a5b",
        "GPU-8e9f0a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5c",
    );
    let mut hami = node("hami", json!({ "gpu": "on" }), &[(GPU, "20")]);
    hami.metadata.annotations = Some(
        [(
            "hami.io/node-nvidia-register".to_owned(),
            format!(
                "{card_a},10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:{card_b},10,40960,100,NVIDIA-A100-SXM4-40GB,0,true:"
            ),
        )]
        .into(),
    );
    let hami = env.create_node(hami).await;
    env.wait_schedulable(&sliced).await;

    let replica = json!({ GPU: "1" });
    bound_pod(&env, &team_a, "tune", &sliced, json!({}), replica.clone()).await;
    bound_pod(&env, &team_b, "serve", &sliced, json!({}), replica).await;
    let on_card = |card: &str, mib: u32| {
        let annotations =
            json!({ "hami.io/vgpu-devices-allocated": format!("{card},NVIDIA,{mib},0:;") });
        let limits = json!({ GPU: "1", "nvidia.com/gpumem": mib.to_string() });
        (annotations, limits)
    };
    for (namespace, pod, card, mib) in [
        (&team_a, "infer-a", card_a, 10240),
        (&team_b, "infer-b", card_a, 20480),
        (&team_b, "busy-b", card_b, 10240),
    ] {
        let (annotations, limits) = on_card(card, mib);
        bound_pod(&env, namespace, pod, &hami, annotations, limits).await;
    }

    let two_hours = 2.hours();
    let series = vec![
        // dcgm-exporter's default for a time-sliced GPU: its series names one of the pods sharing it.
        history(
            dcgm_labels(&sliced, 0)
                .pod(&team_b, "serve", "cuda")
                .gpu_util(),
            0.0,
            two_hours,
        ),
        history(
            dcgm_labels(&sliced, 0)
                .pod(&team_b, "serve", "cuda")
                .gr_engine_active(),
            0.0,
            two_hours,
        ),
        // HAMi's cards: no pod labels.
        history(
            dcgm_labels(&hami, 0).with_uuid(card_a).gr_engine_active(),
            0.0,
            two_hours,
        ),
        history(
            dcgm_labels(&hami, 1).with_uuid(card_b).gr_engine_active(),
            0.6,
            two_hours,
        ),
    ];
    let prometheus = prometheus::start(&env.id, &series);
    let operator = operator_for(&env, &prometheus);
    let inv = env.inventory_name();
    let usage =
        |s: &GpuInventoryStatus, ns: &str| s.namespaces.iter().find(|n| n.name == ns).cloned();
    let status = env
        .wait_inventory(
            &inv,
            CONVERGE,
            "both namespaces' idle GPU-equivalents",
            |s| {
                [&team_a, &team_b].iter().all(|ns| {
                    usage(s, ns).is_some_and(|n| n.idle_gpu_equivalents_by_product.len() == 2)
                })
            },
        )
        .await
        .status
        .unwrap();

    // By hand. The T4: one GPU in 4 replicas, a replica each: 1/4 = 0.25 for tune (team-a) and serve (team-b).
    // HAMi, card A (idle): infer-a 10240/40960 MiB = 0.25 (team-a), infer-b 20480/40960 = 0.5 (team-b); card B
    // (busy): busy-b, not idle. team-a: 0.25 + 0.25 = 0.5; team-b: 0.25 + 0.5 = 0.75.
    let product = |node: &str| {
        let entry = status
            .nodes
            .iter()
            .find(|n| n.name == node)
            .expect("the node's entry");
        entry.product.clone().expect("a product")
    };
    let (t4, a100) = (product(&sliced), product(&hami));
    let expected = |sum: &str, on_t4: &str, on_a100: &str| NamespaceUsage {
        idle_gpu_equivalents: Some(sum.to_owned()),
        idle_gpu_equivalents_by_product: [
            (t4.clone(), on_t4.to_owned()),
            (a100.clone(), on_a100.to_owned()),
        ]
        .into(),
        ..NamespaceUsage::default()
    };
    let idle_part = |ns: &str| {
        let n = usage(&status, ns).expect("the namespace");
        NamespaceUsage {
            idle_gpu_equivalents: n.idle_gpu_equivalents,
            idle_gpu_equivalents_by_product: n.idle_gpu_equivalents_by_product,
            ..NamespaceUsage::default()
        }
    };
    assert_eq!(idle_part(&team_a), expected("0.5", "0.25", "0.25"));
    assert_eq!(idle_part(&team_b), expected("0.75", "0.25", "0.5"));
    assert_eq!(
        idle_of(&status, &team_a).and_then(|i| i.get(GPU)),
        Some(&2),
        "tune and infer-a"
    );
    assert_eq!(
        idle_of(&status, &team_b).and_then(|i| i.get(GPU)),
        Some(&2),
        "serve and infer-b, not busy-b"
    );
    let utilization = status.utilization.as_ref().unwrap();
    assert_eq!(utilization.busy_shared_gpus, 1, "{utilization:?}");
    assert!(
        utilization.message.ends_with(
            "1 shared GPU busy: per-holder use is not measured (DCGM reports the device)"
        ),
        "{}",
        utilization.message
    );

    let entries = |node: String| {
        let env = &env;
        async move {
            // Sorted by holder: the second namespace (`<id>-b/`) before the test's own (`<id>/`).
            let mut found: Vec<(String, u64, Option<String>)> = gpunode_idle_entries(env, &node)
                .await
                .into_iter()
                .map(|e| (e.pod.unwrap_or_default(), e.amount, e.gpu_equivalents))
                .collect();
            found.sort();
            found
        }
    };
    let quarter = Some("0.25".to_owned());
    assert_eq!(
        wait_gpunode_idle(&env, &sliced, 2).await.len(),
        2,
        "both holders of the time-sliced GPU"
    );
    assert_eq!(
        entries(sliced.clone()).await,
        vec![
            (format!("{team_b}/serve"), 1, quarter.clone()),
            (format!("{team_a}/tune"), 1, quarter.clone())
        ]
    );
    wait_gpunode_idle(&env, &hami, 2).await;
    assert_eq!(
        entries(hami.clone()).await,
        vec![
            (format!("{team_b}/infer-b"), 1, Some("0.5".to_owned())),
            (format!("{team_a}/infer-a"), 1, quarter),
        ],
        "the idle card's pods with their parts; the busy card's pod is not idle"
    );

    // The chargeback gauge beside the held one, per namespace and product.
    let (_, text) = operator.http_get("/metrics").await;
    for (ns, product, value) in [
        (&team_a, &t4, 0.25),
        (&team_a, &a100, 0.25),
        (&team_b, &t4, 0.25),
        (&team_b, &a100, 0.5),
    ] {
        let series = format!(
            "gpu_inventory_namespace_gpu_equivalents_idle{{inventory=\"{inv}\",namespace=\"{ns}\",product=\"{product}\"}}"
        );
        assert_eq!(metric(&text, &series), Some(value), "{series} in:\n{text}");
    }

    // A quiet stretch: the same answers every 2 s, busy series included, write nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let before = env.written_versions().await;
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(
        before,
        env.written_versions().await,
        "the operator wrote in a quiet stretch"
    );
    drop(prometheus);
    let _ = Api::<Namespace>::all(env.client.clone())
        .delete(&team_b, &Default::default())
        .await;
}
