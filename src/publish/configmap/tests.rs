//! The ConfigMap publisher's reconcile against a mock API server (the fast tier: `crate::fixtures`).

use std::sync::Arc;
use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::*;
use crate::fixtures::{Fixture, context, gpu_node};
use crate::publish::driver::own_objects::fed_by_hand;
use crate::sources::stripped::StrippedWriter;

const PATH: &str = "/api/v1/namespaces/gpu/configmaps/gpu-node-status";

fn target() -> ConfigMapTarget {
    ConfigMapTarget {
        namespace: "gpu".into(),
        name: "gpu-node-status".into(),
    }
}

fn served(data: &Value, version: &str) -> Value {
    json!({ "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "gpu-node-status", "namespace": "gpu", "resourceVersion": version },
            "data": data })
}

/// The publisher over a cache the test feeds, and the cache's writer.
fn publisher(fx: &Fixture) -> (Arc<ConfigMaps>, StrippedWriter<ConfigMap, CachedConfigMap>) {
    let (cache, writer) = fed_by_hand(cached);
    let api = Api::namespaced(fx.client.clone(), "gpu");
    (
        Arc::new(ConfigMaps::new(api, cache, target(), &fx.metrics)),
        writer,
    )
}

/// One reconcile, in the background.
fn reconcile_in_background(
    publisher: &Arc<ConfigMaps>,
    fx: &Fixture,
) -> tokio::task::JoinHandle<Result<Outcome>> {
    let (publisher, scans) = (publisher.clone(), fx.scans.clone());
    tokio::spawn(async move { publisher.reconcile_configmap(&scans).await })
}

#[tokio::test]
async fn the_configmap_is_applied_whole_then_foreign_keys_are_removed_then_nothing_repeats() {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, mut writer) = publisher(&fx);
    let pass = reconcile_in_background(&publisher, &fx);
    let apply = server.expect(Method::PATCH, PATH).await;
    assert_eq!(apply.query("fieldManager").as_deref(), Some(FIELD_MANAGER));
    assert_eq!(apply.body["apiVersion"], "v1");
    assert_eq!(apply.body["kind"], "ConfigMap");
    let data = apply.body["data"].clone();
    let entry: Value = serde_json::from_str(data["a"].as_str().expect("key a")).unwrap();
    assert_eq!(
        (entry["name"].as_str(), entry["count"].as_u64()),
        (Some("a"), Some(8))
    );
    assert!(
        data["_summary"]
            .as_str()
            .unwrap()
            .contains("\"totalGpuNodes\":1")
    );
    // A key someone else added by hand is still there after our apply: it is removed.
    let mut with_foreign = data.clone();
    with_foreign["hand-made"] = json!("x");
    apply.reply(StatusCode::OK, served(&with_foreign, "7"));
    let merge = server.expect(Method::PATCH, PATH).await;
    assert_eq!(merge.body, json!({ "data": { "hand-made": null } }));
    merge.reply(StatusCode::OK, served(&data, "8"));
    pass.await.unwrap().expect("reconciled");
    // The watch brings it into the cache; the next pass writes nothing.
    writer.apply(watcher::Event::Apply(
        serde_json::from_value(served(&data, "8")).unwrap(),
    ));
    tokio::time::sleep(publisher.writer.min_gap() + Duration::from_millis(50)).await;
    tokio::time::timeout(
        Duration::from_secs(5),
        publisher.reconcile_configmap(&fx.scans),
    )
    .await
    .expect("the reconcile sent a request: an unchanged ConfigMap was written")
    .expect("reconciled");
    server.assert_idle();
}

#[tokio::test]
async fn a_forbidden_configmap_write_says_which_configmap_and_why() {
    let (fx, mut server) = context(vec![gpu_node("a", 8)], vec![]);
    let (publisher, _writer) = publisher(&fx);
    let pass = reconcile_in_background(&publisher, &fx);
    server.expect(Method::PATCH, PATH).await.reply_error(
        403,
        "Forbidden",
        "configmaps \"gpu-node-status\" is forbidden: User \"system:serviceaccount:gpu:op\" cannot patch resource \"configmaps\" in API group \"\" in the namespace \"gpu\"",
    );
    let error = pass.await.unwrap().expect_err("a 403 fails the reconcile");
    assert_eq!(error.metric_label(), "forbidden");
    let text = error.to_string();
    assert!(text.contains("gpu/gpu-node-status"), "{text}");
    assert!(text.contains("cannot patch resource"), "{text}");
    server.assert_idle();
}
