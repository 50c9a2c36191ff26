//! Health others publish, read by the scanner: nodes known only by the GPU operator's, GFD's or a monitor's
//! signals are GPU nodes that say what they miss; conditions and cordons are reported on every vendor's path.

use k8s_openapi::api::core::v1::{Node, NodeCondition, Taint};

use super::{node, reasons, with_resources};
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::health::HealthTable;
use crate::inventory::model::{IssueReason, Vendor};
use crate::inventory::scanner::{ScanScope, scan_node_in};

fn scan(node: &Node) -> Option<crate::inventory::model::NodeInventory> {
    let node = ClusterNode::of(node);
    scan_node_in(&node, ScanScope::of([&node]), None)
}

fn ready(name: &str, labels: &[(&str, &str)]) -> Node {
    with_resources(node(name, labels, "True"), &[], &[])
}

fn with_condition(mut node: Node, type_: &str, status: &str) -> Node {
    let condition: NodeCondition = serde_json::from_value(serde_json::json!({
        "type": type_, "status": status, "reason": "Check", "message": "GPU 3 ECC DBE",
        "lastTransitionTime": "2026-11-30T10:00:00Z"
    }))
    .unwrap();
    node.status
        .as_mut()
        .unwrap()
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
    node
}

#[test]
fn nodes_known_only_by_operator_or_gfd_labels_are_gpu_nodes_that_say_what_they_miss() {
    for (key, value) in [
        ("nvidia.com/gpu.present", "true"),
        ("nvidia.com/gpu.family", "hopper"),
        ("nvidia.com/mig.capable", "false"),
        ("nvidia.com/gpu.memory", "81559"),
        ("nvidia.com/gpu.deploy.device-plugin", "true"),
        ("nvidia.com/gpu-driver-upgrade-state", "upgrade-done"),
    ] {
        let entry = scan(&ready("n", &[(key, value)])).unwrap_or_else(|| panic!("{key}"));
        assert_eq!(entry.vendor, Some(Vendor::Nvidia), "{key}");
        let issue = entry
            .issue(IssueReason::GpuResourcesMissing)
            .unwrap_or_else(|| panic!("{key}: {:?}", entry.issues));
        assert!(issue.message.contains(key), "{key}: {}", issue.message);
        assert!(
            issue.message.contains("no nvidia.com/gpu"),
            "{}",
            issue.message
        );
        assert_eq!(entry.issue(IssueReason::GpusNotAllocatable), None);
    }
    // Switched-off operands, and gpu.present=false, say nothing.
    assert!(scan(&ready("n", &[("nvidia.com/gpu.deploy.operands", "false")])).is_none());
    assert!(scan(&ready("n", &[("nvidia.com/gpu.present", "false")])).is_none());
}

#[test]
fn a_node_whose_gpus_are_advertised_is_not_missing_resources() {
    let served = with_resources(
        node("n", &[("nvidia.com/gpu.present", "true")], "True"),
        &[("nvidia.com/gpu", "8")],
        &[("nvidia.com/gpu", "8")],
    );
    let entry = scan(&served).unwrap();
    assert!(entry.issues.is_empty(), "{:?}", entry.issues);
    // Not Ready: NotReady tells it; a partial dump (no allocatable): unknown, not missing.
    let down = with_resources(node_not_ready(), &[], &[]);
    assert_eq!(reasons(&scan(&down).unwrap()), ["NotReady"]);
    let partial = node("n", &[("nvidia.com/gpu.present", "true")], "True");
    assert_eq!(
        scan(&partial)
            .unwrap()
            .issue(IssueReason::GpuResourcesMissing),
        None
    );
}

fn node_not_ready() -> Node {
    node("n", &[("nvidia.com/gpu.present", "true")], "False")
}

#[test]
fn a_vendor_health_condition_makes_a_gpu_node_of_its_vendor() {
    let nvidia = with_condition(ready("n", &[]), "GpuMemWatch", "False");
    let entry = scan(&nvidia).unwrap();
    assert_eq!(entry.vendor, Some(Vendor::Nvidia));
    let amd = with_condition(ready("a", &[]), "AMDGPUUnhealthy", "True");
    let entry = scan(&amd).unwrap();
    assert_eq!(entry.vendor, Some(Vendor::Amd));
    assert!(
        entry.issue(IssueReason::GpuHealthCheckFailed).is_some(),
        "{:?}",
        entry.issues
    );
    // A kubelet condition makes nothing.
    assert!(scan(&with_condition(ready("k", &[]), "MemoryPressure", "True")).is_none());
}

#[test]
fn a_true_health_condition_is_an_issue_on_a_healthy_gpu_node_and_clears_when_false() {
    let gpu = || {
        with_resources(
            node(
                "g",
                &[("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")],
                "True",
            ),
            &[("nvidia.com/gpu", "8")],
            &[("nvidia.com/gpu", "8")],
        )
    };
    let broken = scan(&with_condition(gpu(), "SysLogsXIDError", "True")).unwrap();
    assert_eq!(reasons(&broken), ["GpuHealthCheckFailed"]);
    let issue = &broken.issues[0];
    assert!(issue.message.contains("NVSentinel") && issue.message.contains("GPU 3 ECC DBE"));
    assert_eq!(issue.since.as_deref(), Some("2026-11-30T10:00:00Z"));
    let fixed = scan(&with_condition(gpu(), "SysLogsXIDError", "False")).unwrap();
    assert!(fixed.issues.is_empty(), "{:?}", fixed.issues);
}

#[test]
fn a_cluster_own_condition_counts_only_when_the_flag_names_it() {
    let gpu = with_condition(
        with_resources(
            node(
                "g",
                &[("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB")],
                "True",
            ),
            &[("nvidia.com/gpu", "8")],
            &[("nvidia.com/gpu", "8")],
        ),
        "AcmeGpuFanFailed",
        "True",
    );
    assert!(
        scan(&gpu).unwrap().issues.is_empty(),
        "unknown types are never guessed at"
    );
    let table = HealthTable::with_conditions(&["Acme*Failed".into()]).unwrap();
    let gpu = ClusterNode::from_node(&gpu, &table);
    let entry = scan_node_in(&gpu, ScanScope::of([&gpu]).with_health(&table), None).unwrap();
    assert_eq!(reasons(&entry), ["GpuHealthCheckFailed"]);
    assert!(entry.issues[0].message.contains("--health-condition"));
}

#[test]
fn a_health_controller_cordon_is_quarantine_and_an_administrator_cordon_is_unschedulable() {
    let cordoned = |labels: &[(&str, &str)], taint: Option<&str>| {
        let mut cordoned = with_resources(
            node("g", labels, "True"),
            &[("amd.com/gpu", "8")],
            &[("amd.com/gpu", "8")],
        );
        let spec = cordoned.spec.get_or_insert_with(Default::default);
        spec.unschedulable = Some(true);
        spec.taints = taint.map(|key| {
            vec![Taint {
                key: key.into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]
        });
        cordoned
    };
    let nvsentinel = cordoned(
        &[
            ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
            ("k8saas.nvidia.com/cordon-by", "nvsentinel"),
            ("k8saas.nvidia.com/cordon-reason", "GpuXidError-79"),
        ],
        None,
    );
    let entry = scan(&nvsentinel).unwrap();
    assert_eq!(reasons(&entry), ["GpuNodeQuarantined"]);
    let amd = cordoned(&[], Some("amd-gpu-unhealthy"));
    let entry = scan(&amd).unwrap();
    assert_eq!(entry.vendor, Some(Vendor::Amd));
    assert_eq!(
        reasons(&entry),
        ["Unschedulable", "GpuNodeQuarantined"],
        "a taint explains no cordon"
    );
    let admin = cordoned(&[("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")], None);
    assert_eq!(reasons(&scan(&admin).unwrap()), ["Unschedulable"]);
}

/// The scan memory remembers that a node version is no GPU node; that holds only in the same scope and
/// health table, and without DRA devices: anything else scans the node again.
#[test]
fn a_remembered_no_gpu_verdict_holds_only_where_it_was_found() {
    use crate::inventory::memory::ScanMemory;
    use std::sync::Arc;
    let table = &HealthTable::with_conditions(&["Acme*Failed".into()]).unwrap();
    // Known as a GPU node only by a condition the cluster's own table names.
    let plain = with_condition(node("c", &[], "True"), "AcmeGpuFanFailed", "True");
    let node = Arc::new(ClusterNode::from_node(&plain, table));
    let mut memory = ScanMemory::default();
    let defaults = ScanScope::of([&*node]);
    assert!(!memory.known_no_gpu(&node, defaults.key()));
    assert!(scan_node_in(&node, defaults, None).is_none());
    memory.remember_no_gpu(&node, defaults.key());
    assert!(
        memory.known_no_gpu(&node, defaults.key()),
        "the verdict is remembered"
    );
    let named = defaults.with_health(table);
    assert!(
        !memory.known_no_gpu(&node, named.key()),
        "another health table is another scope"
    );
    assert!(
        scan_node_in(&node, named, None).is_some(),
        "a GPU node with the cluster's table"
    );
    // A scope with other label signals is another scope.
    let gfd = ClusterNode::of(&self::node(
        "g",
        &[("nvidia.com/gfd.timestamp", "1")],
        "True",
    ));
    let with_gfd = ScanScope::of([&*node, &gfd]);
    assert_ne!(with_gfd, defaults);
    assert!(!memory.known_no_gpu(&node, with_gfd.key()));
    // Another version of the node (a new `Arc` from the cache) is another node.
    let again = Arc::new(ClusterNode::from_node(&plain, table));
    assert!(!memory.known_no_gpu(&again, defaults.key()));
    // What a node adds to the scope is read once and is the same read again.
    assert_eq!(ScanScope::of([&gfd]), ScanScope::of([&gfd]));
    assert!(ScanScope::of([&gfd]).gfd_installed);
}
