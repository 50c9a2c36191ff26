//! Scanner tests on the fixtures in `tests/fixtures/` and on hand-made nodes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use kube::core::Selector;

use super::*;
use crate::sources::dump::parse_node_dump;

fn fixture(name: &str) -> Vec<Node> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    parse_node_dump(&bytes, &path).expect("fixture parses")
}

fn all() -> Selector {
    Selector::default()
}

fn reasons(entry: &GpuNodeEntry) -> Vec<&str> {
    entry.issues.iter().map(|i| i.reason.as_str()).collect()
}

fn entry<'a>(inv: &'a Inventory, name: &str) -> &'a GpuNodeEntry {
    inv.nodes
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no entry {name}"))
}

#[test]
fn homelab_matches_the_article() {
    let inv = scan(&fixture("homelab-nodes.yaml"), &all());
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
    let inv = scan(&fixture("gfd-nodes.yaml"), &all());
    assert_eq!(
        (inv.total_gpu_nodes, inv.ready_gpu_nodes, inv.total_gpus),
        (4, 3, 9)
    );
    assert!(inv.nodes.iter().all(|e| e.name != "cpu-only"));

    let dgx = entry(&inv, "dgx-h100-01");
    assert!(dgx.ready);
    assert_eq!(dgx.product.as_deref(), Some("NVIDIA-H100-80GB-HBM3"));
    assert_eq!((dgx.count, dgx.memory_mib), (8, Some(81559)));
    assert_eq!(
        dgx.allocatable.get("nvidia.com/gpu").map(String::as_str),
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
        laptop.allocatable.get("nvidia.com/gpu").map(String::as_str),
        Some("4")
    );
    assert!(laptop.issues.is_empty(), "{:?}", laptop.issues);

    let kubevirt = entry(&inv, "kubevirt-a100");
    assert!(kubevirt.ready);
    assert_eq!((kubevirt.product.as_deref(), kubevirt.count), (None, 0));
    assert_eq!(kubevirt.workload_config.as_deref(), Some("vm-passthrough"));
    assert!(kubevirt.issues.is_empty(), "{:?}", kubevirt.issues);

    let gone = entry(&inv, "gfd-gone");
    assert!(!gone.ready);
    assert_eq!(reasons(gone), ["NotReady", "GpuLabelsMissing"]);
}

#[test]
fn scan_is_deterministic_whatever_the_input_order() {
    let mut nodes = fixture("gfd-nodes.yaml");
    nodes.extend(fixture("homelab-nodes.yaml"));
    let forward = scan(&nodes, &all());
    nodes.reverse();
    assert_eq!(forward, scan(&nodes, &all()));
}

#[test]
fn selector_picks_nodes() {
    let nodes = fixture("homelab-nodes.yaml");
    let only_container: Selector = [("nvidia.com/gpu.workload.config", "container")]
        .into_iter()
        .collect();
    let inv = scan(&nodes, &only_container);
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
fn scan_one(node: Node) -> Option<GpuNodeEntry> {
    scan_node_in(
        &node,
        ScanScope {
            gfd_installed: true,
        },
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
    let zero_capacity = with_resources(node("zero", &[], "True"), &[("nvidia.com/gpu", "0")], &[]);
    assert!(scan_one(zero_capacity).is_none());
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
    no_conditions.status = None;
    let e = scan_one(no_conditions).unwrap();
    assert!(!e.ready);
    assert!(
        e.issues[0].message.contains("no Ready condition"),
        "{}",
        e.issues[0].message
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
    let inv = scan(&nodes, &all());
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

/// The short names of `real-nodes.yaml` (the file's names are long and descriptive).
const S4124_DISABLED: &str = "nvidia-docs-gpu-operator-mig-h100-s4124-0073-mig-disabled";
const S4124_BALANCED: &str = "nvidia-docs-gpu-operator-mig-mixed-h100-s4124-0073-all-balanced";
const T4_BYTES: &str = "nvidia-docs-ocp-time-slicing-t4-g4dn-xlarge";
const DGX_MYWORKER: &str = "nvidia-docs-ocp-mig-mixed-dgx-h100-myworker-all-balanced";
const T4_RENAMED: &str = "nvidia-docs-gpu-operator-time-slicing-t4-renamebydefault-true";
const OCIO: &str = "k8s-device-plugin-issue-58-ocio-gpu01";
const PREM_MIG: &str = "prem-operator-issue-39-node-with-mig";
const XE9680: &str = "k8s-device-plugin-issue-1501-h100-poweredge-xe9680-non-mig";
const MIG_INVALID: &str = "gpu-operator-issue-603-kind-a100-80gb-pcie-mig-invalid";
const GKE_K80: &str =
    "kubernetes-issue-55005-gke-k80-gke-my-gpu-cluster-default-pool-4d0fa82d-ttxh";
const NO_PLUGIN: &str = "k8s-device-plugin-issue-1246-my-ai-srv02";
const K8S_NODE1: &str = "k8s-device-plugin-issue-165-k8s-node1";

/// (product, count, memoryMiB, sources, issue reasons) of an entry.
type Reading<'a> = (
    Option<&'a str>,
    u64,
    Option<u64>,
    Vec<&'a str>,
    Vec<&'a str>,
);

fn reading(e: &GpuNodeEntry) -> Reading<'_> {
    (
        e.product.as_deref(),
        e.count,
        e.memory_mib,
        e.sources.iter().map(String::as_str).collect(),
        reasons(e),
    )
}

/// Every node of `tests/fixtures/real-nodes.yaml` against `tests/fixtures/README.md`.
#[test]
fn real_nodes_read_as_an_expert_reads_them() {
    let inv = scan(&fixture("real-nodes.yaml"), &all());
    let names: Vec<&str> = inv.nodes.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names.len(), 11, "{names:?}");
    assert!(
        !names.contains(&NO_PLUGIN),
        "no GPU evidence: not a GPU node"
    );
    let h100 = Some("NVIDIA-H100-80GB-HBM3");
    let expected: [(&str, Reading<'_>); 11] = [
        (
            S4124_DISABLED,
            (h100, 1, Some(81559), vec!["labels"], vec!["NotReady"]),
        ),
        (
            S4124_BALANCED,
            (h100, 1, Some(81559), vec!["labels"], vec!["NotReady"]),
        ),
        (
            T4_BYTES,
            (
                Some("Tesla-T4-SHARED"),
                1,
                Some(15360),
                vec!["device-plugin", "labels"],
                vec!["NotReady"],
            ),
        ),
        (
            DGX_MYWORKER,
            (
                None,
                0,
                None,
                vec!["device-plugin", "labels"],
                vec!["NotReady", "GpuLabelsMissing"],
            ),
        ),
        (
            T4_RENAMED,
            (
                Some("Tesla-T4"),
                4,
                None,
                vec!["device-plugin", "labels"],
                vec!["NotReady"],
            ),
        ),
        (
            OCIO,
            (
                None,
                16,
                None,
                vec!["device-plugin"],
                vec!["NotReady", "GpuLabelsMissing", "GpusUnhealthy"],
            ),
        ),
        (
            PREM_MIG,
            (
                Some("NVIDIA-A100-SXM4-40GB-MIG-7g.40gb"),
                0,
                None,
                vec!["labels"],
                vec!["NotReady"],
            ),
        ),
        (
            XE9680,
            (h100, 8, Some(81559), vec!["labels"], vec!["NotReady"]),
        ),
        (
            MIG_INVALID,
            (
                Some("NVIDIA-A100-80GB-PCIe-MIG-INVALID"),
                0,
                None,
                vec!["labels"],
                vec!["NotReady", "MigInvalid"],
            ),
        ),
        (
            GKE_K80,
            (
                Some("nvidia-tesla-k80"),
                0,
                None,
                vec!["cloud"],
                vec!["NotReady"],
            ),
        ),
        (
            K8S_NODE1,
            (
                None,
                1,
                None,
                vec!["device-plugin"],
                vec!["GpuLabelsMissing"],
            ),
        ),
    ];
    for (name, want) in expected {
        assert_eq!(reading(entry(&inv, name)), want, "{name}");
    }
    assert_eq!(inv.ready_gpu_nodes, 1);
    assert!(entry(&inv, K8S_NODE1).ready);

    let balanced = entry(&inv, S4124_BALANCED);
    let mig = balanced.mig.as_ref().expect("MIG");
    assert_eq!(mig.strategy.as_deref(), Some("mixed"));
    let devices: Vec<_> = mig
        .devices
        .iter()
        .map(|d| (d.profile.as_str(), d.count, d.memory_mib))
        .collect();
    assert_eq!(
        devices,
        [
            ("1g.10gb", 2, Some(9984)),
            ("2g.20gb", 1, Some(20096)),
            ("3g.40gb", 1, Some(40320))
        ]
    );
    assert!(balanced.sharing.is_none(), "gpu.replicas=0 is not sharing");

    let t4 = entry(&inv, T4_BYTES);
    assert_eq!(t4.sharing.as_ref().and_then(|s| s.replicas), Some(8));
    assert_eq!(
        t4.derived_from.get("memoryMiB").map(String::as_str),
        Some("nvidia.com/gpu.memory (bytes)")
    );
    assert!(
        t4.notes
            .iter()
            .any(|n| n.contains("16106127360") && n.contains("bytes") && n.contains("15360 MiB")),
        "{:?}",
        t4.notes
    );
    assert!(
        t4.notes.iter().any(|n| n.contains("no status.allocatable")),
        "{:?}",
        t4.notes
    );

    let dgx = entry(&inv, DGX_MYWORKER);
    let devices: Vec<_> = dgx
        .mig
        .as_ref()
        .expect("MIG devices from the resources")
        .devices
        .iter()
        .map(|d| (d.profile.as_str(), d.count))
        .collect();
    assert_eq!(devices, [("1g.10gb", 16), ("2g.20gb", 8), ("3g.40gb", 8)]);
    assert_eq!(dgx.capacity, dgx.allocatable);

    let renamed = entry(&inv, T4_RENAMED);
    let sharing = renamed.sharing.as_ref().expect("time-slicing");
    assert!(sharing.renamed_resource);
    assert_eq!(sharing.replicas, Some(4));
    assert_eq!(
        renamed
            .allocatable
            .get("nvidia.com/gpu.shared")
            .map(String::as_str),
        Some("16")
    );

    let ocio = entry(&inv, OCIO);
    assert_eq!(
        ocio.derived_from.get("count").map(String::as_str),
        Some("capacity nvidia.com/gpu")
    );
    assert!(
        ocio.issues[2]
            .message
            .contains("nvidia.com/gpu capacity 16, allocatable 0"),
        "{}",
        ocio.issues[2].message
    );

    let prem = entry(&inv, PREM_MIG);
    let devices: Vec<_> = prem
        .mig
        .as_ref()
        .expect("MIG")
        .devices
        .iter()
        .map(|d| (d.profile.as_str(), d.count, d.memory_mib))
        .collect();
    assert_eq!(devices, [("7g.40gb", 4, Some(40192))]);

    let gke = entry(&inv, GKE_K80);
    assert_eq!(
        gke.derived_from.get("product").map(String::as_str),
        Some("cloud.google.com/gke-accelerator")
    );
    assert!(
        inv.nodes
            .iter()
            .all(|e| e.issues.iter().all(|i| i.reason != "InvalidLabel")),
        "no value in the file is invalid"
    );
}

/// Without any GPU Feature Discovery label in scope, nobody is `GpuLabelsMissing`: GKE and a plain
/// device-plugin node, as a cluster without GFD shows them.
#[test]
fn real_nodes_without_gfd_anywhere_have_no_labels_missing() {
    let nodes: Vec<Node> = fixture("real-nodes.yaml")
        .into_iter()
        .filter(|n| [GKE_K80, K8S_NODE1, NO_PLUGIN].contains(&n.name_any().as_str()))
        .collect();
    assert_eq!(nodes.len(), 3);
    let inv = scan(&nodes, &all());
    assert_eq!(
        (inv.total_gpu_nodes, inv.ready_gpu_nodes, inv.total_gpus),
        (2, 1, 1)
    );
    assert_eq!(
        reading(entry(&inv, GKE_K80)),
        (
            Some("nvidia-tesla-k80"),
            0,
            None,
            vec!["cloud"],
            vec!["NotReady"]
        )
    );
    assert_eq!(
        reading(entry(&inv, K8S_NODE1)),
        (None, 1, None, vec!["device-plugin"], vec![])
    );
    // The same holds for every node without GFD labels, taken together.
    let gfd_less: Vec<Node> = fixture("real-nodes.yaml")
        .into_iter()
        .filter(|n| !n.labels().iter().any(|(k, v)| labels::is_gfd_label(k, v)))
        .collect();
    let inv = scan(&gfd_less, &all());
    assert!(inv.total_gpu_nodes >= 4, "{}", inv.total_gpu_nodes);
    for e in &inv.nodes {
        assert!(
            !reasons(e).contains(&"GpuLabelsMissing"),
            "{}: {:?}",
            e.name,
            e.issues
        );
    }
}

#[test]
fn real_nodes_scan_the_same_in_any_order_and_any_subset() {
    let mut nodes = fixture("real-nodes.yaml");
    let forward = scan(&nodes, &all());
    nodes.reverse();
    assert_eq!(forward, scan(&nodes, &all()));
}

#[test]
fn cloud_labels_describe_gpu_nodes_without_gfd() {
    let karpenter = with_resources(
        node(
            "eks",
            &[
                ("karpenter.k8s.aws/instance-gpu-name", "a10g"),
                ("karpenter.k8s.aws/instance-gpu-count", "4"),
                ("karpenter.k8s.aws/instance-gpu-memory", "24576"),
                ("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
            ],
            "True",
        ),
        &[("nvidia.com/gpu", "4")],
        &[("nvidia.com/gpu", "4")],
    );
    let aks = with_resources(
        node(
            "aks",
            &[("kubernetes.azure.com/accelerator", "nvidia")],
            "True",
        ),
        &[("nvidia.com/gpu", "1")],
        &[("nvidia.com/gpu", "1")],
    );
    let eks = node(
        "eks-ng",
        &[("k8s.amazonaws.com/accelerator", "nvidia-tesla-t4")],
        "True",
    );
    let inv = scan(&[karpenter, aks, eks], &all());
    assert_eq!(
        reading(entry(&inv, "eks")),
        (
            Some("a10g"),
            4,
            Some(24576),
            vec!["cloud", "device-plugin"],
            vec![]
        )
    );
    assert_eq!(
        reading(entry(&inv, "aks")),
        (None, 1, None, vec!["cloud", "device-plugin"], vec![])
    );
    // No status.allocatable in the hand-made node: unknown, not "not allocatable".
    let eks_ng = entry(&inv, "eks-ng");
    assert_eq!(
        reading(eks_ng),
        (Some("nvidia-tesla-t4"), 0, None, vec!["cloud"], vec![])
    );
    let derived: Vec<_> = entry(&inv, "eks")
        .derived_from
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(derived, ["count", "memoryMiB", "product"]);
}

#[test]
fn labels_win_over_cloud_and_device_plugin() {
    let both = with_resources(
        node(
            "both",
            &[
                ("nvidia.com/gpu.product", "NVIDIA-L4"),
                ("nvidia.com/gpu.count", "1"),
                ("nvidia.com/gpu.memory", "23034"),
                ("cloud.google.com/gke-accelerator", "nvidia-l4"),
            ],
            "True",
        ),
        &[("nvidia.com/gpu", "2")],
        &[("nvidia.com/gpu", "2")],
    );
    let e = scan_one(both).unwrap();
    assert_eq!(
        reading(&e),
        (
            Some("NVIDIA-L4"),
            1,
            Some(23034),
            vec!["cloud", "device-plugin", "labels"],
            vec![]
        )
    );
    assert!(e.derived_from.is_empty(), "{:?}", e.derived_from);
}

#[test]
fn mig_config_pending_says_what_is_applied_and_clears_on_success() {
    let labels = |state: &'static str| {
        [
            ("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"),
            ("nvidia.com/gpu.count", "8"),
            ("nvidia.com/mig.strategy", "mixed"),
            ("nvidia.com/mig.config", "all-3g.40gb"),
            ("nvidia.com/mig.config.state", state),
        ]
    };
    for state in ["pending", "rebooting"] {
        // The device plugin is stopped while mig-manager works: allocatable 0 is part of it, not a second issue.
        let n = with_resources(
            node("m", &labels(state), "True"),
            &[("nvidia.com/gpu", "8")],
            &[("nvidia.com/gpu", "0")],
        );
        let e = scan_one(n).unwrap();
        assert_eq!(reasons(&e), ["MigConfigPending"], "{state}");
        let msg = &e.issues[0].message;
        assert!(
            msg.contains("re-partitioned") && msg.contains("all-3g.40gb") && msg.contains(state),
            "{msg}"
        );
    }
    let res = [("nvidia.com/mig-3g.40gb", "16")];
    let done = with_resources(node("m", &labels("success"), "True"), &res, &res);
    assert!(scan_one(done).unwrap().issues.is_empty());
}

#[test]
fn allocation_is_unknown_without_an_allocatable_block() {
    let gpu = [
        ("nvidia.com/gpu.product", "NVIDIA-L4"),
        ("nvidia.com/gpu.count", "1"),
    ];
    let mut partial = with_resources(node("p", &gpu, "True"), &[("nvidia.com/gpu", "1")], &[]);
    partial.status.as_mut().unwrap().allocatable = None;
    let e = scan_one(partial).unwrap();
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert!(
        e.notes.iter().any(|n| n.contains("unknown")),
        "{:?}",
        e.notes
    );
}

#[test]
fn a_ready_node_with_nothing_allocatable_is_one_issue_not_two() {
    // Also what a node moved to DRA looks like: the old device-plugin capacity stays, allocatable is 0.
    let n = with_resources(
        node(
            "dra",
            &[("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")],
            "True",
        ),
        &[("nvidia.com/gpu", "8")],
        &[("nvidia.com/gpu", "0")],
    );
    let e = scan_one(n).unwrap();
    assert_eq!(reasons(&e), ["GpusNotAllocatable"]);
    assert!(e.issues[0].message.contains("8"), "{}", e.issues[0].message);
    // One device of eight withdrawn is GpusUnhealthy, as before.
    let n = with_resources(
        node(
            "uh",
            &[("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3")],
            "True",
        ),
        &[("nvidia.com/gpu", "8")],
        &[("nvidia.com/gpu", "7")],
    );
    assert_eq!(reasons(&scan_one(n).unwrap()), ["GpusUnhealthy"]);
}

#[test]
fn leftover_zero_mig_resources_and_rounded_profiles_are_normal() {
    let labels = [
        ("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"),
        ("nvidia.com/gpu.count", "1"),
        ("nvidia.com/mig.strategy", "mixed"),
        ("nvidia.com/mig.config.state", "success"),
        ("nvidia.com/mig-3g.21gb.count", "2"),
        ("nvidia.com/mig-3g.21gb.memory", "20096"),
    ];
    let res = [
        ("nvidia.com/gpu", "0"),
        ("nvidia.com/mig-1g.10gb", "0"),
        ("nvidia.com/mig-3g.20gb", "2"),
    ];
    let e = scan_one(with_resources(node("h", &labels, "True"), &res, &res)).unwrap();
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    let devices: Vec<_> = e
        .mig
        .unwrap()
        .devices
        .into_iter()
        .map(|d| (d.profile, d.count, d.resource))
        .collect();
    assert_eq!(
        devices,
        [(
            "3g.21gb".to_owned(),
            2,
            Some("nvidia.com/mig-3g.20gb".to_owned())
        )]
    );
}

#[test]
fn values_from_the_wild_read_without_errors() {
    let labels = [
        ("nvidia.com/gpu.product", "Tesla-K80"),
        ("nvidia.com/gpu.count", " 4"),
        ("nvidia.com/gpu.memory", ""),
        ("nvidia.com/gpu.replicas", "0"),
        ("nvidia.com/gpu.sharing-strategy", ""),
        ("nvidia.com/gpu", "true"),
    ];
    let e = scan_one(node("old", &labels, "True")).unwrap();
    assert_eq!(
        (e.product.as_deref(), e.count, e.memory_mib),
        (Some("Tesla-K80"), 4, None)
    );
    assert!(e.issues.is_empty(), "{:?}", e.issues);
    assert!(e.sharing.is_none());
    for expected in ["spaces", "nvidia.com/gpu.memory is empty", "hand-made"] {
        assert!(
            e.notes.iter().any(|n| n.contains(expected)),
            "{expected}: {:?}",
            e.notes
        );
    }
    // The hand-made label alone makes a GPU node, with no count and no wrong number.
    let e = scan_one(node("hand", &[("nvidia.com/gpu", "true")], "True")).unwrap();
    assert_eq!(
        (e.count, e.memory_mib, e.sources.clone()),
        (0, None, vec!["labels".to_owned()])
    );
    assert!(scan_one(node("no", &[("nvidia.com/gpu", "false")], "True")).is_none());
    // Inner spaces are not a number: InvalidLabel, as any unusable number.
    let e = scan_one(node("sp", &[("nvidia.com/gpu.count", "1 6")], "True")).unwrap();
    assert_eq!(reasons(&e), ["GpuLabelsMissing", "InvalidLabel"]);
}

#[test]
fn memory_in_bytes_is_read_as_mib_and_said_so() {
    for (value, mib, bytes) in [
        ("81559", Some(81559), false),
        ("85520809984", Some(81559), true),
        ("16106127360", Some(15360), true),
        ("0", None, false),
        ("1048576", Some(1_048_576), false),
        // Over 1 TiB as MiB but not whole MiB as bytes: kept, with a note that it is implausible.
        ("4294967295", Some(4_294_967_295), false),
    ] {
        let labels = [
            ("nvidia.com/gpu.product", "NVIDIA-H100"),
            ("nvidia.com/gpu.memory", value),
        ];
        let e = scan_one(node("m", &labels, "True")).unwrap();
        assert_eq!(e.memory_mib, mib, "{value}");
        assert!(e.issues.is_empty(), "{value}: {:?}", e.issues);
        assert_eq!(e.derived_from.contains_key("memoryMiB"), bytes, "{value}");
        let memory_notes = e
            .notes
            .iter()
            .filter(|n| n.contains("nvidia.com/gpu.memory"));
        assert_eq!(
            memory_notes.count(),
            usize::from(value.len() > 7 || value == "0"),
            "{value}: {:?}",
            e.notes
        );
    }
}

/// What the operator's node watch keeps (it strips nodes on arrival) scans the same as the full objects.
#[test]
fn real_nodes_scan_the_same_after_the_watch_strips_them() {
    let nodes = fixture("real-nodes.yaml");
    let mut stripped = nodes.clone();
    stripped
        .iter_mut()
        .for_each(crate::sources::nodes::strip_node);
    assert_eq!(scan(&nodes, &all()), scan(&stripped, &all()));
}

#[test]
fn gke_sharing_and_partitions_count_physical_gpus_or_say_what_they_count() {
    let shared = with_resources(
        node(
            "gke-ts",
            &[
                ("cloud.google.com/gke-accelerator", "nvidia-l4"),
                ("cloud.google.com/gke-gpu-sharing-strategy", "time-sharing"),
                ("cloud.google.com/gke-max-shared-clients-per-gpu", "4"),
            ],
            "True",
        ),
        &[("nvidia.com/gpu", "8")],
        &[("nvidia.com/gpu", "8")],
    );
    let e = scan_one(shared).unwrap();
    assert_eq!(e.count, 2, "8 shares of 4 clients each are 2 GPUs");
    assert_eq!(
        e.derived_from.get("count").map(String::as_str),
        Some("capacity nvidia.com/gpu / 4 replicas")
    );
    let sharing = e.sharing.as_ref().unwrap();
    assert_eq!(
        (sharing.strategy.as_deref(), sharing.replicas),
        (Some("time-sharing"), Some(4))
    );
    assert!(e.issues.is_empty(), "{:?}", e.issues);

    let partitioned = with_resources(
        node(
            "gke-mig",
            &[
                ("cloud.google.com/gke-accelerator", "nvidia-tesla-a100"),
                ("cloud.google.com/gke-gpu-partition-size", "1g.5gb"),
            ],
            "True",
        ),
        &[("nvidia.com/gpu", "7")],
        &[("nvidia.com/gpu", "7")],
    );
    let e = scan_one(partitioned).unwrap();
    assert_eq!(e.count, 7);
    let mig = e.mig.as_ref().unwrap();
    assert!(
        mig.count_meaning
            .as_deref()
            .unwrap()
            .contains("MIG partitions of size 1g.5gb")
    );
    assert_eq!(mig.devices[0].resource.as_deref(), Some("nvidia.com/gpu"));

    // A renamed shared resource without labels: the shares divided by nothing known stay shares, said so.
    let renamed = with_resources(
        node("renamed", &[], "True"),
        &[("nvidia.com/gpu", "0"), ("nvidia.com/gpu.shared", "16")],
        &[("nvidia.com/gpu", "0"), ("nvidia.com/gpu.shared", "16")],
    );
    let e = scan_one(renamed).unwrap();
    assert_eq!(e.count, 16);
    assert_eq!(
        e.derived_from.get("count").map(String::as_str),
        Some("capacity nvidia.com/gpu.shared")
    );
}

#[test]
fn a_ready_cloud_gpu_node_without_gpu_resources_is_not_allocatable() {
    // kubernetes/kubernetes#55005: the GKE accelerator label is there, the GPU is not exposed.
    let n = with_resources(
        node(
            "gke",
            &[("cloud.google.com/gke-accelerator", "nvidia-tesla-k80")],
            "True",
        ),
        &[("cpu", "2")],
        &[("cpu", "1930m")],
    );
    let e = scan_one(n).unwrap();
    assert_eq!(reasons(&e), ["GpusNotAllocatable"]);
    assert!(
        e.issues[0].message.contains("cloud-provider label"),
        "{}",
        e.issues[0].message
    );
}

/// Found by the proptest: an empty label is absent, so it makes nothing a GPU node (and a GPU node always has a
/// source).
#[test]
fn empty_labels_make_nothing_a_gpu_node() {
    for key in [
        "nvidia.com/gpu.product",
        "nvidia.com/gpu.count",
        "nvidia.com/gpu.workload.config",
        "cloud.google.com/gke-accelerator",
        "nvidia.com/gpu",
    ] {
        let n = with_resources(node("e", &[(key, "")], "True"), &[], &[]);
        assert!(scan_one(n).is_none(), "{key}");
    }
}
