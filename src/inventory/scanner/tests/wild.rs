//! Clouds without GPU Feature Discovery, and label values as they are found in the wild.

use super::*;
use crate::inventory::test_support::read;

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
    let inv = scan(ScanInput::nodes(&read(&[karpenter, aks, eks])).selector(&all()));
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
        (0, None, vec![Source::Labels])
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
