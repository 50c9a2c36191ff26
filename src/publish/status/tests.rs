//! The status publisher's reconcile against a mock API server (the fast tier: `crate::fixtures`).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::*;
use crate::crd::GpuInventorySpec;
use crate::fixtures::{ApiServer, Fixture, context, gpu_node};
use crate::publish::driver::own_objects::fed_by_hand;
use crate::publish::driver::{Retries, pass};
use crate::sources::stripped::StrippedWriter;

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

/// The publisher over a cache the test feeds, and the cache's writer.
fn publisher(fx: &Fixture) -> (Statuses, StrippedWriter<GpuInventory, CachedInventory>) {
    let (cache, writer) = fed_by_hand(cached);
    let budget = crate::publish::content::size_budget::STATUS_NODES_BUDGET_BYTES;
    let publisher = Statuses::new(
        Api::all(fx.client.clone()),
        cache,
        fx.client.clone(),
        budget,
        fx.health.clone(),
        fx.metrics.clone(),
        fx.gauges.clone(),
    );
    (publisher, writer)
}

/// One reconcile of `inventory` in the background; the publisher comes back with its result.
fn reconcile_in_background(
    mut publisher: Statuses,
    fx: &Fixture,
    inventory: &Arc<GpuInventory>,
) -> tokio::task::JoinHandle<(Statuses, Result<Outcome>)> {
    let (scans, inventory) = (fx.scans.clone(), inventory.clone());
    tokio::spawn(async move {
        let result = publisher.reconcile_inventory(&inventory, &scans).await;
        (publisher, result)
    })
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

/// A publisher over one 8-GPU node whose first reconcile has written its status: the fixture, the publisher,
/// the mock server and the applied body.
async fn after_first_write() -> (Fixture, Statuses, ApiServer, Value) {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let reconcile = reconcile_in_background(publisher, &fx, &inventory("10", None));
    let written = first_write(&mut server).await;
    let (publisher, result) = reconcile.await.unwrap();
    result.expect("reconciled");
    (fx, publisher, server, written)
}

#[tokio::test]
async fn a_new_status_is_applied_with_its_kind_and_field_manager_and_its_event_follows() {
    let (fx, mut server) = context(vec![gpu_node("a", 8), gpu_node("b", 4)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let reconcile = reconcile_in_background(publisher, &fx, &inventory("10", None));
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
    reconcile.await.unwrap().1.expect("reconciled");
    server.assert_idle();
}

#[tokio::test]
async fn an_unchanged_status_is_not_written_again_and_tells_nothing() {
    let (fx, mut publisher, mut server, written) = after_first_write().await;
    // Past the guard's gap, the cache now holds our write.
    tokio::time::sleep(publisher.writer.min_gap() + Duration::from_millis(50)).await;
    let cached = inventory("11", Some(written["status"].clone()));
    // A write would wait for an answer that never comes: the timeout is that failure.
    tokio::time::timeout(
        Duration::from_secs(5),
        publisher.reconcile_inventory(&cached, &fx.scans),
    )
    .await
    .expect("the reconcile sent a request: an unchanged status was written")
    .expect("reconciled");
    server.assert_idle();
    assert_eq!(publisher.writer.written(), 1, "one write in all");
}

#[tokio::test]
async fn a_forbidden_write_is_an_error_naming_the_object_and_sends_no_event() {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let reconcile = reconcile_in_background(publisher, &fx, &inventory("10", None));
    server.expect(Method::PATCH, STATUS).await.reply_error(
        403,
        "Forbidden",
        "gpuinventories.homelab.youngju.dev \"cluster\" is forbidden: User \"system:serviceaccount:x:y\" \
         cannot patch resource \"gpuinventories/status\" in API group \"homelab.youngju.dev\" at the cluster scope",
    );
    let error = reconcile
        .await
        .unwrap()
        .1
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
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let reconcile = reconcile_in_background(publisher, &fx, &inventory("10", None));
    server.expect(Method::PATCH, STATUS).await.reply_error(
        409,
        "Conflict",
        "Operation cannot be fulfilled on gpuinventories.homelab.youngju.dev \"cluster\": the object has been modified",
    );
    let (publisher, result) = reconcile.await.unwrap();
    let error = result.expect_err("a 409 fails the reconcile");
    assert_eq!(error.metric_label(), "conflict");
    // The retry (the driver's backoff) writes it, and the first-observation event is told then.
    let retry = reconcile_in_background(publisher, &fx, &inventory("10", None));
    first_write(&mut server).await;
    retry.await.unwrap().1.expect("reconciled");
    server.assert_idle();
}

#[tokio::test]
async fn a_node_going_not_ready_is_one_write_and_one_warning() {
    let (_fx, first, _server, written) = after_first_write().await;
    // The same node NotReady: a new scan (the sources' version moves with a change).
    let mut node = gpu_node("a", 8);
    node.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    let (fx2, mut server2) = context(vec![node], vec![]);
    let (mut publisher2, _writer) = publisher(&fx2);
    let model = first.models.get("cluster").expect("a model").clone();
    publisher2.models.insert("cluster".into(), model);
    let cached = inventory("11", Some(written["status"].clone()));
    let reconcile = reconcile_in_background(publisher2, &fx2, &cached);
    let patch = server2.expect(Method::PATCH, STATUS).await;
    assert_eq!(patch.body["status"]["readyGpuNodes"], 0);
    let body = patch.body.clone();
    patch.reply(StatusCode::OK, applied(&body, "12"));
    let event = server2.expect(Method::POST, EVENTS).await;
    assert_eq!(event.body["reason"], "GpuNodeNotReady", "{}", event.body);
    assert_eq!(event.body["type"], "Warning");
    let echo = event.body.clone();
    event.reply(StatusCode::CREATED, echo);
    reconcile.await.unwrap().1.expect("reconciled");
    server2.assert_idle();
}

/// A refused write (403) is retried after its backoff, not on the next wake-up; any other failure (the API
/// server may be back) is retried on the next one. The driver's passes, over one inventory in the cache.
#[tokio::test]
async fn after_a_refused_write_a_wake_up_waits_out_the_backoff() {
    for (code, reason, retried_at_once) in
        [(403, "Forbidden", false), (503, "ServiceUnavailable", true)]
    {
        let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
        let (mut publisher, mut writer) = publisher(&fx);
        let object = Arc::unwrap_or_clone(inventory("10", None));
        writer.apply(kube::runtime::watcher::Event::Apply(object));
        let scans = fx.scans.clone();
        let metrics = fx.metrics.clone();
        let first = tokio::spawn(async move {
            let mut retries = Retries::default();
            let next = pass(&mut publisher, &scans, &metrics, &mut retries).await;
            (publisher, retries, next)
        });
        server.expect(Method::PATCH, STATUS).await.reply_error(
            code,
            reason,
            "gpuinventories.homelab.youngju.dev \"cluster\" is forbidden",
        );
        let (mut publisher, mut retries, next) = first.await.unwrap();
        assert_eq!(next, Duration::from_secs(1), "{code}: the first backoff");
        // A change wakes the publisher at once.
        let (scans, metrics) = (fx.scans.clone(), fx.metrics.clone());
        let again = tokio::spawn(async move {
            let next = pass(&mut publisher, &scans, &metrics, &mut retries).await;
            (retries, next)
        });
        if retried_at_once {
            first_write(&mut server).await;
            let (_, next) = again.await.unwrap();
            assert_eq!(next, fx.scans.next_pass(), "reconciled: the requeue period");
        } else {
            let (retries, next) = again.await.unwrap();
            server.assert_idle();
            assert!(
                next <= Duration::from_secs(1),
                "{next:?}: after the backoff"
            );
            assert!(
                retries
                    .refused_wait("cluster")
                    .is_some_and(|w| w <= Duration::from_secs(1))
            );
        }
    }
}
