//! The fast tier's fixtures (compiled for tests only): what the publishers are made with ([`Fixture`]) over a
//! mock API server, as kube-rs's
//! controller-rs tests its reconciler. The publishers' requests go to a `tower_test` mock; a test answers
//! each one as the API server would (an object, a 403, a 409, ...) and checks what was asked: method, path,
//! field manager, body. Nothing else is mocked: the sources hold real (stripped) objects, and the plans,
//! guards, wire conversion and error handling are the operator's own.

use std::sync::Arc;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::client::Body;
use serde_json::{Value, json};
use tower_test::mock::{self, Handle, SendResponse};

use crate::publish::metrics::InventoryGauges;
use crate::publish::scan_service::ScanService;
use crate::runtime::health::Health;
use crate::runtime::metrics::Metrics;
use crate::sources::Sources;

/// The mock API server's side: the requests the publishers sent, one at a time.
pub(crate) struct ApiServer(Handle<Request<Body>, Response<Body>>);

/// One request the publishers sent, read whole.
pub(crate) struct Sent {
    /// `GET`, `PATCH`, ...
    pub(crate) method: Method,
    /// Path and query.
    pub(crate) uri: String,
    /// The body as JSON (`Value::Null` when empty).
    pub(crate) body: Value,
    reply: SendResponse<Response<Body>>,
}

impl Sent {
    /// Answers with `status` and this JSON body.
    pub(crate) fn reply(self, status: StatusCode, body: Value) {
        let response = Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&body).unwrap()))
            .unwrap();
        self.reply.send_response(response);
    }

    /// Answers with an API error, as the API server words one (`metav1.Status`).
    pub(crate) fn reply_error(self, code: u16, reason: &str, message: &str) {
        let status = StatusCode::from_u16(code).unwrap();
        self.reply(
            status,
            json!({ "kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                    "reason": reason, "code": code }),
        );
    }

    /// Answers a watch with these events, one JSON line each, then ends the stream.
    pub(crate) fn reply_stream(self, events: Vec<Value>) {
        let mut body = Vec::new();
        for event in events {
            body.extend(serde_json::to_vec(&event).unwrap());
            body.push(b'\n');
        }
        let response = Response::builder()
            .status(StatusCode::OK)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        self.reply.send_response(response);
    }

    /// The path without the query.
    pub(crate) fn path(&self) -> &str {
        self.uri.split('?').next().unwrap_or_default()
    }

    /// A query parameter's value.
    pub(crate) fn query(&self, key: &str) -> Option<String> {
        let query = self.uri.split_once('?')?.1;
        query.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (k == key).then(|| v.to_owned())
        })
    }
}

impl From<Handle<Request<Body>, Response<Body>>> for ApiServer {
    fn from(handle: Handle<Request<Body>, Response<Body>>) -> Self {
        ApiServer(handle)
    }
}

impl ApiServer {
    /// The next request; fails the test when none comes within 5 s.
    pub(crate) async fn next(&mut self) -> Sent {
        let (request, reply) = tokio::time::timeout(Duration::from_secs(5), self.0.next_request())
            .await
            .expect("the publisher sent no request within 5 s")
            .expect("the client is gone");
        let (parts, body) = request.into_parts();
        let bytes = body.collect_bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("{} {}: body is no JSON: {e}", parts.method, parts.uri))
        };
        Sent {
            method: parts.method,
            uri: parts.uri.to_string(),
            body,
            reply,
        }
    }

    /// The next request, which must be `method` on `path`.
    pub(crate) async fn expect(&mut self, method: Method, path: &str) -> Sent {
        let sent = self.next().await;
        assert_eq!(
            (&sent.method, sent.path()),
            (&method, path),
            "unexpected request {} {}",
            sent.method,
            sent.uri
        );
        sent
    }

    /// Fails the test if a request is waiting.
    pub(crate) fn assert_idle(&mut self) {
        if let std::task::Poll::Ready(Some((request, _))) = self.0.poll_request() {
            panic!(
                "no request expected, got {} {}",
                request.method(),
                request.uri()
            );
        }
    }
}

/// What the publishers are made with: a client that talks to a mock API server, and scans of sources holding
/// fixed objects.
pub(crate) struct Fixture {
    /// The client of the mock API server.
    pub(crate) client: Client,
    /// Scans of the fixed sources (requeue 30 s, no grace).
    pub(crate) scans: Arc<ScanService>,
    /// The process's metrics, with the inventories' gauges registered.
    pub(crate) metrics: Arc<Metrics>,
    /// The inventories' gauges.
    pub(crate) gauges: Arc<InventoryGauges>,
    /// Readiness and failure reporting.
    pub(crate) health: Health,
}

/// The publishers' makings over a mock API server, with sources holding `nodes` and `pods`.
pub(crate) fn context(nodes: Vec<Node>, pods: Vec<Pod>) -> (Fixture, ApiServer) {
    let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "default");
    let gauges = Arc::new(InventoryGauges::default());
    let metrics = Arc::new(Metrics::with_families(|r| gauges.register(r)));
    let health = Health::new(metrics.watch_restarts.clone());
    let scans = ScanService::new(
        Sources::fixed(nodes, pods),
        Duration::from_secs(30),
        Duration::ZERO,
    );
    let fixture = Fixture {
        client,
        scans: Arc::new(scans),
        metrics,
        gauges,
        health,
    };
    (fixture, ApiServer(handle))
}

/// A node from JSON (`metadata.name` and the rest as given).
pub(crate) fn node(value: Value) -> Node {
    serde_json::from_value(value).unwrap()
}

/// A Ready GPU node with `gpus` H100s, labelled by GPU Feature Discovery.
pub(crate) fn gpu_node(name: &str, gpus: u32) -> Node {
    let list = json!({ "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": gpus.to_string() });
    node(json!({
        "metadata": { "name": name, "uid": format!("uid-{name}"), "resourceVersion": "1",
            "labels": { "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": gpus.to_string(),
                        "nvidia.com/gpu.present": "true" } },
        "status": { "capacity": list, "allocatable": list,
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }] }
    }))
}
