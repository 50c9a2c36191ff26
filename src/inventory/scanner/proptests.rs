//! Hostile input: arbitrary labels, quantities and conditions never panic the scanner, and its output is
//! sorted and deterministic. Also the limits Kubernetes allows (253-character names, 63-character values).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use proptest::prelude::*;

use super::scan_node;
use crate::inventory::model::IssueReason;
use crate::inventory::{ScanInput, scan};
use crate::publish::content::wire::{self, Detail};
use crate::sources::dump::parse_node_dump;

/// Keys biased toward the ones the scanner reads, plus random ones.
fn label_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("nvidia.com/gpu.present".to_owned()),
        Just("nvidia.com/gpu.product".to_owned()),
        Just("nvidia.com/gpu.count".to_owned()),
        Just("nvidia.com/gpu.memory".to_owned()),
        Just("nvidia.com/gpu.replicas".to_owned()),
        Just("nvidia.com/gpu.sharing-strategy".to_owned()),
        Just("nvidia.com/gpu.workload.config".to_owned()),
        Just("nvidia.com/mig.strategy".to_owned()),
        Just("nvidia.com/mig.config.state".to_owned()),
        Just("nvidia.com/mig.config".to_owned()),
        Just("nvidia.com/gpu".to_owned()),
        Just("nvidia.com/gfd.timestamp".to_owned()),
        Just("cloud.google.com/gke-accelerator".to_owned()),
        Just("k8s.amazonaws.com/accelerator".to_owned()),
        Just("kubernetes.azure.com/accelerator".to_owned()),
        "(karpenter.k8s.aws|eks.amazonaws.com)/instance-gpu-(name|count|memory|manufacturer)",
        "nvidia.com/mig-[0-9a-z.]{0,8}\\.(count|memory|product)",
        "feature.node.kubernetes.io/pci-[0-9a-f_]{0,12}\\.present",
        "[a-z0-9./_-]{1,40}",
    ]
}

fn label_value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,25}",
        "-?[0-9]{1,5}[A-Za-z]{0,3}",
        Just("true".to_owned()),
        Just("false".to_owned()),
        Just("failed".to_owned()),
        Just("mixed".to_owned()),
        Just("single".to_owned()),
        Just("pending".to_owned()),
        Just("nvidia".to_owned()),
        Just("amd".to_owned()),
        Just("nvidia-tesla-t4".to_owned()),
        Just("16106127360".to_owned()),
        " {0,2}[0-9]{1,6} {0,2}",
        ".{0,63}",
    ]
}

fn quantity() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,22}",
        "[0-9.eE+-]{0,12}[kMGTPEimun]{0,2}",
        ".{0,20}"
    ]
}

fn node() -> impl Strategy<Value = Node> {
    (
        "[a-z0-9][a-z0-9.-]{0,252}",
        proptest::collection::btree_map(label_key(), label_value(), 0..24),
        proptest::collection::btree_map("nvidia.com/[a-z0-9.-]{1,12}|cpu", quantity(), 0..4),
        proptest::collection::btree_map("nvidia.com/[a-z0-9.-]{1,12}|cpu", quantity(), 0..4),
        proptest::option::of(prop_oneof!["True", "False", "Unknown", ".{0,10}"]),
        proptest::option::of(any::<bool>()),
        any::<bool>(),
    )
        .prop_map(
            |(name, labels, capacity, allocatable, ready, unschedulable, partial)| {
                let quantities = |m: BTreeMap<String, String>| {
                    m.into_iter().map(|(k, v)| (k, Quantity(v))).collect()
                };
                let mut node = Node::default();
                node.metadata.name = Some(name);
                node.metadata.labels = Some(labels);
                node.spec = Some(NodeSpec {
                    unschedulable,
                    ..Default::default()
                });
                node.status = Some(NodeStatus {
                    capacity: Some(quantities(capacity)),
                    // A partial dump has no allocatable block at all.
                    allocatable: (!partial).then(|| quantities(allocatable)),
                    conditions: ready.map(|status| {
                        vec![NodeCondition {
                            type_: "Ready".into(),
                            status,
                            ..Default::default()
                        }]
                    }),
                    ..Default::default()
                });
                node
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn repeated_names_keep_one_entry_whatever_the_order(
        mut nodes in proptest::collection::vec((node(), "[ab]"), 0..8)
            .prop_map(|v| v.into_iter().map(|(mut n, name)| { n.metadata.name = Some(name); n }).collect::<Vec<_>>())
    ) {
        let inventory = scan(ScanInput::nodes(&nodes));
        prop_assert!(inventory.nodes.len() <= 2);
        nodes.reverse();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&nodes)));
    }

    #[test]
    fn scan_never_panics_and_is_sorted_and_deterministic(mut nodes in proptest::collection::vec(node(), 0..16)) {
        let inventory = scan(ScanInput::nodes(&nodes));
        let names: Vec<&String> = inventory.nodes.iter().map(|n| &n.name).collect();
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted and unique: {names:?}");
        prop_assert_eq!(inventory.total_gpu_nodes as usize, inventory.nodes.len());
        prop_assert!(inventory.ready_gpu_nodes <= inventory.total_gpu_nodes);
        prop_assert_eq!(inventory.total_gpus, inventory.nodes.iter().map(|n| n.count).sum::<u64>());
        nodes.reverse();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&nodes)));
        let interner = crate::inventory::interner::NodeInterner::default();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&nodes).interner(&interner)), "interning changes no result");
        for entry in &inventory.nodes {
            prop_assert!(serde_json::to_string(&wire::node_entry(entry, Detail::Devices)).is_ok());
            prop_assert!(entry.sources.windows(2).all(|w| w[0] < w[1]), "sources sorted: {:?}", entry.sources);
                        prop_assert!(!entry.sources.is_empty(), "a GPU node is described by something");
            let reasons: Vec<&str> = entry.issues.iter().map(|i| i.reason.as_str()).collect();
            prop_assert!(reasons.iter().all(|r| IssueReason::ALL.iter().any(|k| k.as_str() == *r)));
            prop_assert!(
                !(reasons.contains(&"GpusNotAllocatable") && reasons.contains(&"GpusUnhealthy")),
                "one allocation issue at most: {reasons:?}"
            );
        }
        // Without any GFD label among the nodes, nobody is GpuLabelsMissing.
        if !nodes.iter().any(|n| n.metadata.labels.iter().flatten().any(|(k, v)| super::labels::is_gfd_label(k, v))) {
            prop_assert!(inventory.nodes.iter().all(|e| e.issues.iter().all(|i| i.reason != "GpuLabelsMissing")));
        }
    }

    #[test]
    fn node_dump_parser_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_node_dump(&bytes, "fuzz");
    }

    #[test]
    fn node_dump_parser_never_panics_on_near_yaml(text in "(kind: (List|Node)\n)?(items:\n)?( *- [a-z]{0,6}: [\\[{\"'a-z0-9:]{0,8}\n){0,8}") {
        let _ = parse_node_dump(text.as_bytes(), "fuzz");
    }
}

#[test]
fn limits_kubernetes_allows() {
    let long_name = format!("{}.{}", "a".repeat(126), "b".repeat(126));
    assert_eq!(long_name.len(), 253);
    let mut labels: Vec<(String, String)> = (0..1000)
        .map(|i| (format!("example.com/label-{i}"), "x".repeat(63)))
        .collect();
    labels.push(("nvidia.com/gpu.product".into(), "P".repeat(63)));
    labels.push(("nvidia.com/gpu.count".into(), "9".repeat(63)));
    labels.push(("nvidia.com/gpu.memory".into(), u32::MAX.to_string()));
    let mut node = Node::default();
    node.metadata.name = Some(long_name.clone());
    node.metadata.labels = Some(labels.into_iter().collect());
    let entry = scan_node(&node).expect("a GPU node");
    assert_eq!(entry.name, long_name);
    assert_eq!(entry.product.as_deref().map(str::len), Some(63));
    assert_eq!(
        (entry.count, entry.memory_mib),
        (0, Some(u64::from(u32::MAX)))
    );
    let invalid: Vec<_> = entry
        .issues
        .iter()
        .filter(|i| i.reason == "InvalidLabel")
        .collect();
    assert_eq!(
        invalid.len(),
        1,
        "the 63-digit count is invalid: {:?}",
        entry.issues
    );
}
