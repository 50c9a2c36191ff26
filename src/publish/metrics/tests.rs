//! The gauges set from a model, and the series removed when what they describe is gone.

use std::sync::Arc;

use super::{InventoryGauges, export_inventory, retain_inventories};
use crate::inventory::model::{DomainFree, TopologySummary};
use crate::inventory::model::{Inventory, IssueReason, NodeInventory};
use crate::inventory::model::{Issue, JobFit, NamespaceTotals, ProductTotals, ResourceTotals};
use crate::runtime::metrics::Metrics;

fn status(nodes: &[(&str, bool, Option<u64>)]) -> Arc<Inventory> {
    Arc::new(Inventory {
        total_gpu_nodes: nodes.len() as u32,
        ready_gpu_nodes: nodes.iter().filter(|n| n.1).count() as u32,
        total_gpus: nodes.len() as u64,
        nodes: nodes
            .iter()
            .map(|(name, ready, mem)| NodeInventory {
                name: (*name).into(),
                ready: *ready,
                count: 1,
                memory_mib: *mem,
                product: Some("NVIDIA-L4".into()),
                issues: if *ready {
                    vec![]
                } else {
                    vec![Issue::new(IssueReason::NotReady, "")]
                },
                ..Default::default()
            })
            .map(Arc::new)
            .collect(),
        ..Default::default()
    })
}

#[test]
fn exports_follow_names_and_units() {
    let g = InventoryGauges::default();
    let m = Metrics::with_families(|r| g.register(r));
    export_inventory(
        &m,
        &g,
        "cluster",
        &status(&[("a", true, Some(1024)), ("b", false, None)]),
    );
    let text = m.encode();
    assert!(
        text.contains("gpu_inventory_gpu_nodes{inventory=\"cluster\"} 2"),
        "{text}"
    );
    assert!(text.contains("gpu_inventory_ready_gpu_nodes{inventory=\"cluster\"} 1"));
    assert!(text.contains(
        "gpu_inventory_node_gpu_memory_bytes{inventory=\"cluster\",node=\"a\"} 1073741824"
    ));
    assert!(
        text.contains("gpu_inventory_node_issues{inventory=\"cluster\",reason=\"NotReady\"} 1")
    );
    assert!(text.contains("gpu_inventory_node_info{inventory=\"cluster\",node=\"b\",vendor=\"nvidia\",product=\"NVIDIA-L4\",workload_config=\"\",ready=\"false\"} 1"), "{text}");
    assert!(text.ends_with("# EOF\n"));

    export_inventory(&m, &g, "cluster", &status(&[("a", true, Some(1024))]));
    let text = m.encode();
    assert!(
        !text.contains("node=\"b\""),
        "series of a gone node are removed:\n{text}"
    );
    retain_inventories(&m, &g, |_| false);
    assert!(!m.encode().contains("inventory=\"cluster\""));
}

#[test]
fn allocation_series_follow_the_status_and_leave_no_ghosts() {
    let mut with_pods = Arc::unwrap_or_clone(status(&[("a", true, None)]));
    let node = Arc::make_mut(&mut with_pods.nodes[0]);
    node.allocated =
        crate::inventory::model::ResourceMap::from_iter([("nvidia.com/gpu".to_owned(), 3)]);
    node.free = crate::inventory::model::ResourceMap::from_iter([("nvidia.com/gpu".to_owned(), 5)]);
    with_pods.free_gpus = 5;
    with_pods.pending_gpu_pods = 2;
    with_pods.resources = vec![ResourceTotals {
        name: "nvidia.com/gpu".into(),
        capacity: 8,
        allocatable: 8,
        allocated: 3,
        free: 5,
    }];
    with_pods.products = vec![ProductTotals {
        name: "NVIDIA-L4".into(),
        vendor: Some("nvidia"),
        nodes: 1,
        gpus: 8,
        free_gpus: 5,
        occupancy: Default::default(),
        nodes_with_free_gpus: vec![
            JobFit {
                at_least: 4,
                nodes: 1,
            },
            JobFit {
                at_least: 8,
                nodes: 0,
            },
        ],
    }];
    with_pods.namespaces = vec![NamespaceTotals {
        name: "ml".into(),
        allocated: [("nvidia.com/gpu".to_owned(), 3)].into(),
        pending_pods: 2,
        pending: [("nvidia.com/gpu".to_owned(), 32)].into(),
        gpu_equivalents_milli: Some(2500),
        gpu_equivalents_by_product: [("NVIDIA-H100-80GB-HBM3".to_owned(), 2500)].into(),
    }];
    let g = InventoryGauges::default();
    let m = Metrics::with_families(|r| g.register(r));
    export_inventory(&m, &g, "cluster", &Arc::new(with_pods));
    let text = m.encode();
    for line in [
        "gpu_inventory_free_gpus{inventory=\"cluster\"} 5",
        "gpu_inventory_pending_gpu_pods{inventory=\"cluster\"} 2",
        "gpu_inventory_node_allocated{inventory=\"cluster\",node=\"a\",resource=\"nvidia.com/gpu\"} 3",
        "gpu_inventory_node_free{inventory=\"cluster\",node=\"a\",resource=\"nvidia.com/gpu\"} 5",
        "gpu_inventory_resource_free{inventory=\"cluster\",resource=\"nvidia.com/gpu\"} 5",
        "gpu_inventory_namespace_requested{inventory=\"cluster\",namespace=\"ml\",resource=\"nvidia.com/gpu\"} 3",
        "gpu_inventory_namespace_pending_gpu_pods{inventory=\"cluster\",namespace=\"ml\"} 2",
        "gpu_inventory_namespace_gpu_equivalents{inventory=\"cluster\",namespace=\"ml\",product=\"NVIDIA-H100-80GB-HBM3\"} 2.5",
        "gpu_inventory_product_nodes_with_free_gpus{inventory=\"cluster\",product=\"NVIDIA-L4\",vendor=\"nvidia\",at_least=\"4\"} 1",
        "gpu_inventory_product_nodes_with_free_gpus{inventory=\"cluster\",product=\"NVIDIA-L4\",vendor=\"nvidia\",at_least=\"8\"} 0",
    ] {
        assert!(text.contains(line), "{line} missing in:\n{text}");
    }
    export_inventory(&m, &g, "cluster", &status(&[("a", true, None)]));
    let text = m.encode();
    assert!(
        !text.contains("namespace=\"ml\""),
        "a namespace without pods leaves:\n{text}"
    );
    assert!(!text.contains("gpu_inventory_node_allocated{"), "{text}");
    assert!(
        !text.contains("gpu_inventory_product_nodes_with_free_gpus{"),
        "a product gone leaves no series:\n{text}"
    );
    assert!(
        text.contains("gpu_inventory_pending_gpu_pods{inventory=\"cluster\"} 0"),
        "{text}"
    );
}

fn with_topology(largest: &[(&str, u64)], degraded: u32, subblocks: bool) -> Arc<Inventory> {
    let mut inventory = Arc::unwrap_or_clone(status(&[("a", true, None)]));
    let summary = |level: &'static str, domains: &[(&str, u64)], degraded: u32| TopologySummary {
        product: "NVIDIA-GB200".into(),
        level: level.into(),
        gpus_per_pod: 4,
        domains: domains.len() as u32,
        largest_free_gpus: domains.iter().map(|d| d.1).max().unwrap_or(0),
        largest_domains: domains
            .iter()
            .map(|(name, free)| DomainFree {
                name: (*name).into(),
                free_gpus: *free,
                nodes: 18,
            })
            .collect(),
        degraded_domains: degraded,
        ..Default::default()
    };
    inventory.topology = vec![summary("nvlink", largest, degraded)];
    if subblocks {
        inventory.topology.push(summary(
            "cloud.google.com/gce-topology-subblock",
            &[("subblock-1", 72)],
            0,
        ));
    }
    Arc::new(inventory)
}

#[test]
fn topology_series_follow_the_largest_domains_and_leave_no_ghosts() {
    let g = InventoryGauges::default();
    let m = Metrics::with_families(|r| g.register(r));
    export_inventory(
        &m,
        &g,
        "cluster",
        &with_topology(&[("rack-1.1", 72), ("rack-3.7", 52)], 1, true),
    );
    let text = m.encode();
    let nvlink = "inventory=\"cluster\",product=\"NVIDIA-GB200\",level=\"nvlink\"";
    let subblock = "inventory=\"cluster\",product=\"NVIDIA-GB200\",level=\"cloud.google.com/gce-topology-subblock\"";
    for line in [
        format!("gpu_inventory_topology_domains{{{nvlink}}} 2"),
        format!("gpu_inventory_topology_degraded_domains{{{nvlink}}} 1"),
        format!("gpu_inventory_topology_largest_free_gpus{{{nvlink}}} 72"),
        format!("gpu_inventory_topology_domain_free_gpus{{{nvlink},domain=\"rack-1.1\"}} 72"),
        format!("gpu_inventory_topology_domain_free_gpus{{{nvlink},domain=\"rack-3.7\"}} 52"),
        format!("gpu_inventory_topology_domain_free_gpus{{{subblock},domain=\"subblock-1\"}} 72"),
        format!("gpu_inventory_topology_degraded_domains{{{subblock}}} 0"),
    ] {
        assert!(text.contains(&line), "{line} missing in:\n{text}");
    }
    // Rack 3 drops out of the largest, rack 2 comes in, the subblock level is gone, nothing is degraded.
    export_inventory(
        &m,
        &g,
        "cluster",
        &with_topology(&[("rack-1.1", 72), ("rack-2.1", 36)], 0, false),
    );
    let text = m.encode();
    assert!(
        !text.contains("rack-3.7"),
        "a domain out of the largest leaves:\n{text}"
    );
    assert!(
        !text.contains("gce-topology-subblock"),
        "a level gone leaves:\n{text}"
    );
    for line in [
        format!("gpu_inventory_topology_domain_free_gpus{{{nvlink},domain=\"rack-2.1\"}} 36"),
        format!("gpu_inventory_topology_degraded_domains{{{nvlink}}} 0"),
    ] {
        assert!(text.contains(&line), "{line} missing in:\n{text}");
    }
    let domain_series = text
        .lines()
        .filter(|l| l.starts_with("gpu_inventory_topology_domain_free_gpus{"))
        .count();
    assert_eq!(domain_series, 2, "{text}");
    retain_inventories(&m, &g, |_| false);
    assert!(
        !m.encode().contains("gpu_inventory_topology_domains{"),
        "an inventory gone takes its topology along"
    );
}

#[test]
fn quota_series_follow_the_report_and_leave_no_ghosts() {
    use crate::inventory::model::{
        FlavorQuota, QuotaIssue, QuotaIssueReason, QuotaReport, WorkloadIssue,
    };
    let g = InventoryGauges::default();
    let m = Metrics::with_families(|r| g.register(r));
    let mut with_quotas = Arc::unwrap_or_clone(status(&[("a", true, None)]));
    with_quotas.quotas = Some(QuotaReport {
        quotas: vec![FlavorQuota {
            flavor: "gb200".into(),
            resource: "nvidia.com/gpu".into(),
            nominal_quota: 600,
            healthy_gpus: 564,
            issues: vec![QuotaIssue {
                reason: QuotaIssueReason::QuotaExceedsCapacity,
                message: String::new(),
            }],
            ..FlavorQuota::default()
        }],
        workload_issues: vec![WorkloadIssue::default()],
    });
    export_inventory(&m, &g, "cluster", &Arc::new(with_quotas));
    let text = m.encode();
    let of = "inventory=\"cluster\",flavor=\"gb200\",resource=\"nvidia.com/gpu\"";
    for line in [
        format!("gpu_inventory_quota{{{of}}} 600"),
        format!("gpu_inventory_quota_healthy{{{of}}} 564"),
        format!("gpu_inventory_quota_issues{{{of},reason=\"QuotaExceedsCapacity\"}} 1"),
        "gpu_inventory_workloads_cannot_fit{inventory=\"cluster\"} 1".to_owned(),
    ] {
        assert!(text.contains(&line), "{line} not in:\n{text}");
    }
    export_inventory(&m, &g, "cluster", &status(&[("a", true, None)]));
    let text = m.encode();
    assert!(
        !text.contains("flavor=\"gb200\""),
        "gone with Kueue:\n{text}"
    );
    assert!(
        !text.contains("gpu_inventory_workloads_cannot_fit{"),
        "{text}"
    );
}

/// Exports that touch only the changed nodes end where an export from scratch does: a node kept (the same
/// entry), one changed (readiness, allocation), one gone and one come.
#[test]
fn an_export_after_a_change_equals_one_from_scratch() {
    let before = status(&[
        ("a", true, Some(1024)),
        ("b", true, None),
        ("c", false, None),
    ]);
    let mut after = Arc::unwrap_or_clone(before.clone());
    let b = Arc::make_mut(&mut after.nodes[1]);
    b.ready = false;
    b.issues = vec![Issue::new(IssueReason::NotReady, "")];
    b.allocated =
        crate::inventory::model::ResourceMap::from_iter([("nvidia.com/gpu".to_owned(), 1)]);
    after.nodes.remove(2);
    after
        .nodes
        .push(status(&[("d", true, None)]).nodes[0].clone());
    after.ready_gpu_nodes = 2;
    let after = Arc::new(after);
    assert!(Arc::ptr_eq(&before.nodes[0], &after.nodes[0]), "a is kept");

    let (g, fresh_g) = (InventoryGauges::default(), InventoryGauges::default());
    let m = Metrics::with_families(|r| g.register(r));
    let fresh = Metrics::with_families(|r| fresh_g.register(r));
    export_inventory(&m, &g, "cluster", &before);
    export_inventory(&m, &g, "cluster", &after);
    export_inventory(&fresh, &fresh_g, "cluster", &after);
    let lines = |text: String| {
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| l.contains("inventory=\"cluster\""))
            .map(str::to_owned)
            .collect();
        lines.sort();
        lines
    };
    let (incremental, scratch) = (lines(m.encode()), lines(fresh.encode()));
    assert!(
        incremental.iter().any(|l| l.contains("node=\"d\"")),
        "{incremental:#?}"
    );
    assert!(
        !incremental.iter().any(|l| l.contains("node=\"c\"")),
        "{incremental:#?}"
    );
    assert_eq!(incremental, scratch);
}

#[test]
fn fragmentation_series_follow_the_ladder_and_leave_no_ghosts() {
    use crate::inventory::model::{BlockedPod, Fragmentation, ProductFragmentation, SizeUse};
    let with = |asked: Option<u64>, blocked: u32| {
        let mut sizes = vec![SizeUse {
            gpus: 1,
            usable_gpus: 16,
            asked: false,
        }];
        sizes.extend(asked.map(|gpus| SizeUse {
            gpus,
            usable_gpus: 0,
            asked: true,
        }));
        Arc::new(Inventory {
            fragmentation: Fragmentation {
                products: vec![ProductFragmentation {
                    product: "NVIDIA-H100".into(),
                    free_gpus: 16,
                    largest_piece: 5,
                    pieces: 4,
                    sizes,
                    levels: Vec::new(),
                }],
                blocked_pods: blocked,
                blocked: vec![BlockedPod::default(); blocked as usize],
            },
            ..Default::default()
        })
    };
    let g = InventoryGauges::default();
    let m = Metrics::with_families(|r| g.register(r));
    export_inventory(&m, &g, "cluster", &with(Some(8), 2));
    let text = m.encode();
    let product = "inventory=\"cluster\",product=\"NVIDIA-H100\"";
    for line in [
        format!("gpu_inventory_fragmentation_largest_piece_gpus{{{product}}} 5"),
        format!("gpu_inventory_fragmentation_usable_gpus{{{product},gpus=\"1\"}} 16"),
        format!("gpu_inventory_fragmentation_usable_gpus{{{product},gpus=\"8\"}} 0"),
        "gpu_inventory_fragmented_pending_pods{inventory=\"cluster\"} 2".to_owned(),
    ] {
        assert!(text.contains(&line), "{line} missing in:\n{text}");
    }
    // The 8-GPU pods are gone: their size leaves the ladder and its series goes with it.
    export_inventory(&m, &g, "cluster", &with(None, 0));
    let text = m.encode();
    assert!(
        !text.contains("gpus=\"8\""),
        "a size no longer asked for leaves:\n{text}"
    );
    assert!(text.contains("gpu_inventory_fragmented_pending_pods{inventory=\"cluster\"} 0"));
    retain_inventories(&m, &g, |_| false);
    assert!(
        !m.encode().contains("gpu_inventory_fragmentation_"),
        "an inventory gone takes its series"
    );
}
