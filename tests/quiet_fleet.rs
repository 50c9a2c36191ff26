//! No write without a change, at scale: on thousands of static GPU nodes (NotReady, no kubelet, nothing
//! changing), once every GpuNode has its status the operator writes no GpuNode through a quiet window of ten
//! passes, counted from the API server's audit log. A test binary of its own: it loads the API server and the node lifecycle
//! controller for minutes, so `make test` (hack/integration-tests.sh) runs it alone, after every other binary.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{Progress, TEST_LABEL, TestEnv, eventually_progressing, local_cluster_dir};
use futures::StreamExt;
use gpu_inventory_operator::crd::GpuNode;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams};
use serde_json::Value;
use testkit::audit::{AuditTail, audit_offset, is_write};

/// How many static GPU nodes: the fleet on which the issue saw GpuNodes rewritten in a quiet minute.
const STATIC_GPU_NODES: usize = 4000;
/// After every GpuNode has its status: a few passes (`--requeue 2s`) to settle before measuring.
const SETTLE: Duration = Duration::from_secs(6);
/// The quiet period measured. What makes it quiet is the GpuNode publisher's passes finding nothing to write,
/// so the window needs passes, not wall time: at `--requeue 2s` it holds about 10, and the test fails unless
/// the operator's own counter shows at least `MIN_PASSES` of them (a minute held 30, to no more effect).
const QUIET: Duration = Duration::from_secs(20);
/// The fewest GpuNode passes the quiet window must hold to prove the point.
const MIN_PASSES: u64 = 5;
/// The user agent of the operator's requests (src/runtime/client.rs).
const OPERATOR_AGENT: &str = "gpu-inventory-operator/";

/// A GPU node whose kubelet is gone, as the node lifecycle controller leaves it: every condition it manages
/// `Unknown` and the `unreachable` taints on. Created so, the controller has nothing to change in what the
/// operator reads (it may still stamp the NoExecute taint's time, which the operator does not keep), so the
/// nodes stay as they are through the quiet minute.
fn static_gpu_node(template: &Node, i: usize) -> Node {
    let mut node = template.clone();
    node.metadata.name = Some(format!("static-{i:04}"));
    let long_ago = Time("2026-01-01T00:00:00Z".parse().expect("a timestamp"));
    let unknown = |type_: &str| NodeCondition {
        type_: type_.into(),
        status: "Unknown".into(),
        reason: Some("NodeStatusUnknown".into()),
        message: Some("Kubelet stopped posting node status.".into()),
        last_heartbeat_time: Some(long_ago.clone()),
        last_transition_time: Some(long_ago.clone()),
    };
    let status = node.status.get_or_insert_with(Default::default);
    status.conditions = Some(
        ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"]
            .map(unknown)
            .into(),
    );
    let taint = |effect: &str, time_added: Option<Time>| Taint {
        key: "node.kubernetes.io/unreachable".into(),
        effect: effect.into(),
        time_added,
        value: None,
    };
    node.spec.get_or_insert_with(Default::default).taints = Some(vec![
        taint("NoSchedule", None),
        taint("NoExecute", Some(long_ago.clone())),
    ]);
    node
}

/// The resourceVersion of each object `api` lists with `params`.
async fn versions<K>(api: &Api<K>, params: &ListParams) -> BTreeMap<String, String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list_metadata(params)
        .await
        .expect("list the test's objects")
        .items
        .into_iter()
        .filter_map(|n| Some((n.metadata.name?, n.metadata.resource_version?)))
        .collect()
}

/// One write the audit log holds: `verb resource[/subresource] name`.
fn gpunode_write(line: &Value, id: &str, from: Timestamp, to: Timestamp) -> Option<String> {
    let agent = line["userAgent"].as_str()?;
    let object = &line["objectRef"];
    let name = object["name"].as_str()?;
    let at: Timestamp = line["requestReceivedTimestamp"].as_str()?.parse().ok()?;
    let resource = match object["subresource"].as_str() {
        Some(sub) => format!("{}/{sub}", object["resource"].as_str()?),
        None => object["resource"].as_str()?.to_owned(),
    };
    let verb = line["verb"].as_str()?;
    let key = format!("{verb} {resource}");
    (agent.starts_with(OPERATOR_AGENT)
        && line["stage"].as_str() == Some("ResponseComplete")
        && resource.starts_with("gpunodes")
        && name.starts_with(id)
        && is_write(&key)
        && at >= from
        && at <= to)
        .then(|| format!("{key} {name}"))
}

/// The GpuNode publisher's passes so far, from the operator's `/metrics`.
async fn gpunode_passes(operator: &common::OperatorProcess) -> u64 {
    let (status, text) = operator.http_get("/metrics").await;
    assert_eq!(status, 200, "GET /metrics: {text}");
    text.lines()
        .find_map(|line| {
            line.strip_prefix("gpu_inventory_reconciles_total{controller=\"gpunodes\"} ")
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no GpuNode reconciles in /metrics:\n{text}"))
}

#[tokio::test]
async fn a_quiet_window_on_thousands_of_static_gpu_nodes_writes_no_gpunode() {
    let env = TestEnv::new("quiet-fleet").await;
    let template = common::fixture_nodes("gfd-nodes.yaml")
        .into_iter()
        .find(|n| n.metadata.name.as_deref() == Some("dgx-h100-01"))
        .expect("the H100 fixture node");
    // Not Ready: `create_node` hands only Ready nodes to KWOK, so these have no kubelet and never change.
    futures::stream::iter(0..STATIC_GPU_NODES)
        .for_each_concurrent(32, |i| {
            let (env, node) = (&env, static_gpu_node(&template, i));
            async move {
                env.create_node(node).await;
            }
        })
        .await;
    let audit_log = local_cluster_dir().join("audit.log");
    let mut start_tail = AuditTail::at(&audit_log, audit_offset(&audit_log));
    let start_from = Timestamp::now();
    let operator = env.start_operator("2s");
    let periods = operator.periods();
    let started = Instant::now();
    let gpunodes: Api<GpuNode> = Api::all(env.client.clone());
    let params = ListParams::default().labels(&format!("{TEST_LABEL}={}", env.id));
    // The writes are API-server bound (a request a node): the wait follows them, listed every 2 s (a list
    // of thousands of GpuNodes is itself work for the server).
    eventually_progressing(
        periods.follow(),
        Duration::from_secs(2),
        "a GpuNode with its status for every static node",
        || async {
            let Ok(list) = gpunodes.list(&params).await else {
                return Progress::Partly(0);
            };
            match list.items.iter().filter(|n| n.status.is_some()).count() {
                n if n == STATIC_GPU_NODES => Progress::Done(()),
                n => Progress::Partly(n),
            }
        },
    )
    .await;
    eprintln!(
        "{STATIC_GPU_NODES} GpuNodes written {:?} after the operator's start",
        started.elapsed()
    );
    // One write a GpuNode to start: a server-side apply of the whole object, status included (the GpuNode
    // CRD has no status subresource; a create and then a status write took two).
    if common::is_local_cluster() {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let mut start_writes: BTreeMap<String, u64> = BTreeMap::new();
        let now = Timestamp::now();
        start_tail.read_new(&["gpunodes"], |line| {
            if let Some(write) = gpunode_write(line, &env.id, start_from, now) {
                let key = write.rsplit_once(' ').map_or("", |(key, _)| key).to_owned();
                *start_writes.entry(key).or_default() += 1;
            }
        });
        assert_eq!(
            start_writes,
            BTreeMap::from([("patch gpunodes".to_owned(), STATIC_GPU_NODES as u64)]),
            "the writes to start, per request kind"
        );
    }
    tokio::time::sleep(SETTLE).await;

    let mut tail = AuditTail::at(&audit_log, audit_offset(&audit_log));
    let nodes_before = versions(&Api::<Node>::all(env.client.clone()), &params).await;
    let gpunodes_before = versions(&gpunodes, &params).await;
    let passes_before = gpunode_passes(&operator).await;
    let from = Timestamp::now();
    tokio::time::sleep(QUIET).await;
    let to = Timestamp::now();
    let passes = gpunode_passes(&operator).await - passes_before;
    assert!(
        passes >= MIN_PASSES,
        "only {passes} GpuNode passes in the quiet window of {QUIET:?} (at least {MIN_PASSES} make it a test)"
    );
    let nodes_after = versions(&Api::<Node>::all(env.client.clone()), &params).await;
    let gpunodes_after = versions(&gpunodes, &params).await;
    let changed = |before: &BTreeMap<String, String>, after: &BTreeMap<String, String>| {
        after
            .iter()
            .filter(|(name, rv)| before.get(*name) != Some(rv))
            .map(|(name, _)| name.clone())
            .collect::<BTreeSet<String>>()
    };
    let changed_nodes = changed(&nodes_before, &nodes_after);
    // Every request, also a write that changed nothing, is in the local API server's audit log; on another
    // cluster, a write shows as a new resourceVersion.
    let mut writes = Vec::new();
    if common::is_local_cluster() {
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        tail.read_new(&["gpunodes"], |line| {
            writes.extend(gpunode_write(line, &env.id, from, to));
        });
    }
    writes.extend(
        changed(&gpunodes_before, &gpunodes_after)
            .into_iter()
            .map(|name| format!("GpuNode {name} changed")),
    );
    assert!(
        writes.is_empty(),
        "{} GpuNode writes in a quiet minute on {STATIC_GPU_NODES} static GPU nodes: {writes:?}; nodes whose \
         object changed meanwhile ({}): {changed_nodes:?}",
        writes.len(),
        changed_nodes.len()
    );
}
