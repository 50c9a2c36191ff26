//! The node watch against a mock API server (the fast tier: `crate::fixtures`): a list, a watch that the
//! server ends with 410 Gone (its history was compacted), and the relist that follows, with nothing lost.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::json;

use super::*;
use crate::fixtures::{ApiServer, gpu_node};
use crate::runtime::metrics::Metrics;

fn node_list(version: &str, names: &[&str]) -> serde_json::Value {
    let items: Vec<serde_json::Value> = names
        .iter()
        .map(|n| serde_json::to_value(gpu_node(n, 8)).unwrap())
        .collect();
    json!({ "apiVersion": "v1", "kind": "NodeList", "metadata": { "resourceVersion": version }, "items": items })
}

#[tokio::test]
async fn a_watch_ended_by_410_gone_is_relisted_and_nothing_is_lost() {
    let (service, handle) = tower_test::mock::pair::<
        http::Request<kube::client::Body>,
        http::Response<kube::client::Body>,
    >();
    let mut server = ApiServer::from(handle);
    let client = Client::new(service, "default");
    let metrics = Metrics::new();
    let health = Health::with_relists(
        metrics.watch_restarts.clone(),
        metrics.watch_relists.clone(),
    );
    let signal = ChangeSignal::default();
    let mut changes = signal.subscribe();
    let table = std::sync::Arc::new(crate::inventory::health::HealthTable::default());
    let (store, feed) = nodes::watch_nodes(client, None, table, health.clone(), signal);
    let task = tokio::spawn(feed);

    let list = server.expect(Method::GET, "/api/v1/nodes").await;
    assert_eq!(list.query("watch"), None);
    list.reply(StatusCode::OK, node_list("10", &["a"]));
    let watch = server.expect(Method::GET, "/api/v1/nodes").await;
    assert_eq!(watch.query("watch").as_deref(), Some("true"));
    assert_eq!(watch.query("resourceVersion").as_deref(), Some("10"));
    // The server's history no longer reaches version 10: the watch stream ends with 410 Gone.
    watch.reply_stream(vec![json!({ "type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
        "message": "too old resource version: 10 (250)" } })]);
    // A new list (the relist) brings a node added meanwhile.
    let relist = server.expect(Method::GET, "/api/v1/nodes").await;
    assert_eq!(relist.query("watch"), None, "a relist, not a resumed watch");
    relist.reply(StatusCode::OK, node_list("250", &["a", "b"]));
    let resumed = server.expect(Method::GET, "/api/v1/nodes").await;
    assert_eq!(resumed.query("resourceVersion").as_deref(), Some("250"));
    tokio::time::timeout(Duration::from_secs(5), async {
        while store.state().len() < 2 {
            changes.next().await;
        }
    })
    .await
    .expect("the relisted node reached the cache");
    let mut names: Vec<String> = store.state().iter().map(|n| n.name.to_string()).collect();
    names.sort();
    assert_eq!(names, ["a", "b"]);
    let text = metrics.encode();
    assert!(
        text.contains("gpu_inventory_watch_relists_total{watch=\"nodes\"} 1"),
        "the relist is counted:\n{text}"
    );
    drop(resumed);
    task.abort();
}
