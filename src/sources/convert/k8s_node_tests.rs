use k8s_openapi::api::core::v1::Node;

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::inventory::text_map::TextMap;
use crate::inventory::{ScanInput, scan};
use crate::sources::dump::parse_node_dump;

fn fixture(name: &str) -> Vec<Node> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap()
}

#[test]
fn keeps_what_the_scan_reads_and_drops_the_rest() {
    for name in ["homelab-nodes.yaml", "gfd-nodes.yaml", "real-nodes.yaml"] {
        for node in fixture(name) {
            let read = ClusterNode::of(&node);
            assert_eq!(
                *read.name,
                *node.metadata.name.as_deref().unwrap(),
                "{name}"
            );
            assert_eq!(
                read.labels.len(),
                node.metadata.labels.as_ref().map_or(0, |l| l.len())
            );
            let status = node.status.as_ref();
            for (kept, all) in [
                (&read.capacity, status.and_then(|s| s.capacity.as_ref())),
                (
                    &read.allocatable,
                    status.and_then(|s| s.allocatable.as_ref()),
                ),
            ] {
                assert_eq!(
                    kept.is_some(),
                    all.is_some(),
                    "{name}: a block's presence is kept"
                );
                for (resource, quantity) in kept.iter().flat_map(TextMap::iter) {
                    assert_eq!(all.unwrap()[resource].0, quantity, "{name}");
                }
                assert!(
                    kept.iter()
                        .flat_map(TextMap::iter)
                        .all(|(r, _)| !["cpu", "memory", "pods"].contains(&r)),
                    "{name}: cpu, memory and pods are not read"
                );
            }
        }
        let nodes = fixture(name);
        let read: Vec<ClusterNode> = nodes.iter().map(ClusterNode::of).collect();
        let inventory = scan(ScanInput::nodes(&read));
        assert!(inventory.total_gpu_nodes > 0, "{name}");
    }
}

fn node_with(conditions: serde_json::Value) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": { "name": "n" }, "status": { "conditions": conditions }
    }))
    .unwrap()
}

fn condition(type_: &str, status: &str, message: &str, beat: &str) -> serde_json::Value {
    serde_json::json!({ "type": type_, "status": status, "reason": "Check", "message": message,
        "lastHeartbeatTime": beat, "lastTransitionTime": "2026-01-01T00:00:00Z" })
}

#[test]
fn a_kubelet_rewriting_a_ready_condition_is_no_change() {
    let at = |status: &str, message: &str, beat: &str| {
        ClusterNode::of(&node_with(serde_json::json!([condition(
            "Ready", status, message, beat
        )])))
    };
    let fixture = at("True", "ready", "2026-01-01T00:00:00Z");
    let kwok = at(
        "True",
        "kubelet is posting ready status",
        "2026-11-30T00:00:00Z",
    );
    assert_eq!(fixture, kwok);
    let down = at("False", "PLEG is not healthy", "2026-01-01T00:00:00Z");
    let down_later = at("False", "container runtime is down", "2026-01-01T00:00:00Z");
    assert_ne!(
        down, down_later,
        "a NotReady condition's words are reported, so they are a change"
    );
    let since = down.ready_condition().unwrap().last_transition_time;
    assert_eq!(
        since.map(|t| t.to_string()).as_deref(),
        Some("2026-01-01T00:00:00Z")
    );
}

#[test]
fn health_conditions_are_kept_without_heartbeats_and_others_are_dropped() {
    let defaults = HealthTable::defaults();
    let at = |beat: &str, status: &str, message: &str, table: &HealthTable| {
        ClusterNode::from_node(
            &node_with(serde_json::json!([
                condition("Ready", "True", "ready", beat),
                condition("GpuMemWatch", status, message, beat),
                condition("KernelDeadlock", "False", "fine", beat),
                condition("AcmeGpuBroken", "True", "fan", beat),
            ])),
            table,
        )
    };
    let kept = at("2026-12-01T00:00:00Z", "True", "GPU 3 ECC DBE", defaults);
    let types: Vec<&str> = kept.conditions().iter().map(|c| &*c.type_).collect();
    assert_eq!(
        types,
        ["Ready", "GpuMemWatch"],
        "kubelet and unnamed conditions are dropped"
    );
    let gpu = &kept.conditions()[1];
    assert_eq!(gpu.message.as_deref(), Some("GPU 3 ECC DBE"));
    assert_eq!(gpu.reason.as_deref(), Some("Check"));
    // A heartbeat is no change; new words on a True condition are; a False one's words are not read.
    assert_eq!(
        kept,
        at("2026-12-01T00:00:30Z", "True", "GPU 3 ECC DBE", defaults)
    );
    assert_ne!(
        kept,
        at(
            "2026-12-01T00:00:30Z",
            "True",
            "GPU 3 and 4 ECC DBE",
            defaults
        )
    );
    assert_eq!(
        at("2026-12-01T00:00:30Z", "False", "checked 10:00", defaults),
        at("2026-12-01T00:01:30Z", "False", "checked 10:01", defaults)
    );
    // A cluster's own type is kept once the flag names it.
    let own = HealthTable::with_conditions(&["Acme*".into()]).unwrap();
    assert_eq!(
        at("2026-12-01T00:00:00Z", "True", "x", &own)
            .conditions()
            .len(),
        3
    );
}

#[test]
fn a_partial_object_reads_as_unknown_not_as_empty() {
    let bare: Node =
        serde_json::from_value(serde_json::json!({ "metadata": { "name": "bare" } })).unwrap();
    let read = ClusterNode::of(&bare);
    assert!(read.capacity.is_none() && read.allocatable.is_none() && read.conditions.is_none());
    assert!(read.ready_condition().is_none() && read.conditions().is_empty());
    let tainted: Node = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "t" },
        "spec": { "unschedulable": true, "taints": [
            { "key": "amd-dcm", "value": "up", "effect": "NoExecute", "timeAdded": "2026-12-01T00:00:00Z" },
            { "key": "nvidia.com/gpu", "effect": "NoSchedule" }
        ] }
    }))
    .unwrap();
    let read = ClusterNode::of(&tainted);
    assert!(read.unschedulable);
    let taints: Vec<(&str, &str, &str)> = read
        .taints
        .iter()
        .map(|t| (&*t.key, &*t.value, &*t.effect))
        .collect();
    assert_eq!(
        taints,
        [
            ("amd-dcm", "up", "NoExecute"),
            ("nvidia.com/gpu", "", "NoSchedule")
        ]
    );
}
