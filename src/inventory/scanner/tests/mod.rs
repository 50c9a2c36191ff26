//! Scanner tests on the fixtures in `tests/fixtures/` and on hand-made nodes.

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::test_support::read;
use std::collections::BTreeMap;

use crate::inventory::selector::{LabelSelector, parse_selector};
use k8s_openapi::api::core::v1::Node;

use super::*;
use crate::inventory::model::{Amount, Inventory, IssueReason, Source};
use crate::inventory::{ScanInput, allocation, scan};
use crate::sources::dump::parse_node_dump;

fn fixture(name: &str) -> Vec<Node> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    parse_node_dump(&bytes, &path).expect("fixture parses")
}

fn all() -> LabelSelector {
    LabelSelector::default()
}

fn reasons(entry: &NodeInventory) -> Vec<&str> {
    entry.issues.iter().map(|i| i.reason.as_str()).collect()
}

fn entry<'a>(inv: &'a Inventory, name: &str) -> &'a NodeInventory {
    inv.nodes
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

#[test]
fn homelab_matches_the_article() {
    let inv = scan(ScanInput::nodes(&read(&fixture("homelab-nodes.yaml"))).selector(&all()));
    assert_eq!(
        (inv.total_gpu_nodes, inv.ready_gpu_nodes, inv.total_gpus),
        (4, 0, 1)
    );
    let names: Vec<&str> = inv.nodes.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["nuc1", "nuc2", "omen", "omen2"]);

    let nuc1 = entry(&inv, "nuc1");
    assert!(!nuc1.ready);
    assert_eq!(
        nuc1.product.as_deref(),
        Some("NVIDIA-GeForce-RTX-4070-Laptop-GPU-SHARED")
    );
    assert_eq!((nuc1.count, nuc1.memory_mib), (1, Some(8188)));
    assert_eq!(nuc1.workload_config.as_deref(), Some("vm-passthrough"));
    assert_eq!(reasons(nuc1), ["NotReady"]);

    for name in ["nuc2", "omen"] {
        let e = entry(&inv, name);
        assert!(!e.ready);
        assert_eq!(
            (e.product.as_deref(), e.count, e.memory_mib),
            (None, 0, None)
        );
        assert_eq!(e.workload_config.as_deref(), Some("vm-passthrough"));
        assert_eq!(reasons(e), ["NotReady"], "{name}");
    }
    let omen2 = entry(&inv, "omen2");
    assert_eq!((omen2.product.as_deref(), omen2.count), (None, 0));
    assert_eq!(omen2.workload_config.as_deref(), Some("container"));
    assert_eq!(reasons(omen2), ["NotReady", "GpuLabelsMissing"]);
}

#[test]
fn gfd_fixture_matches_its_readme() {
    let inv = scan(ScanInput::nodes(&read(&fixture("gfd-nodes.yaml"))).selector(&all()));
    // 8 + 1 + the KubeVirt node's 4 passthrough A100s (counted since issue #24: before, 9).
    assert_eq!(
        (inv.total_gpu_nodes, inv.ready_gpu_nodes, inv.total_gpus),
        (4, 3, 13)
    );
    assert!(inv.nodes.iter().all(|e| e.name != "cpu-only"));

    let dgx = entry(&inv, "dgx-h100-01");
    assert!(dgx.ready);
    assert_eq!(dgx.product.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
    assert_eq!((dgx.count, dgx.memory_mib), (8, Some(81559)));
    assert_eq!(
        dgx.allocatable.get("nvidia.com/gpu").map(Amount::text),
        Some("8")
    );
    assert!(dgx.issues.is_empty(), "{:?}", dgx.issues);
    assert!(dgx.sharing.is_none());

    let laptop = entry(&inv, "laptop-4070");
    assert!(laptop.ready);
    assert_eq!((laptop.count, laptop.memory_mib), (1, Some(8188)));
    let sharing = laptop.sharing.as_ref().expect("time-slicing");
    assert_eq!(sharing.strategy.as_deref(), Some("time-slicing"));
    assert_eq!(sharing.replicas, Some(4));
    assert!(!sharing.renamed_resource);
    assert_eq!(
        laptop.allocatable.get("nvidia.com/gpu").map(Amount::text),
        Some("4")
    );
    assert!(laptop.issues.is_empty(), "{:?}", laptop.issues);

    let kubevirt = entry(&inv, "kubevirt-a100");
    assert!(kubevirt.ready);
    // KubeVirt's sandbox device plugin advertises the passthrough GPUs by PCI device name: they are GPUs,
    // and the name says the product (issue #24; the first editions left both unknown).
    assert_eq!(
        (kubevirt.product.as_deref(), kubevirt.count),
        (Some("NVIDIA-A100-PCIE-80GB"), 4)
    );
    assert_eq!(
        kubevirt.derived_from.get("product").map(String::as_str),
        Some("nvidia.com/GA100_A100_PCIE_80GB")
    );
    assert_eq!(allocation::free_whole_gpus(kubevirt), 4);
    assert_eq!(kubevirt.workload_config.as_deref(), Some("vm-passthrough"));
    assert!(kubevirt.issues.is_empty(), "{:?}", kubevirt.issues);

    let gone = entry(&inv, "gfd-gone");
    assert!(!gone.ready);
    // nvidia.com/gpu 0 with nothing beside it: the device plugin lost the GPUs too (#38 rule 1).
    assert_eq!(
        reasons(gone),
        ["NotReady", "GpuLabelsMissing", "GpuDevicesGone"]
    );
}

#[test]
fn scan_is_deterministic_whatever_the_input_order() {
    let mut nodes = fixture("gfd-nodes.yaml");
    nodes.extend(fixture("homelab-nodes.yaml"));
    nodes.extend(fixture("real-nodes.yaml"));
    let forward = scan(ScanInput::nodes(&read(&nodes)).selector(&all()));
    nodes.reverse();
    assert_eq!(
        forward,
        scan(ScanInput::nodes(&read(&nodes)).selector(&all()))
    );
}

#[test]
fn selector_picks_nodes() {
    let nodes = fixture("homelab-nodes.yaml");
    let only_container = parse_selector("nvidia.com/gpu.workload.config=container").unwrap();
    let inv = scan(ScanInput::nodes(&read(&nodes)).selector(&only_container));
    let names: Vec<&str> = inv.nodes.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["omen2"]);
}

/// A node built by hand: labels, `nvidia.com/*` capacity = allocatable, and a Ready condition.
pub(crate) fn node(name: &str, labels: &[(&str, &str)], ready: &str) -> Node {
    let mut node = Node::default();
    node.metadata.name = Some(name.to_owned());
    node.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    node.status = Some(k8s_openapi::api::core::v1::NodeStatus {
        conditions: Some(vec![k8s_openapi::api::core::v1::NodeCondition {
            type_: "Ready".into(),
            status: ready.into(),
            reason: Some("KubeletNotReady".into()),
            message: Some("container runtime is down".into()),
            ..Default::default()
        }]),
        ..Default::default()
    });
    node
}

pub(crate) fn with_resources(
    mut node: Node,
    capacity: &[(&str, &str)],
    allocatable: &[(&str, &str)],
) -> Node {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    let to_map = |list: &[(&str, &str)]| -> BTreeMap<String, Quantity> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    };
    let status = node.status.get_or_insert_with(Default::default);
    status.capacity = Some(to_map(capacity));
    status.allocatable = Some(to_map(allocatable));
    node
}

/// Scans one node as part of a cluster where GPU Feature Discovery runs (the first edition's assumption).
fn scan_one(node: Node) -> Option<NodeInventory> {
    scan_node_in(
        &ClusterNode::of(&node),
        ScanScope {
            gfd_installed: true,
            ..Default::default()
        },
        None,
    )
}

#[test]
fn gpu_node_detection_signals() {
    let pci = node(
        "pci",
        &[("feature.node.kubernetes.io/pci-0302_10de.present", "true")],
        "True",
    );
    assert!(scan_one(pci).is_some());
    let workload = node(
        "vm",
        &[("nvidia.com/gpu.workload.config", "vm-vgpu")],
        "True",
    );
    assert!(scan_one(workload).is_some());
    let count_only = node("c", &[("nvidia.com/gpu.count", "2")], "True");
    assert!(scan_one(count_only).is_some());
    let by_capacity = with_resources(
        node("cap", &[], "True"),
        &[("nvidia.com/gpu", "2")],
        &[("nvidia.com/gpu", "2")],
    );
    let e = scan_one(by_capacity).expect("capacity makes a GPU node");
    assert_eq!(reasons(&e), ["GpuLabelsMissing"]);
    // #38 rule 1: a device resource at 0 is a GPU node whose devices are gone, not a CPU node.
    let zero_capacity = with_resources(node("zero", &[], "True"), &[("nvidia.com/gpu", "0")], &[]);
    let e = scan_one(zero_capacity).expect("a device resource at 0 makes a GPU node");
    assert_eq!(
        (reasons(&e), e.count),
        (vec!["GpuLabelsMissing", "GpuDevicesGone"], 0),
        "the resource is there at 0, not missing: no GpuResourcesMissing"
    );
    let amd_zero = with_resources(node("amd0", &[], "True"), &[("amd.com/gpu", "0")], &[]);
    let e = scan_one(amd_zero).expect("any vendor's");
    assert_eq!(e.vendor, Some(crate::inventory::model::Vendor::Amd));
    assert_eq!(reasons(&e), ["GpuDevicesGone"]);
    // The MIG mixed strategy: nvidia.com/gpu 0 beside MIG devices is no issue.
    let mixed = with_resources(
        node("mixed", &[], "True"),
        &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "7")],
        &[("nvidia.com/gpu", "0"), ("nvidia.com/mig-1g.10gb", "7")],
    );
    let e = scan_one(mixed).expect("MIG devices make a GPU node");
    assert!(
        !reasons(&e).contains(&"GpuDevicesGone"),
        "{:?}",
        reasons(&e)
    );
    // #38 rule 5: any one NVIDIA label makes a GPU node, even alone.
    for (key, value) in [
        (
            "nvidia.com/gpu.clique",
            "8f3c1d52-7b1e-4c55-9d7c-0a1b2c3d4e5f.32766",
        ),
        ("nvidia.com/vgpu.present", "true"),
        ("nvidia.com/gpu.machine", "DGXH100"),
    ] {
        let alone = node("one-label", &[(key, value)], "True");
        let e = scan_one(alone).unwrap_or_else(|| panic!("{key} alone makes a GPU node"));
        assert_eq!(
            e.vendor,
            Some(crate::inventory::model::Vendor::Nvidia),
            "{key}"
        );
    }
    let absent = node("cpu", &[("nvidia.com/gpu.present", "false")], "True");
    assert!(scan_one(absent).is_none());
    let other_vendor = node(
        "amd",
        &[("feature.node.kubernetes.io/pci-1002.present", "true")],
        "True",
    );
    assert!(scan_one(other_vendor).is_none());
}

#[test]
fn ready_requires_true() {
    for (status, ready) in [("True", true), ("False", false), ("Unknown", false)] {
        let e = scan_one(node("n", &[("nvidia.com/gpu.present", "true")], status)).unwrap();
        assert_eq!(e.ready, ready, "{status}");
    }
    let mut no_conditions = node("n", &[("nvidia.com/gpu.present", "true")], "True");
    // Conditions, but no Ready among them: a paste cut short (the kubelet always posts Ready, and the node
    // lifecycle controller sets it Unknown where it never did), so readiness is unknown, not NotReady.
    let conditions = no_conditions.status.as_mut().unwrap().conditions.as_mut();
    let only = conditions.unwrap();
    only[0].type_ = "XidCriticalError".to_owned();
    only[0].status = "False".to_owned();
    let e = scan_one(no_conditions).unwrap();
    assert!(!e.ready);
    assert!(e.issue(IssueReason::NotReady).is_none(), "{:?}", e.issues);
    assert!(
        e.notes.iter().any(|n| n.contains("no Ready condition")),
        "{:?}",
        e.notes
    );
    // No status (or no conditions) at all: a trimmed dump, as the real-node fixtures' notes read it
    // ("readiness is unknown, no problem is visible").
    let mut trimmed = node("n", &[("nvidia.com/gpu.present", "true")], "True");
    trimmed.status = None;
    let e = scan_one(trimmed).unwrap();
    assert!(!e.ready);
    assert!(e.issue(IssueReason::NotReady).is_none(), "{:?}", e.issues);
    assert!(
        e.notes.iter().any(|n| n.contains("no conditions")),
        "{:?}",
        e.notes
    );
}

#[test]
fn malformed_numbers_become_invalid_label_issues() {
    let big = "99999999999999999999";
    for bad in ["abc", "15GB", "-5", big] {
        let labels = [
            ("nvidia.com/gpu.product", "NVIDIA-A10"),
            ("nvidia.com/gpu.count", bad),
            ("nvidia.com/gpu.memory", bad),
        ];
        let e = scan_one(node("bad", &labels, "True")).expect("still a GPU node");
        assert_eq!((e.count, e.memory_mib), (0, None), "{bad}");
        let invalid: Vec<_> = e
            .issues
            .iter()
            .filter(|i| i.reason == "InvalidLabel")
            .collect();
        assert_eq!(invalid.len(), 2, "{bad}: {:?}", e.issues);
        assert!(
            invalid[0].message.contains("nvidia.com/gpu.count") && invalid[0].message.contains(bad)
        );
        assert!(invalid[1].message.contains("nvidia.com/gpu.memory"));
    }
}

#[test]
fn not_ready_message_says_why_and_since_when() {
    let nodes = fixture("homelab-nodes.yaml");
    let inv = scan(ScanInput::nodes(&read(&nodes)).selector(&all()));
    let msg = &entry(&inv, "nuc1").issues[0].message;
    assert!(msg.starts_with("Ready condition is False"), "{msg}");
    assert!(msg.contains("since 20"), "{msg}");
}

#[test]
fn every_issue_reason_fires() {
    let gpu = [
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
        ("nvidia.com/gpu.count", "4"),
    ];
    let not_allocatable = with_resources(node("na", &gpu, "True"), &[], &[]);
    assert_eq!(
        reasons(&scan_one(not_allocatable).unwrap()),
        ["GpusNotAllocatable"]
    );

    let unhealthy = with_resources(
        node("uh", &gpu, "True"),
        &[("nvidia.com/gpu", "4")],
        &[("nvidia.com/gpu", "3")],
    );
    let e = scan_one(unhealthy).unwrap();
    assert_eq!(reasons(&e), ["GpusUnhealthy"]);
    assert!(
        e.issues[0]
            .message
            .contains("nvidia.com/gpu capacity 4, allocatable 3"),
        "{}",
        e.issues[0].message
    );

    let mig_failed = [
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"),
        ("nvidia.com/mig.strategy", "mixed"),
        ("nvidia.com/mig.config", "all-1g.5gb"),
        ("nvidia.com/mig.config.state", "failed"),
    ];
    let e = scan_one(node("mf", &mig_failed, "True")).unwrap();
    assert_eq!(reasons(&e), ["MigConfigFailed"]);
    assert!(e.issues[0].message.contains("all-1g.5gb"));

    let invalid = [
        (
            "nvidia.com/gpu.product",
            "NVIDIA-A100-SXM4-40GB-MIG-INVALID",
        ),
        ("nvidia.com/mig.strategy", "single"),
    ];
    assert_eq!(
        reasons(&scan_one(node("mi", &invalid, "True")).unwrap()),
        ["MigInvalid"]
    );

    let mut cordoned = node("co", &[("nvidia.com/gpu.product", "NVIDIA-L4")], "True");
    cordoned.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
        unschedulable: Some(true),
        ..Default::default()
    });
    let e = scan_one(cordoned).unwrap();
    assert!(e.unschedulable);
    assert_eq!(reasons(&e), ["Unschedulable"]);
}

#[test]
fn mig_strategies() {
    let single = [
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb"),
        ("nvidia.com/gpu.count", "14"),
        ("nvidia.com/mig.strategy", "single"),
        ("nvidia.com/mig.config", "all-1g.5gb"),
        ("nvidia.com/mig.config.state", "success"),
    ];
    let e = scan_one(with_resources(
        node("s", &single, "True"),
        &[("nvidia.com/gpu", "14")],
        &[("nvidia.com/gpu", "14")],
    ))
    .unwrap();
    assert_eq!(e.count, 14);
    let mig = e.mig.as_ref().unwrap();
    assert_eq!(mig.strategy.as_deref(), Some("single"));
    assert!(
        mig.count_meaning
            .as_deref()
            .unwrap()
            .contains("MIG devices")
    );
    assert!(mig.devices.is_empty());
    assert!(e.issues.is_empty(), "{:?}", e.issues);

    let mixed = [
        ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
        ("nvidia.com/gpu.count", "2"),
        ("nvidia.com/mig.strategy", "mixed"),
        ("nvidia.com/mig-1g.10gb.count", "7"),
        ("nvidia.com/mig-1g.10gb.memory", "9728"),
        ("nvidia.com/mig-3g.40gb.count", "2"),
        ("nvidia.com/mig-3g.40gb.memory", "40192"),
    ];
    let res = [
        ("nvidia.com/mig-1g.10gb", "7"),
        ("nvidia.com/mig-3g.40gb", "2"),
    ];
    let e = scan_one(with_resources(node("m", &mixed, "True"), &res, &res)).unwrap();
    let mig = e.mig.as_ref().unwrap();
    let devices: Vec<_> = mig
        .devices
        .iter()
        .map(|d| (d.profile.as_str(), d.count, d.memory_mib))
        .collect();
    assert_eq!(
        devices,
        [("1g.10gb", 7, Some(9728)), ("3g.40gb", 2, Some(40192))]
    );
    assert!(
        e.issues.is_empty(),
        "MIG slices are allocatable: {:?}",
        e.issues
    );

    let plain = scan_one(node(
        "p",
        &[("nvidia.com/gpu.product", "NVIDIA-L4")],
        "True",
    ))
    .unwrap();
    assert!(plain.mig.is_none() && plain.sharing.is_none());
}

#[test]
fn time_slicing_with_renamed_resource() {
    let labels = [
        ("nvidia.com/gpu.product", "NVIDIA-A10G-SHARED"),
        ("nvidia.com/gpu.count", "1"),
        ("nvidia.com/gpu.replicas", "8"),
        ("nvidia.com/gpu.sharing-strategy", "time-slicing"),
    ];
    let res = [("nvidia.com/gpu.shared", "8")];
    let e = scan_one(with_resources(node("ts", &labels, "True"), &res, &res)).unwrap();
    let sharing = e.sharing.as_ref().unwrap();
    assert!(sharing.renamed_resource);
    assert_eq!(sharing.replicas, Some(8));
    assert!(
        e.issues.is_empty(),
        "shared GPUs count as allocatable: {:?}",
        e.issues
    );
}

/// (product, count, memoryMiB, sources, issue reasons) of an entry.
type Reading<'a> = (
    Option<&'a str>,
    u64,
    Option<u64>,
    Vec<&'a str>,
    Vec<&'a str>,
);

fn reading(e: &NodeInventory) -> Reading<'_> {
    (
        e.product.as_deref(),
        e.count,
        e.memory_mib,
        e.sources.iter().map(|s| s.as_str()).collect(),
        reasons(e),
    )
}

mod health;
mod reading_fourth;
mod reading_third;
mod real_nodes;
mod wild;
