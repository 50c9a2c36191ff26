//! The GpuNode publisher's pass against a mock API server (the fast tier: `crate::fixtures`).

use http::{Method, StatusCode};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::*;
use crate::fixtures::{ApiServer, Fixture, context, gpu_node, node};
use crate::publish::driver::own_objects::fed_by_hand;
use crate::sources::stripped::StrippedWriter;

const GPUNODES: &str = "/apis/homelab.youngju.dev/v1/gpunodes";

/// The publisher (scope: every node) over a cache the test feeds, and the cache's writer.
fn publisher(fx: &Fixture) -> (GpuNodes, StrippedWriter<GpuNode, CachedGpuNode>) {
    let scope = GpuNodeScope::default();
    let (cache, writer) = fed_by_hand(cached(scope.keys.clone()));
    let api = Api::all(fx.client.clone());
    (GpuNodes::new(api, cache, scope, &fx.metrics), writer)
}

/// One pass in the background; the publisher comes back with the pass's result.
fn pass_in_background(
    mut publisher: GpuNodes,
    fx: &Fixture,
) -> JoinHandle<(GpuNodes, Result<Option<Duration>>)> {
    let scans = fx.scans.clone();
    tokio::spawn(async move {
        let result = publisher.reconcile_all(&scans).await;
        (publisher, result)
    })
}

/// Answers one GpuNode's request (one apply of the whole object, status included) as the server would;
/// returns its body.
async fn answer_write(server: &mut ApiServer, name: &str, version: u32) -> Value {
    let object = server
        .expect(Method::PATCH, &format!("{GPUNODES}/{name}"))
        .await;
    assert_eq!(object.query("fieldManager").as_deref(), Some(FIELD_MANAGER));
    let body = object.body.clone();
    let mut answer = body.clone();
    answer["metadata"]["resourceVersion"] = json!(version.to_string());
    object.reply(StatusCode::OK, answer);
    body
}

#[tokio::test]
async fn each_gpu_node_gets_one_apply_with_its_status_and_a_cpu_node_nothing() {
    let cpu = node(json!({ "metadata": { "name": "cpu", "uid": "uid-cpu" },
        "status": { "capacity": { "cpu": "8" }, "allocatable": { "cpu": "8" },
                    "conditions": [{ "type": "Ready", "status": "True" }] } }));
    let (fx, mut server) = context(vec![gpu_node("a", 8), cpu], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let pass = pass_in_background(publisher, &fx);
    let object = answer_write(&mut server, "a", 5).await;
    assert_eq!(object["apiVersion"], "homelab.youngju.dev/v1");
    assert_eq!(object["kind"], "GpuNode");
    assert_eq!(object["spec"]["nodeName"], "a");
    assert_eq!(
        object["metadata"]["ownerReferences"][0],
        json!({ "apiVersion": "v1", "kind": "Node", "name": "a", "uid": "uid-a" }),
        "the garbage collector removes it with its node"
    );
    assert_eq!(
        object["metadata"]["labels"]["homelab.youngju.dev/vendor"],
        "nvidia"
    );
    assert_eq!(
        object["metadata"]["labels"]["homelab.youngju.dev/has-issues"],
        "false"
    );
    assert_eq!(object["status"]["count"], 8);
    assert_eq!(object["status"]["freeGpus"], 8);
    pass.await.unwrap().1.expect("the pass succeeded");
    server.assert_idle();
}

#[tokio::test]
async fn a_second_pass_over_unchanged_nodes_writes_nothing() {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, mut writer) = publisher(&fx);
    let pass = pass_in_background(publisher, &fx);
    let object = answer_write(&mut server, "a", 5).await;
    let (mut publisher, result) = pass.await.unwrap();
    result.expect("the pass succeeded");
    assert_eq!(
        publisher.unchanged.len(),
        0,
        "a node just written is planned again next time"
    );
    // The watch brings our write into the cache.
    let mut served = object;
    served["metadata"]["resourceVersion"] = json!("6");
    writer.apply(Event::Apply(serde_json::from_value(served).unwrap()));
    tokio::time::sleep(publisher.writer.min_gap() + Duration::from_millis(50)).await;
    let again = tokio::time::timeout(Duration::from_secs(5), publisher.reconcile_all(&fx.scans))
        .await
        .expect("the pass sent a request: an unchanged GpuNode was written");
    assert_eq!(again.expect("the pass succeeded"), None);
    assert_eq!(
        publisher.unchanged.len(),
        1,
        "found current on the cached objects"
    );
    // A third pass on the same objects skips the node without planning it, and counts the skip.
    let skipped = publisher.writer.skipped();
    let third =
        tokio::time::timeout(Duration::from_secs(5), publisher.reconcile_all(&fx.scans)).await;
    assert_eq!(
        third.expect("no request").expect("the pass succeeded"),
        None
    );
    assert_eq!(publisher.writer.skipped(), skipped + 1);
    assert_eq!(publisher.unchanged.len(), 1);
    server.assert_idle();
}

#[tokio::test]
async fn a_gpunode_without_its_gpu_node_is_deleted_and_one_already_gone_is_fine() {
    let (fx, mut server) = context(vec![], vec![]);
    let (publisher, mut writer) = publisher(&fx);
    let stale: GpuNode = serde_json::from_value(json!({
        "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuNode",
        "metadata": { "name": "gone", "resourceVersion": "3" }, "spec": { "nodeName": "gone" } }))
    .unwrap();
    writer.apply(Event::Apply(stale));
    let pass = pass_in_background(publisher, &fx);
    let delete = server
        .expect(Method::DELETE, &format!("{GPUNODES}/gone"))
        .await;
    delete.reply_error(
        404,
        "NotFound",
        "gpunodes.homelab.youngju.dev \"gone\" not found",
    );
    pass.await
        .unwrap()
        .1
        .expect("a GpuNode already gone is no failure");
    server.assert_idle();
}

#[tokio::test]
async fn a_forbidden_write_fails_the_pass_and_is_planned_again() {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let pass = pass_in_background(publisher, &fx);
    server
        .expect(Method::PATCH, &format!("{GPUNODES}/a"))
        .await
        .reply_error(
            403,
            "Forbidden",
            "gpunodes.homelab.youngju.dev \"a\" is forbidden: cannot patch resource \"gpunodes\"",
        );
    let (publisher, result) = pass.await.unwrap();
    let error = result.expect_err("the pass failed");
    assert_eq!(error.metric_label(), "forbidden");
    assert!(error.to_string().contains("writing GpuNode a"), "{error}");
    // Nothing was recorded as written: the next pass plans the write again.
    assert_eq!(publisher.writer.written(), 0);
    let retry = pass_in_background(publisher, &fx);
    answer_write(&mut server, "a", 7).await;
    retry.await.unwrap().1.expect("the retry succeeded");
    server.assert_idle();
}
