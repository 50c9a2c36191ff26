//! The one node watch of the process, and the stripped cache every publisher reads.
//!
//! Nodes are big (images, managed fields, annotations) and chatty (heartbeats). The cache keeps only what the
//! scanner reads, and it signals a change only when that part changed, so heartbeats wake nobody.

use std::collections::BTreeMap;
use std::future::Future;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, NodeSpec, NodeStatus, Taint};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};

use super::ChangeSignal;
use super::slim::{SlimNode, map_event};
use crate::inventory::health::HealthTable;
use crate::inventory::vendors::is_read_resource;
use crate::runtime::health::Health;
use crate::runtime::{backoff, memory};

/// Starts the node watch: returns the cache and the task that feeds it (run it until shutdown). The task
/// signals `changes` whenever a node changed in a way the scanner can see.
pub(crate) fn watch_nodes(
    client: Client,
    label_selector: Option<&str>,
    table: &'static HealthTable,
    health: Health,
    changes: ChangeSignal,
) -> (Store<Node>, impl Future<Output = ()> + Send + 'static) {
    let (store, mut writer) = reflector::store::<Node>();
    // Pages are read whole before decoding: 100 nodes (~1.5 MiB of JSON) instead of the default 500 keeps the
    // start-up peak low at the cost of a few more LIST pages.
    let mut config = watcher::Config::default().page_size(100);
    if let Some(selector) = label_selector {
        config = config.labels(selector);
    }
    // Decoded slim (only the fields the scanner reads are built), then stripped to what it reports.
    let api: Api<SlimNode> = Api::all(client);
    let reader = store.clone();
    let feed = async move {
        let mut events = watcher(api, config)
            .backoff(backoff::WATCH.backoff())
            .map_ok(|event| map_event(event, |slim| cached_node_with(slim, table)))
            .boxed();
        while let Some(event) = events.next().await {
            match event {
                Ok(event) => {
                    health.watch_event("nodes", &event);
                    let changed = is_visible_change(&reader, &event);
                    writer.apply_watcher_event(&event);
                    if matches!(event, watcher::Event::InitDone) {
                        memory::release_free_pages();
                    }
                    if changed {
                        changes.notify();
                    }
                }
                Err(error) => health.watch_failed("nodes", &error),
            }
        }
    };
    (store, feed)
}

/// Whether applying `event` changes what the scanner would see.
fn is_visible_change(store: &Store<Node>, event: &watcher::Event<Node>) -> bool {
    match event {
        watcher::Event::Apply(node) => match store.get(&ObjectRef::from_obj(node)) {
            Some(cached) => !same_ignoring_version(&cached, node),
            None => true,
        },
        watcher::Event::Delete(_) | watcher::Event::InitDone => true,
        // During a (re)list the store swaps in the new set at InitDone; signal once then.
        watcher::Event::Init | watcher::Event::InitApply(_) => false,
    }
}

fn same_ignoring_version(a: &Node, b: &Node) -> bool {
    a.metadata.labels == b.metadata.labels && a.spec == b.spec && a.status == b.status
}

/// A slim-decoded node as the cache keeps it (and as the one-shot `scan` reads it): converted, then stripped.
#[cfg(test)]
pub(crate) fn cached_node(slim: SlimNode) -> Node {
    cached_node_with(slim, HealthTable::defaults())
}

/// A slim-decoded node as the cache keeps it, keeping the health conditions `table` names.
pub fn cached_node_with(slim: SlimNode, table: &HealthTable) -> Node {
    let mut node = Node::from(slim);
    strip_node_with(&mut node, table);
    node
}

/// Drops everything the scanner never reads, so 5,000 nodes fit in a few MiB and heartbeats compare equal
/// (the default health table's conditions are kept).
#[cfg(test)]
pub(crate) fn strip_node(node: &mut Node) {
    strip_node_with(node, HealthTable::defaults());
}

/// [`strip_node`], keeping the health conditions `table` names.
pub(crate) fn strip_node_with(node: &mut Node, table: &HealthTable) {
    // Identity, version (for resuming the watch) and labels: what the slim decoding keeps too.
    let meta = std::mem::take(&mut node.metadata);
    node.metadata = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
        name: meta.name,
        uid: meta.uid,
        resource_version: meta.resource_version,
        labels: meta.labels,
        ..Default::default()
    };
    node.spec = node.spec.take().map(|spec| NodeSpec {
        unschedulable: spec.unschedulable,
        // Key, value and effect: the time a NoExecute taint was added changes nothing the scanner reports.
        taints: spec.taints.map(|taints| {
            taints
                .into_iter()
                .map(|t| Taint {
                    time_added: None,
                    ..t
                })
                .collect()
        }),
        ..Default::default()
    });
    node.status = node.status.take().map(|status| NodeStatus {
        capacity: status.capacity.map(only_read_resources),
        allocatable: status.allocatable.map(only_read_resources),
        conditions: status.conditions.map(|conditions| {
            conditions
                .into_iter()
                .filter(|c| c.type_ == "Ready" || table.names(&c.type_))
                .map(|mut c| {
                    // Heartbeats move every few seconds without changing anything the scanner reports.
                    c.last_heartbeat_time = None;
                    // The scanner words only a NotReady condition and a health condition that is True; the
                    // text and transition time of the others change when a kubelet (or KWOK, or a monitor)
                    // rewrites its conditions, and that is no change either.
                    let reported = if c.type_ == "Ready" {
                        c.status != "True"
                    } else {
                        c.status == "True"
                    };
                    if !reported {
                        c.reason = None;
                        c.message = None;
                        c.last_transition_time = None;
                    }
                    c
                })
                .collect()
        }),
        ..Default::default()
    });
}

/// The accelerator resources the vendor tables read (`vendors::is_read_resource`); cpu, memory, pods and the
/// rest are dropped.
fn only_read_resources<V>(resources: BTreeMap<String, V>) -> BTreeMap<String, V> {
    resources
        .into_iter()
        .filter(|(name, _)| is_read_resource(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::inventory::{ScanInput, scan};
    use crate::sources::dump::parse_node_dump;

    #[test]
    fn stripping_keeps_the_scan_identical() {
        for fixture in ["homelab-nodes.yaml", "gfd-nodes.yaml"] {
            let path = format!("{}/tests/fixtures/{fixture}", env!("CARGO_MANIFEST_DIR"));
            let nodes = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
            let mut stripped = nodes.clone();
            stripped.iter_mut().for_each(strip_node);
            assert_eq!(
                scan(ScanInput::nodes(&nodes)),
                scan(ScanInput::nodes(&stripped)),
                "{fixture}"
            );
            let before: usize = nodes
                .iter()
                .map(|n| serde_json::to_vec(n).unwrap().len())
                .sum();
            let after: usize = stripped
                .iter()
                .map(|n| serde_json::to_vec(n).unwrap().len())
                .sum();
            assert!(
                after * 2 < before,
                "{fixture}: {after} bytes after stripping, {before} before"
            );
        }
    }

    #[test]
    fn a_kubelet_rewriting_a_ready_condition_is_no_change() {
        let node = |status: &str, message: &str, at: &str| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": { "name": "n" },
                "status": { "conditions": [{ "type": "Ready", "status": status, "reason": "R",
                    "message": message, "lastHeartbeatTime": at, "lastTransitionTime": at }] }
            }))
            .unwrap()
        };
        let stripped = |mut n: Node| {
            strip_node(&mut n);
            n
        };
        let fixture = node("True", "ready", "2026-01-01T00:00:00Z");
        let kwok = node(
            "True",
            "kubelet is posting ready status",
            "2026-11-30T00:00:00Z",
        );
        assert!(same_ignoring_version(&stripped(fixture), &stripped(kwok)));
        let down = node("False", "PLEG is not healthy", "2026-01-01T00:00:00Z");
        let down_later = node("False", "container runtime is down", "2026-01-01T00:00:00Z");
        assert!(
            !same_ignoring_version(&stripped(down), &stripped(down_later)),
            "a NotReady condition's words are reported, so they are a change"
        );
    }

    #[test]
    fn health_conditions_are_kept_without_heartbeats_and_others_are_dropped() {
        let node = |conditions: serde_json::Value| -> Node {
            serde_json::from_value(serde_json::json!({
                "metadata": { "name": "n" }, "status": { "conditions": conditions }
            }))
            .unwrap()
        };
        let condition = |type_: &str, status: &str, message: &str, beat: &str| {
            serde_json::json!({ "type": type_, "status": status, "reason": "Check", "message": message,
                "lastHeartbeatTime": beat, "lastTransitionTime": "2026-11-30T10:00:00Z" })
        };
        let stripped = |mut n: Node, table: &HealthTable| {
            strip_node_with(&mut n, table);
            n
        };
        let defaults = HealthTable::defaults();
        let at = |beat: &str, status: &str, message: &str| {
            node(serde_json::json!([
                condition("Ready", "True", "ready", beat),
                condition("GpuMemWatch", status, message, beat),
                condition("KernelDeadlock", "False", "fine", beat),
                condition("AcmeGpuBroken", "True", "fan", beat),
            ]))
        };
        let kept = stripped(
            at("2026-12-01T00:00:00Z", "True", "GPU 3 ECC DBE"),
            defaults,
        );
        let types: Vec<String> = kept
            .status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .map(|c| c.type_.clone())
            .collect();
        assert_eq!(
            types,
            ["Ready", "GpuMemWatch"],
            "kubelet and unnamed conditions are dropped"
        );
        let gpu = &kept.status.as_ref().unwrap().conditions.as_ref().unwrap()[1];
        assert_eq!(gpu.message.as_deref(), Some("GPU 3 ECC DBE"));
        assert!(gpu.last_transition_time.is_some() && gpu.last_heartbeat_time.is_none());
        // A heartbeat is no change; new words on a True condition are; a False one's words are not read.
        let beat = stripped(
            at("2026-12-01T00:00:30Z", "True", "GPU 3 ECC DBE"),
            defaults,
        );
        assert!(same_ignoring_version(&kept, &beat));
        let worse = stripped(
            at("2026-12-01T00:00:30Z", "True", "GPU 3 and 4 ECC DBE"),
            defaults,
        );
        assert!(!same_ignoring_version(&kept, &worse));
        let ok_a = stripped(
            at("2026-12-01T00:00:30Z", "False", "checked 10:00"),
            defaults,
        );
        let ok_b = stripped(
            at("2026-12-01T00:01:30Z", "False", "checked 10:01"),
            defaults,
        );
        assert!(same_ignoring_version(&ok_a, &ok_b));
        // A cluster's own type is kept once the flag names it.
        let own = HealthTable::with_conditions(&["Acme*".into()]).unwrap();
        let kept = stripped(at("2026-12-01T00:00:00Z", "True", "x"), &own);
        assert_eq!(kept.status.unwrap().conditions.unwrap().len(), 3);
    }
}
