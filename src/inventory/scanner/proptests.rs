//! Hostile input: arbitrary labels, quantities and conditions never panic the scanner, and its output is
//! sorted and deterministic. Also the limits Kubernetes allows (253-character names, 63-character values).

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::test_support::read;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use proptest::prelude::*;

use super::scan_node;
use crate::inventory::model::IssueReason;
use crate::inventory::vendors::vendor_of;
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
        // Other vendors' labels: AMD's labeller (plain and counted), Intel's NFD rules, GKE TPUs, instances.
        "(beta\\.)?amd\\.com/gpu\\.(product-name|vram|family|device-id|cu-count|compute-memory-partition)(\\.[A-Za-z0-9_.]{0,10})?",
        Just("dcm.amd.com/gpu-config-profile".to_owned()),
        "metricsexporter\\.amd\\.com\\.gpu\\.[0-9]{1,2}\\.state",
        "gpu\\.intel\\.com/(product|family|device\\.count|memory\\.max|device-id\\.0300-[0-9a-f]{4}\\.count)",
        Just("cloud.google.com/gke-tpu-accelerator".to_owned()),
        Just("node.kubernetes.io/instance-type".to_owned()),
        "[a-z0-9./_-]{1,40}",
    ]
}

/// Extended resources of every vendor, and random ones.
fn resource_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "nvidia.com/[a-z0-9.-]{1,12}",
        "nvidia.com/(GA102GL_A10|NVIDIA_A10-4Q|GRID_T4-16Q)",
        "amd\\.com/(gpu|gpu_vf|cpx_nps4|spx_nps1|dpx)",
        "gpu\\.intel\\.com/(i915|xe|millicores|xe_monitoring)",
        "habana\\.ai/gaudi2?",
        "aws\\.amazon\\.com/(neuron|neurondevice|neuroncore)",
        Just("google.com/tpu".to_owned()),
        Just("microsoft.com/directx".to_owned()),
        Just("cpu".to_owned()),
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
        Just("AMD_Instinct_MI300X_OAM".to_owned()),
        Just("192G".to_owned()),
        Just("trn2.48xlarge".to_owned()),
        Just("unhealthy".to_owned()),
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
        proptest::collection::btree_map(resource_name(), quantity(), 0..4),
        proptest::collection::btree_map(resource_name(), quantity(), 0..4),
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
        let inventory = scan(ScanInput::nodes(&read(&nodes)));
        prop_assert!(inventory.nodes.len() <= 2);
        nodes.reverse();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&read(&nodes))));
    }

    #[test]
    fn scan_never_panics_and_is_sorted_and_deterministic(mut nodes in proptest::collection::vec(node(), 0..16)) {
        let inventory = scan(ScanInput::nodes(&read(&nodes)));
        let names: Vec<&String> = inventory.nodes.iter().map(|n| &n.name).collect();
        prop_assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted and unique: {names:?}");
        prop_assert_eq!(inventory.total_gpu_nodes as usize, inventory.nodes.len());
        prop_assert!(inventory.ready_gpu_nodes <= inventory.total_gpu_nodes);
        prop_assert_eq!(inventory.total_gpus, inventory.nodes.iter().map(|n| n.count).fold(0u64, u64::saturating_add));
        nodes.reverse();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&read(&nodes))));
        let mut memory = crate::inventory::memory::ScanMemory::default();
        prop_assert_eq!(&inventory, &scan(ScanInput::nodes(&read(&nodes)).memory(&mut memory)), "interning changes no result");
        for entry in &inventory.nodes {
            prop_assert!(serde_json::to_string(&wire::node_entry(entry, &[], Detail::Devices)).is_ok());
            prop_assert!(entry.sources.windows(2).all(|w| w[0] < w[1]), "sources sorted: {:?}", entry.sources);
                        prop_assert!(!entry.sources.is_empty(), "a GPU node is described by something");
            let reasons: Vec<&str> = entry.issues.iter().map(|i| i.reason.as_str()).collect();
            prop_assert!(reasons.iter().all(|r| IssueReason::ALL.iter().any(|k| k.as_str() == *r)));
            prop_assert!(
                !(reasons.contains(&"GpusNotAllocatable") && reasons.contains(&"GpusUnhealthy")),
                "one allocation issue at most: {reasons:?}"
            );
        }
        // Without any GFD label among the nodes, no NVIDIA node is GpuLabelsMissing (another vendor's labeller
        // speaks for its own nodes only).
        if !nodes.iter().any(|n| n.metadata.labels.iter().flatten().any(|(k, v)| crate::inventory::vendors::nvidia::gfd_labels::is_gfd_label(k, v))) {
            prop_assert!(inventory
                .nodes
                .iter()
                .filter(|e| e.vendor == Some(crate::inventory::model::Vendor::Nvidia))
                .all(|e| e.issues.iter().all(|i| i.reason != "GpuLabelsMissing")));
        }
    }

    #[test]
    fn a_node_is_counted_under_one_vendor_only(nodes in proptest::collection::vec(node(), 0..16)) {
        let inventory = scan(ScanInput::nodes(&read(&nodes)));
        // Each node is in one product at most, under its own vendor: the products' nodes add up to the nodes
        // with a product, and the free devices per vendor add up to the total.
        let with_product = inventory.nodes.iter().filter(|n| n.product.is_some()).count();
        prop_assert_eq!(inventory.products.iter().map(|p| p.nodes as usize).sum::<usize>(), with_product);
        for product in &inventory.products {
            let vendors: std::collections::BTreeSet<Option<&str>> = inventory
                .nodes
                .iter()
                .filter(|n| n.product.as_deref().map(crate::inventory::totals::same_product_key)
                    == Some(crate::inventory::totals::same_product_key(&product.name)))
                .map(|n| vendor_of(n))
                .filter(|v| *v == product.vendor)
                .collect();
            prop_assert_eq!(vendors.len(), 1, "{} has nodes of its vendor {:?}", &product.name, product.vendor);
        }
        let free = crate::inventory::totals::free_by_vendor(&inventory.nodes);
        prop_assert_eq!(free.values().fold(0u64, |a, b| a.saturating_add(*b)), inventory.free_gpus);
        for entry in &inventory.nodes {
            prop_assert!(entry.vendor.is_some(), "the scanner attributes every node: {}", entry.name);
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
    let entry = scan_node(&ClusterNode::of(&node)).expect("a GPU node");
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

/// Condition types: the health table's, the kubelet's, near misses and random ones.
fn condition_type() -> impl Strategy<Value = String> {
    prop_oneof![
        "Gpu[A-Za-z]{0,8}Watch",
        "(SysLogsXIDError|SysLogsSXIDError|SysLogsGPUFallenOff|NVSwitchFatalError|NVSwitchDown)",
        "(GPUMissing|XIDErrors|GPUXIDErrors|NVLinkStatusInactive|IBLinkFlapping|XidCriticalError)",
        "(Gcm[A-Za-z]{0,12}|NebiusGPU[A-Za-z]{0,6}|AMDGPU[A-Za-z]{0,10})",
        "(MemoryPressure|DiskPressure|PIDPressure|NetworkUnavailable|KernelDeadlock|ReadonlyFilesystem)",
        "(Gpu|Xid|GPU|AMD|NVSwitc|SysLogs)[A-Za-z]{0,3}",
        ".{0,24}",
    ]
}

proptest! {
    #[test]
    fn extra_conditions_and_labels_raise_issues_only_where_a_table_names_them(
        extra in proptest::collection::vec(
            (condition_type(), prop_oneof!["True", "False", "Unknown", ".{0,6}"], ".{0,80}"), 0..8),
        labels in proptest::collection::btree_map("[a-z0-9./_-]{1,40}", label_value(), 0..12),
    ) {
        let base = || {
            let mut node = Node::default();
            node.metadata.name = Some("gpu".into());
            node.metadata.labels = Some(BTreeMap::from([
                ("nvidia.com/gpu.product".to_owned(), "NVIDIA-H100-80GB-HBM3".to_owned()),
            ]));
            let gpus = BTreeMap::from([("nvidia.com/gpu".to_owned(), Quantity("8".into()))]);
            node.status = Some(NodeStatus {
                capacity: Some(gpus.clone()),
                allocatable: Some(gpus),
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            });
            node
        };
        let before = scan_node(&ClusterNode::of(&base())).expect("a GPU node");
        let mut node = base();
        node.metadata.labels.as_mut().unwrap().extend(labels);
        let conditions = node.status.as_mut().unwrap().conditions.as_mut().unwrap();
        for (type_, status, message) in &extra {
            conditions.push(NodeCondition {
                type_: type_.clone(),
                status: status.clone(),
                message: Some(message.clone()),
                ..Default::default()
            });
        }
        let after = scan_node(&ClusterNode::of(&node)).expect("still a GPU node");
        let table = crate::inventory::health::HealthTable::defaults();
        let named_true = extra
            .iter()
            .filter(|(t, s, _)| *s == "True" && t != "Ready" && table.names(t))
            .count();
        let mut new: Vec<IssueReason> = after.issues.iter().map(|i| i.reason).collect();
        for issue in &before.issues {
            if let Some(at) = new.iter().position(|r| *r == issue.reason) {
                new.remove(at);
            }
        }
        // Random labels may be malformed counts (InvalidLabel is the first editions' rule); nothing else.
        new.retain(|r| *r != IssueReason::InvalidLabel);
        prop_assert!(new.iter().all(|r| *r == IssueReason::GpuHealthCheckFailed), "{:?}", after.issues);
        prop_assert_eq!(new.len(), named_true, "{:?}", after.issues);
    }
}
