//! The fourth round of reading real objects (#53), live: every object of tests/fixtures/reading4/ (sharing
//! layers, Ascend and the long tail of vendors, cloud health conditions, the GPU operator's leftovers, devices
//! that are no accelerators) created on the local API server, and the operator's status read as the expert
//! reads each one (`<group>-expected.tsv`, written from the sources). Then the quiet minute of a sharing
//! layer: HAMi's handshake annotations changing on their heartbeat for a minute (and KWOK's node heartbeats)
//! write nothing.

mod common;

use std::time::Duration;

use common::reading4::{GROUPS, assert_agree, disagreements, expected};
use common::{TestEnv, fixture_nodes};
use gpu_inventory_operator::crd::GpuInventoryStatus;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kube::api::{Api, Patch, PatchParams};
use serde_json::Value;
use testkit::audit::{AuditTail, audit_offset, is_write};

const CONVERGE: Duration = Duration::from_secs(60);

/// Handshake beats in the quiet minute, one every [`BEAT`].
const QUIET_BEATS: usize = 30;
const BEAT: Duration = Duration::from_secs(2);

/// Judged by the unit tier and `scan -f` (each object alone), not here: on a live cluster a node created
/// without a Ready condition has no kubelet, so the node lifecycle controller makes it NotReady; and every
/// object of the round shares one inventory, so a vendor's labeller runs "in scope" for all of that vendor's
/// nodes (GpuLabelsMissing is about the scope, not the object).
const SCOPE_AND_KUBELET: [&str; 2] = ["NotReady", "GpuLabelsMissing"];

fn entry_json(status: &GpuInventoryStatus, node: &str) -> Option<Value> {
    status
        .nodes
        .iter()
        .find(|n| n.name == node)
        .map(|n| serde_json::to_value(n).unwrap())
}

#[tokio::test]
async fn every_fourth_round_object_reads_live_as_the_expert_reads_it() {
    let env = TestEnv::new("read4").await;
    let mut rows = Vec::new();
    for group in GROUPS {
        env.load_fixture(&format!("reading4/{group}-nodes.yaml"))
            .await;
        let nodes = fixture_nodes(&format!("reading4/{group}-nodes.yaml"));
        for want in expected(group) {
            let node = nodes
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(want.node.as_str()))
                .unwrap_or_else(|| panic!("{group}: no node {}", want.node));
            let labels = serde_json::to_value(&node.metadata.labels)
                .unwrap()
                .as_object()
                .cloned()
                .unwrap_or_default();
            rows.push((want, labels));
        }
    }
    let listed: Vec<String> = rows
        .iter()
        .filter(|(w, _)| w.vendor != "-")
        .map(|(w, _)| env.node_name(&w.node))
        .collect();
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "every accelerator node listed", |s| {
            listed
                .iter()
                .all(|name| s.nodes.iter().any(|n| &n.name == name))
        })
        .await
        .status
        .unwrap();
    let mut failures = Vec::new();
    for (want, labels) in &rows {
        let entry = entry_json(&status, &env.node_name(&want.node));
        for wrong in disagreements(want, entry.as_ref(), labels, &SCOPE_AND_KUBELET) {
            failures.push((want.node.clone(), wrong));
        }
    }
    assert!(rows.len() >= 60, "{} rows", rows.len());
    assert_agree(&failures, rows.len());
    env.cleanup().await;
}

/// One write by the operator to this test's outputs that the audit log holds, received in [from, to]:
/// `verb resource[/subresource] name`.
fn output_write(line: &Value, id: &str, from: Timestamp, to: Timestamp) -> Option<String> {
    let object = &line["objectRef"];
    let name = object["name"].as_str()?;
    let at: Timestamp = line["requestReceivedTimestamp"].as_str()?.parse().ok()?;
    let resource = match object["subresource"].as_str() {
        Some(sub) => format!("{}/{sub}", object["resource"].as_str()?),
        None => object["resource"].as_str()?.to_owned(),
    };
    let key = format!("{} {resource}", line["verb"].as_str()?);
    (line["userAgent"]
        .as_str()?
        .starts_with("gpu-inventory-operator/")
        && line["stage"].as_str() == Some("ResponseComplete")
        && (resource.starts_with("gpunodes") || resource.starts_with("gpuinventories"))
        && name.starts_with(id)
        && is_write(&key)
        && (from..=to).contains(&at))
    .then(|| format!("{key} {name}"))
}

#[tokio::test]
async fn a_sharing_layer_s_heartbeats_write_nothing_in_a_quiet_minute() {
    let env = TestEnv::new("read4-quiet").await;
    // The HAMi nodes whose register annotation lists their GPUs, and their handshakes; every node of the group
    // created Ready, so KWOK keeps it Ready with its own heartbeats (a node without a kubelet would go
    // Ready=Unknown after the node lifecycle controller's grace period: a change, not a heartbeat).
    let mut layered = Vec::new();
    for mut node in fixture_nodes("reading4/sharing-nodes.yaml") {
        let status = node.status.get_or_insert_with(Default::default);
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        conditions.retain(|c| c.type_ != "Ready");
        conditions.push(NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("kubelet is posting ready status".into()),
            ..Default::default()
        });
        layered.push(env.create_node(node).await);
    }
    let nodes: Api<Node> = Api::all(env.client.clone());
    let mut handshakes = Vec::new();
    for name in &layered {
        let node = nodes.get(name).await.unwrap();
        let annotations = node.metadata.annotations.unwrap_or_default();
        if annotations
            .keys()
            .any(|k| k.starts_with("hami.io/node-") && k.contains("register"))
        {
            let keys: Vec<String> = annotations
                .keys()
                .filter(|k| k.starts_with("hami.io/node-handshake"))
                .cloned()
                .collect();
            handshakes.push((name.clone(), keys));
        }
    }
    assert!(handshakes.len() >= 5, "HAMi nodes: {handshakes:?}");
    let audit_log = common::local_cluster_dir().join("audit.log");
    let mut start_tail = AuditTail::at(&audit_log, audit_offset(&audit_log));
    let start_from = Timestamp::now();
    let _operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let want: Vec<&String> = handshakes.iter().map(|(n, _)| n).collect();
    env.wait_inventory(&inv, CONVERGE, "every HAMi node listed", |s| {
        want.iter().all(|n| s.nodes.iter().any(|e| &&e.name == n))
    })
    .await;
    // Settled: the status unchanged through three requeue periods.
    let mut before = env
        .wait_inventory(&inv, CONVERGE, "the status", |_| true)
        .await;
    loop {
        tokio::time::sleep(Duration::from_secs(6)).await;
        let now = env
            .wait_inventory(&inv, CONVERGE, "the status", |_| true)
            .await;
        if now.metadata.resource_version == before.metadata.resource_version {
            break;
        }
        before = now;
    }
    if common::is_local_cluster() {
        // The detector sees the operator's first writes (else an empty list below would prove nothing).
        let mut start = Vec::new();
        let now = Timestamp::now();
        start_tail.read_new(&["gpunodes", "gpuinventories"], |line| {
            start.extend(output_write(line, &env.id, start_from, now));
        });
        assert!(
            !start.is_empty(),
            "no write of the operator's start in the audit log"
        );
    }
    let mut tail = AuditTail::at(&audit_log, audit_offset(&audit_log));
    let from = Timestamp::now();
    // HAMi's device plugin and scheduler rewrite the handshake every few seconds ("Requesting_<time>",
    // "Reported <time>"); here every 2 s, on every HAMi node, for a minute.
    for beat in 0..QUIET_BEATS {
        for (name, keys) in &handshakes {
            let at = Timestamp::now();
            let value = if beat % 2 == 0 {
                format!("Requesting_{}", at.strftime("%Y.%m.%d %H:%M:%S"))
            } else {
                format!("Reported {at}")
            };
            let annotations: serde_json::Map<String, Value> = keys
                .iter()
                .map(|k| (k.clone(), Value::from(value.clone())))
                .collect();
            let patch = serde_json::json!({"metadata": {"annotations": annotations}});
            nodes
                .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap();
        }
        tokio::time::sleep(BEAT).await;
    }
    let to = Timestamp::now();
    let after = env
        .wait_inventory(&inv, CONVERGE, "the status", |_| true)
        .await;
    let mut writes = Vec::new();
    if common::is_local_cluster() {
        // Requests received by `to` are in the audit log a moment later.
        tokio::time::sleep(Duration::from_secs(2)).await;
        tail.read_new(&["gpunodes", "gpuinventories"], |line| {
            writes.extend(output_write(line, &env.id, from, to));
        });
    }
    if before.metadata.resource_version != after.metadata.resource_version {
        writes.push(format!("GpuInventory {inv} changed"));
    }
    assert!(
        writes.is_empty(),
        "{} writes while only HAMi's handshakes changed ({QUIET_BEATS} beats on {} nodes): {writes:?}",
        writes.len(),
        handshakes.len()
    );
    env.cleanup().await;
}
