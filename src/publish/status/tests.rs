//! The status publisher's reconcile against a mock API server (the fast tier: `crate::fixtures`).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::*;
use crate::crd::GpuInventorySpec;
use crate::fixtures::{ApiServer, context, gpu_node};

const STATUS: &str = "/apis/homelab.youngju.dev/v1/gpuinventories/cluster/status";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn inventory(version: &str, status: Option<Value>) -> Arc<GpuInventory> {
    let mut inventory = GpuInventory::new("cluster", GpuInventorySpec::default());
    inventory.metadata.uid = Some("inventory-uid".into());
    inventory.metadata.generation = Some(1);
    inventory.metadata.resource_version = Some(version.into());
    inventory.status = status.map(|s| serde_json::from_value(s).unwrap());
    Arc::new(inventory)
}

fn reconcile_in_background(
    ctx: &Arc<Context>,
    inventory: &Arc<GpuInventory>,
) -> tokio::task::JoinHandle<Result<Action>> {
    let (ctx, inventory) = (ctx.clone(), inventory.clone());
    tokio::spawn(async move { reconcile_inner(&inventory, &ctx).await })
}

/// The server's answer to a status apply: the object with the applied status, at `version`.
fn applied(body: &Value, version: &str) -> Value {
    json!({ "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuInventory",
            "metadata": { "name": "cluster", "uid": "inventory-uid", "resourceVersion": version, "generation": 1 },
            "spec": {}, "status": body["status"] })
}

/// Answers the first reconcile's status apply and its first-observation event; returns the applied body.
async fn first_write(server: &mut ApiServer) -> Value {
    let patch = server.expect(Method::PATCH, STATUS).await;
    let body = patch.body.clone();
    patch.reply(StatusCode::OK, applied(&body, "11"));
    let event = server.expect(Method::POST, EVENTS).await;
    assert_eq!(event.body["reason"], "InventoryObserved", "{}", event.body);
    let echo = event.body.clone();
    event.reply(StatusCode::CREATED, echo);
    body
}

/// A context over one 8-GPU node whose first reconcile has written its status: the context, the mock server
/// and the applied body.
async fn after_first_write() -> (Arc<Context>, ApiServer, Value) {
    let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let reconcile = reconcile_in_background(&ctx, &inventory("10", None));
    let written = first_write(&mut server).await;
    reconcile.await.unwrap().expect("reconciled");
    (ctx, server, written)
}

#[tokio::test]
async fn a_new_status_is_applied_with_its_kind_and_field_manager_and_its_event_follows() {
    let (ctx, mut server) = context(vec![gpu_node("a", 8), gpu_node("b", 4)], vec![]);
    let reconcile = reconcile_in_background(&ctx, &inventory("10", None));
    let patch = server.expect(Method::PATCH, STATUS).await;
    assert_eq!(
        patch.query("fieldManager").as_deref(),
        Some(crate::FIELD_MANAGER)
    );
    assert_eq!(patch.query("force").as_deref(), Some("true"));
    // The article's pitfall 1: an apply without apiVersion and kind is refused.
    assert_eq!(patch.body["apiVersion"], "homelab.youngju.dev/v1");
    assert_eq!(patch.body["kind"], "GpuInventory");
    let status = &patch.body["status"];
    assert_eq!(
        (
            status["totalGpuNodes"].as_u64(),
            status["totalGpus"].as_u64()
        ),
        (Some(2), Some(12))
    );
    assert_eq!(status["nodes"].as_array().map(Vec::len), Some(2));
    assert!(status["observedTime"].is_string(), "stamped: {status}");
    let body = patch.body.clone();
    patch.reply(StatusCode::OK, applied(&body, "11"));
    let event = server.expect(Method::POST, EVENTS).await;
    assert_eq!(event.body["reason"], "InventoryObserved");
    assert_eq!(event.body["regarding"]["name"], "cluster");
    let echo = event.body.clone();
    event.reply(StatusCode::CREATED, echo);
    reconcile.await.unwrap().expect("reconciled");
    server.assert_idle();
}

#[tokio::test]
async fn an_unchanged_status_is_not_written_again_and_tells_nothing() {
    let (ctx, mut server, written) = after_first_write().await;
    // Past the guard's gap, the cache now holds our write.
    tokio::time::sleep(ctx.status_writer.min_gap() + Duration::from_millis(50)).await;
    let cached = inventory("11", Some(written["status"].clone()));
    // A write would wait for an answer that never comes: the timeout is that failure.
    tokio::time::timeout(Duration::from_secs(5), reconcile_inner(&cached, &ctx))
        .await
        .expect("the reconcile sent a request: an unchanged status was written")
        .expect("reconciled");
    server.assert_idle();
    assert_eq!(ctx.status_writer.written(), 1, "one write in all");
}

#[tokio::test]
async fn a_forbidden_write_is_an_error_naming_the_object_and_sends_no_event() {
    let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let reconcile = reconcile_in_background(&ctx, &inventory("10", None));
    server.expect(Method::PATCH, STATUS).await.reply_error(
        403,
        "Forbidden",
        "gpuinventories.homelab.youngju.dev \"cluster\" is forbidden: User \"system:serviceaccount:x:y\" \
         cannot patch resource \"gpuinventories/status\" in API group \"homelab.youngju.dev\" at the cluster scope",
    );
    let error = reconcile
        .await
        .unwrap()
        .expect_err("a 403 fails the reconcile");
    assert_eq!(error.metric_label(), "forbidden");
    let text = error.to_string();
    assert!(text.contains("GpuInventory cluster"), "{text}");
    assert!(
        text.contains("cannot patch resource"),
        "the server's words are kept: {text}"
    );
    server.assert_idle();
}

#[tokio::test]
async fn after_a_conflict_the_retry_writes_and_the_events_are_not_lost() {
    let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let reconcile = reconcile_in_background(&ctx, &inventory("10", None));
    server.expect(Method::PATCH, STATUS).await.reply_error(
        409,
        "Conflict",
        "Operation cannot be fulfilled on gpuinventories.homelab.youngju.dev \"cluster\": the object has been modified",
    );
    let error = reconcile
        .await
        .unwrap()
        .expect_err("a 409 fails the reconcile");
    assert_eq!(error.metric_label(), "conflict");
    // The retry (the controller's backoff) writes it, and the first-observation event is told then.
    let retry = reconcile_in_background(&ctx, &inventory("10", None));
    first_write(&mut server).await;
    retry.await.unwrap().expect("reconciled");
    server.assert_idle();
}

#[tokio::test]
async fn a_node_going_not_ready_is_one_write_and_one_warning() {
    let (ctx, _server, written) = after_first_write().await;
    // The same node NotReady: a new scan (the sources' version moves with a change).
    let mut node = gpu_node("a", 8);
    node.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    let (ctx2, mut server2) = context(vec![node], vec![]);
    ctx2.remember_model("cluster", ctx.last_model("cluster").expect("a model"));
    let cached = inventory("11", Some(written["status"].clone()));
    let reconcile = reconcile_in_background(&ctx2, &cached);
    let patch = server2.expect(Method::PATCH, STATUS).await;
    assert_eq!(patch.body["status"]["readyGpuNodes"], 0);
    let body = patch.body.clone();
    patch.reply(StatusCode::OK, applied(&body, "12"));
    let event = server2.expect(Method::POST, EVENTS).await;
    assert_eq!(event.body["reason"], "GpuNodeNotReady", "{}", event.body);
    assert_eq!(event.body["type"], "Warning");
    let echo = event.body.clone();
    event.reply(StatusCode::CREATED, echo);
    reconcile.await.unwrap().expect("reconciled");
    server2.assert_idle();
}

/// A refused write (403) is retried after its backoff, not on the next wake-up; any other failure (the API
/// server may be back) is retried on the next one.
#[tokio::test]
async fn after_a_refused_write_a_wake_up_waits_out_the_backoff() {
    for (code, reason, retried_at_once) in
        [(403, "Forbidden", false), (503, "ServiceUnavailable", true)]
    {
        let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
        let inventory = inventory("10", None);
        let reconcile = reconcile_in_background(&ctx, &inventory);
        server.expect(Method::PATCH, STATUS).await.reply_error(
            code,
            reason,
            "gpuinventories.homelab.youngju.dev \"cluster\" is forbidden",
        );
        let error = reconcile.await.unwrap().expect_err("the write failed");
        let backoff = error_policy(inventory.clone(), &error, ctx.clone());
        assert_eq!(backoff, Action::requeue(Duration::from_secs(1)), "{code}");
        // A change wakes the publisher at once.
        let again = reconcile_in_background(&ctx, &inventory);
        if retried_at_once {
            first_write(&mut server).await;
            again.await.unwrap().expect("reconciled");
        } else {
            let action = again.await.unwrap().expect("a wait, no attempt");
            server.assert_idle();
            assert!(
                action != Action::requeue(ctx.requeue),
                "{action:?}: requeued after the backoff"
            );
            assert!(
                ctx.retry_wait("cluster")
                    .is_some_and(|w| w <= Duration::from_secs(1))
            );
        }
    }
}
