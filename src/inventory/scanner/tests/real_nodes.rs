//! Every node of `tests/fixtures/real-nodes.yaml` (published by vendors and users) read as an expert reads it.

use super::*;
use crate::inventory::health::HealthTable;
use crate::inventory::test_support::read;
use kube::ResourceExt;

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

/// Every node of `tests/fixtures/real-nodes.yaml` against `tests/fixtures/README.md`.
#[test]
fn real_nodes_read_as_an_expert_reads_them() {
    let inv = scan(ScanInput::nodes(&read(&fixture("real-nodes.yaml"))).selector(&all()));
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
            (h100, 1, Some(81559), vec!["labels"], vec![]),
        ),
        (
            S4124_BALANCED,
            (h100, 1, Some(81559), vec!["labels"], vec![]),
        ),
        (
            T4_BYTES,
            (
                Some("Tesla-T4-SHARED"),
                1,
                Some(15360),
                vec!["device-plugin", "labels"],
                vec![],
            ),
        ),
        (
            DGX_MYWORKER,
            (
                None,
                // 56 MIG compute slices: at least 8 GPUs, the DGX H100's 8 (#38 rule 2; it read 0 before).
                8,
                None,
                vec!["device-plugin", "labels"],
                vec!["GpuLabelsMissing"],
            ),
        ),
        (
            T4_RENAMED,
            (
                Some("Tesla-T4"),
                4,
                None,
                vec!["device-plugin", "labels"],
                vec![],
            ),
        ),
        (
            OCIO,
            (
                None,
                16,
                None,
                vec!["device-plugin"],
                vec!["GpuLabelsMissing", "GpusUnhealthy"],
            ),
        ),
        (
            PREM_MIG,
            (
                Some("NVIDIA-A100-SXM4-40GB-MIG-7g.40gb"),
                0,
                None,
                vec!["labels"],
                vec![],
            ),
        ),
        (XE9680, (h100, 8, Some(81559), vec!["labels"], vec![])),
        (
            MIG_INVALID,
            (
                Some("NVIDIA-A100-80GB-PCIe-MIG-INVALID"),
                0,
                None,
                vec!["labels"],
                vec!["MigInvalid"],
            ),
        ),
        (
            GKE_K80,
            (Some("nvidia-tesla-k80"), 0, None, vec!["cloud"], vec![]),
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
    // The sources show no conditions for these nodes: readiness unknown, as their notes read it (before
    // issue #24 each also had NotReady, against its own note).
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
            .map(Amount::text),
        Some("16")
    );

    let ocio = entry(&inv, OCIO);
    assert_eq!(
        ocio.derived_from.get("count").map(String::as_str),
        Some("capacity nvidia.com/gpu")
    );
    assert!(
        ocio.issues[1]
            .message
            .contains("nvidia.com/gpu capacity 16, allocatable 0"),
        "{}",
        ocio.issues[1].message
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
    let inv = scan(ScanInput::nodes(&read(&nodes)).selector(&all()));
    assert_eq!(
        (inv.total_gpu_nodes, inv.ready_gpu_nodes, inv.total_gpus),
        (2, 1, 1)
    );
    assert_eq!(
        reading(entry(&inv, GKE_K80)),
        (Some("nvidia-tesla-k80"), 0, None, vec!["cloud"], vec![])
    );
    assert_eq!(
        reading(entry(&inv, K8S_NODE1)),
        (None, 1, None, vec!["device-plugin"], vec![])
    );
    // The same holds for every node without GFD labels, taken together.
    let gfd_less: Vec<Node> = fixture("real-nodes.yaml")
        .into_iter()
        .filter(|n| {
            !n.labels()
                .iter()
                .any(|(k, v)| crate::inventory::vendors::nvidia::gfd_labels::is_gfd_label(k, v))
        })
        .collect();
    let inv = scan(ScanInput::nodes(&read(&gfd_less)).selector(&all()));
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

/// What the operator's node watch keeps (it decodes nodes slim and keeps the core's view) scans the same as
/// the full objects.
#[test]
fn real_nodes_scan_the_same_after_the_watch_strips_them() {
    let nodes = fixture("real-nodes.yaml");
    let cached: Vec<crate::inventory::cluster_node::ClusterNode> = nodes
        .iter()
        .map(|n| {
            let slim: crate::sources::slim::SlimNode =
                serde_json::from_value(serde_json::to_value(n).unwrap()).unwrap();
            slim.to_cluster_node(HealthTable::defaults())
        })
        .collect();
    assert_eq!(
        scan(ScanInput::nodes(&read(&nodes)).selector(&all())),
        scan(ScanInput::nodes(&cached).selector(&all()))
    );
}
