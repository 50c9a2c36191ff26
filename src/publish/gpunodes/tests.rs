//! The GpuNode publisher's pass against a mock API server (the fast tier: `crate::fixtures`).

use http::{Method, StatusCode};
use kube::runtime::watcher::Event;
use serde_json::{Value, json};

use super::*;
use crate::fixtures::{ApiServer, context, gpu_node, node};

const GPUNODES: &str = "/apis/homelab.youngju.dev/v1/gpunodes";

fn api(ctx: &Context) -> Api<GpuNode> {
    Api::all(ctx.client.clone())
}

/// Answers one GpuNode's two requests (object, then status) as the server would; returns both bodies.
async fn answer_write(server: &mut ApiServer, name: &str, version: u32) -> (Value, Value) {
    let object = server
        .expect(Method::PATCH, &format!("{GPUNODES}/{name}"))
        .await;
    assert_eq!(object.query("fieldManager").as_deref(), Some(FIELD_MANAGER));
    let object_body = object.body.clone();
    let mut answer = object_body.clone();
    answer["metadata"]["resourceVersion"] = json!(version.to_string());
    object.reply(StatusCode::OK, answer.clone());
    let status = server
        .expect(Method::PATCH, &format!("{GPUNODES}/{name}/status"))
        .await;
    let status_body = status.body.clone();
    answer["status"] = status_body["status"].clone();
    answer["metadata"]["resourceVersion"] = json!((version + 1).to_string());
    status.reply(StatusCode::OK, answer);
    (object_body, status_body)
}

#[tokio::test]
async fn each_gpu_node_gets_its_object_then_its_status_and_a_cpu_node_nothing() {
    let cpu = node(json!({ "metadata": { "name": "cpu", "uid": "uid-cpu" },
        "status": { "capacity": { "cpu": "8" }, "allocatable": { "cpu": "8" },
                    "conditions": [{ "type": "Ready", "status": "True" }] } }));
    let (ctx, mut server) = context(vec![gpu_node("a", 8), cpu], vec![]);
    let scope = GpuNodeScope::default();
    let (store, _writer) = gpunode_store(&scope);
    let pass = {
        let (ctx, store, scope) = (ctx.clone(), store.clone(), scope.clone());
        tokio::spawn(async move {
            let mut unchanged = Unchanged::default();
            reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged).await
        })
    };
    let (object, status) = answer_write(&mut server, "a", 5).await;
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
    assert_eq!(status["kind"], "GpuNode");
    assert_eq!(status["status"]["count"], 8);
    assert_eq!(status["status"]["freeGpus"], 8);
    pass.await.unwrap().expect("the pass succeeded");
    server.assert_idle();
}

#[tokio::test]
async fn a_second_pass_over_unchanged_nodes_writes_nothing() {
    let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let scope = GpuNodeScope::default();
    let (store, mut writer) = gpunode_store(&scope);
    let pass = {
        let (ctx, store, scope) = (ctx.clone(), store.clone(), scope.clone());
        tokio::spawn(async move {
            let mut unchanged = Unchanged::default();
            let result = reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged).await;
            (result, unchanged)
        })
    };
    let (object, status) = answer_write(&mut server, "a", 5).await;
    let (result, mut unchanged) = pass.await.unwrap();
    result.expect("the pass succeeded");
    assert_eq!(
        unchanged.len(),
        0,
        "a node just written is planned again next time"
    );
    // The watch brings our write into the cache.
    let mut served = object;
    served["status"] = status["status"].clone();
    served["metadata"]["resourceVersion"] = json!("6");
    writer.apply(Event::Apply(serde_json::from_value(served).unwrap()));
    tokio::time::sleep(ctx.gpunode_writer.min_gap() + std::time::Duration::from_millis(50)).await;
    let again = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged),
    )
    .await
    .expect("the pass sent a request: an unchanged GpuNode was written");
    assert_eq!(again.expect("the pass succeeded"), None);
    assert_eq!(unchanged.len(), 1, "found current on the cached objects");
    // A third pass on the same objects skips the node without planning it, and counts the skip.
    let skipped = ctx.gpunode_writer.skipped();
    let gpunodes = api(&ctx);
    let third = reconcile_all(&ctx, &gpunodes, &store, &scope, &mut unchanged);
    let third = tokio::time::timeout(std::time::Duration::from_secs(5), third).await;
    assert_eq!(
        third.expect("no request").expect("the pass succeeded"),
        None
    );
    assert_eq!(ctx.gpunode_writer.skipped(), skipped + 1);
    assert_eq!(unchanged.len(), 1);
    server.assert_idle();
}

#[tokio::test]
async fn a_gpunode_without_its_gpu_node_is_deleted_and_one_already_gone_is_fine() {
    let (ctx, mut server) = context(vec![], vec![]);
    let scope = GpuNodeScope::default();
    let (store, mut writer) = gpunode_store(&scope);
    let stale: GpuNode = serde_json::from_value(json!({
        "apiVersion": "homelab.youngju.dev/v1", "kind": "GpuNode",
        "metadata": { "name": "gone", "resourceVersion": "3" }, "spec": { "nodeName": "gone" } }))
    .unwrap();
    writer.apply(Event::Apply(stale));
    let pass = {
        let (ctx, store, scope) = (ctx.clone(), store.clone(), scope.clone());
        tokio::spawn(async move {
            let mut unchanged = Unchanged::default();
            reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged).await
        })
    };
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
        .expect("a GpuNode already gone is no failure");
    server.assert_idle();
}

#[tokio::test]
async fn a_forbidden_status_write_fails_the_pass_and_is_planned_again() {
    let (ctx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let scope = GpuNodeScope::default();
    let (store, _writer) = gpunode_store(&scope);
    let pass = {
        let (ctx, store, scope) = (ctx.clone(), store.clone(), scope.clone());
        tokio::spawn(async move {
            let mut unchanged = Unchanged::default();
            reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged).await
        })
    };
    let object = server.expect(Method::PATCH, &format!("{GPUNODES}/a")).await;
    let mut answer = object.body.clone();
    answer["metadata"]["resourceVersion"] = json!("5");
    object.reply(StatusCode::OK, answer);
    server
        .expect(Method::PATCH, &format!("{GPUNODES}/a/status"))
        .await
        .reply_error(403, "Forbidden", "gpunodes.homelab.youngju.dev \"a\" is forbidden: cannot patch resource \"gpunodes/status\"");
    let error = pass.await.unwrap().expect_err("the pass failed");
    assert_eq!(error.metric_label(), "forbidden");
    assert!(
        error.to_string().contains("the status of GpuNode a"),
        "{error}"
    );
    // Nothing was recorded as written: the next pass plans the write again.
    assert_eq!(ctx.gpunode_writer.written(), 0);
    let retry = {
        let (ctx, store, scope) = (ctx.clone(), store.clone(), scope.clone());
        tokio::spawn(async move {
            let mut unchanged = Unchanged::default();
            reconcile_all(&ctx, &api(&ctx), &store, &scope, &mut unchanged).await
        })
    };
    answer_write(&mut server, "a", 7).await;
    retry.await.unwrap().expect("the retry succeeded");
    server.assert_idle();
}
