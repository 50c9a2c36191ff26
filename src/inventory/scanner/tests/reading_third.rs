//! The third round of real objects (tests/fixtures/reading/, with their sources; the expert's reading of each in
//! the `.md` beside it), each scanned alone, as its owner's cluster would show it.

use super::*;

/// The entry of the fixture's node `name`, scanned alone; `None` when it is no GPU node.
fn alone(file: &str, name: &str) -> Option<NodeInventory> {
    let node = fixture(file)
        .into_iter()
        .find(|n| n.metadata.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no node {name} in {file}"));
    let inv = scan(ScanInput::nodes(&read(&[node])).selector(&all()));
    inv.nodes.first().map(|n| (**n).clone())
}

const NVIDIA: &str = "reading/nvidia-nodes.yaml";
const TYPES: &str = "reading/ids-and-types-nodes.yaml";

fn vendor(e: &NodeInventory) -> Option<&'static str> {
    e.vendor.and_then(|v| v.name())
}

#[test]
fn rule_1_devices_gone_is_a_gpu_node_with_an_issue_and_mig_or_sharing_beside_0_is_none() {
    for (name, want_vendor) in [
        ("geti-v2-1501-hinton", "nvidia"),
        ("projectbluefin-lab-586-ghost", "amd"),
    ] {
        let e = alone(NVIDIA, name).expect("a GPU node");
        assert_eq!((vendor(&e), e.count), (Some(want_vendor), 0), "{name}");
        assert!(
            reasons(&e).contains(&"GpuDevicesGone"),
            "{name}: {:?}",
            reasons(&e)
        );
    }
    for name in [
        "kubectl-view-allocations-258-node",
        "cocalc-8161-node",
        "bottlerocket-4418-p5-node",
        "nvidia-docs-k8s-mig-mixed-a100-node",
    ] {
        let e = alone(NVIDIA, name).expect("a GPU node");
        assert!(
            !reasons(&e).contains(&"GpuDevicesGone"),
            "{name}: {:?}",
            reasons(&e)
        );
    }
    // The operator switched off explains the 0: one finding (gpu-operator#661).
    let e = alone(NVIDIA, "gpu-operator-661-node").unwrap();
    assert_eq!(reasons(&e), ["OperandsDisabled"]);
}

#[test]
fn rule_2_mig_resources_alone_count_at_least_their_slices_over_seven() {
    for (name, gpus) in [
        ("kubectl-view-allocations-258-node", 1),
        ("cocalc-8161-node", 1),
        // nvidia.com/gpu: 2 beside 14 slices: the device plugin's own count stands.
        ("gpu-operator-637-kub-as6", 2),
    ] {
        let e = alone(NVIDIA, name).unwrap();
        assert_eq!(e.count, gpus, "{name}");
    }
    let e = alone(NVIDIA, "cocalc-8161-node").unwrap();
    assert!(
        e.derived_from[&"count".to_owned()].starts_with("at least: 7 MIG compute slices"),
        "{:?}",
        e.derived_from
    );
}

#[test]
fn rule_3_intel_s_pci_device_id_names_the_model_and_no_labels_are_missing() {
    for (name, model) in [
        ("intel-dp-issue-1826-k3s-nuc-1", "Intel Iris Xe Graphics"),
        ("intel-dp-issue-1826-talos-nuc-2", "Intel Iris Xe Graphics"),
        ("stibbons-hex-lexicon", "Intel UHD Graphics G4"),
    ] {
        let e = alone(TYPES, name).unwrap();
        assert_eq!(
            (vendor(&e), e.product.as_deref()),
            (Some("intel"), Some(model)),
            "{name}"
        );
        assert_eq!(e.count, 1, "{name}");
        assert!(
            !reasons(&e).contains(&"GpuLabelsMissing"),
            "{name}: {:?}",
            reasons(&e)
        );
    }
    // `k3s` in the k3s node's instance-type label is no cloud type.
    let e = alone(TYPES, "intel-dp-issue-1826-k3s-nuc-1").unwrap();
    assert!(
        !e.derived_from.values().any(|v| v.contains("instance-type")),
        "{:?}",
        e.derived_from
    );
}

#[test]
fn rule_4_an_instance_type_names_the_accelerators_when_nothing_else_does() {
    for (name, want) in [
        (
            "karpenter-pr-1476-ip-10-32-136-67",
            ("nvidia", "NVIDIA-A10G", 1),
        ),
        (
            "tf-aws-eks-issue-2060-inf1-xlarge",
            ("aws", "AWS Inferentia", 1),
        ),
        (
            "tensorworks-directx-pr-2-ip-192-168-62-122",
            ("nvidia", "NVIDIA-T4", 1),
        ),
    ] {
        let e = alone(TYPES, name).expect("the instance type makes an accelerator node");
        assert_eq!(
            (
                vendor(&e).unwrap_or("-"),
                e.product.as_deref().unwrap_or("-"),
                e.count
            ),
            want,
            "{name}"
        );
        assert!(
            e.sources.contains(&Source::Cloud),
            "{name}: {:?}",
            e.sources
        );
        assert!(
            e.derived_from[&"count".to_owned()].contains("node.kubernetes.io/instance-type="),
            "{name}: {:?}",
            e.derived_from
        );
    }
    // GKE's label and the type agree: one L4, not two.
    let e = alone(TYPES, "kiwonl-gke-aiml-l4-spot-55a0278b-qdj6").unwrap();
    assert_eq!((e.product.as_deref(), e.count), (Some("nvidia-l4"), 1));
}

#[test]
fn rule_5_tpu_chips_come_from_the_machine_type_and_legacy_neuron_resources_count_devices() {
    for (name, chips) in [
        ("kiwonl-gke-aiml-gke-tpu-cfe31df8-rc2f", 1),
        ("kiwonl-gke-aiml-gk3-tpu-d0b4136a-w2j9", 4),
    ] {
        let e = alone(TYPES, name).unwrap();
        assert_eq!((vendor(&e), e.count), (Some("google"), chips), "{name}");
    }
    let trn1 = alone(TYPES, "sirzzang-blog-trn1-2xlarge-ip-10-0-5-100").unwrap();
    assert_eq!(
        (vendor(&trn1), trn1.count),
        (Some("aws"), 1),
        "1 device, its 2 cores are not devices"
    );
}

#[test]
fn rule_8_a_stale_renamed_resource_is_no_unhealthy_gpu() {
    // bottlerocket-core-kit#789: MPS x8 on one L4; nvidia.com/gpu.shared 8 / 0 is the previous configuration's.
    let e = alone(
        NVIDIA,
        "bottlerocket-core-kit-789-ip-192-168-12-91.us-west-2.compute.internal",
    )
    .unwrap();
    assert!(!reasons(&e).contains(&"GpusUnhealthy"), "{:?}", reasons(&e));
    // MPS said by GFD's labels: 4 T4s advertised 16 times.
    let e = alone(NVIDIA, "nvidia-docs-pr67-mps-t4-node").unwrap();
    assert_eq!(e.count, 4);
    assert_eq!(
        e.sharing.as_ref().and_then(|s| s.strategy.as_deref()),
        Some("mps")
    );
}

#[test]
fn rule_9_operands_not_run_and_a_stale_nvsentinel_quarantine_are_issues() {
    let e = alone(NVIDIA, "gpu-operator-491-node").unwrap();
    assert!(
        reasons(&e).contains(&"OperandsDisabled"),
        "{:?}",
        reasons(&e)
    );
    // Paused for a driver upgrade is the existing OperandsPaused, not disabled.
    let e = alone(NVIDIA, "gpu-operator-316-node").unwrap();
    assert!(reasons(&e).contains(&"OperandsPaused") && !reasons(&e).contains(&"OperandsDisabled"));
    let e = alone(NVIDIA, "nvsentinel-458-node").unwrap();
    assert!(
        reasons(&e).contains(&"StaleQuarantine"),
        "{:?}",
        reasons(&e)
    );
    assert!(
        !reasons(&e).contains(&"GpuNodeQuarantined") && !reasons(&e).contains(&"Unschedulable")
    );
}
