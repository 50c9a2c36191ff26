//! The tables on real nodes and hand-made statuses.

use super::*;
use crate::inventory::test_support::read;

use crate::inventory::{ScanInput, scan};
use crate::publish::content::status::{NodeList, desired_status};
use crate::publish::content::wire::Detail;
use crate::sources::dump::parse_node_dump;

fn real_nodes_status() -> GpuInventoryStatus {
    let path = format!(
        "{}/tests/fixtures/real-nodes.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let nodes = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
    desired_status(
        &scan(ScanInput::nodes(&read(&nodes))),
        None,
        NodeList::All(Detail::Devices),
    )
}

#[test]
fn the_table_marks_cloud_products_and_explains_unlabeled() {
    let text = table(&real_nodes_status());
    assert!(text.contains("nvidia-tesla-k80*"), "{text}");
    assert!(
        text.contains("* product named by a cloud-provider label"),
        "{text}"
    );
    assert!(
        text.contains("<unlabeled> no source names the GPU model"),
        "{text}"
    );
    assert!(
        !text.contains("SOURCES") && !text.contains("notes:"),
        "{text}"
    );
}

#[test]
fn wide_shows_sources_layout_and_notes() {
    let text = wide(&real_nodes_status());
    let header = text.lines().nth(1).unwrap();
    assert!(
        header.contains("MIG/SHARING") && header.contains("SOURCES"),
        "{header}"
    );
    assert!(
        !header.contains("NVLINK") && !header.contains("NETWORK"),
        "no node has a place: no topology columns: {header}"
    );
    let k8s_node1 = text
        .lines()
        .find(|l| l.starts_with("k8s-device-plugin-issue-165-k8s-node1 "))
        .unwrap();
    assert!(k8s_node1.contains(" device-plugin "), "{k8s_node1}");
    assert!(
        text.contains("mig:16x1g.10gb+8x2g.20gb+8x3g.40gb"),
        "{text}"
    );
    assert!(
        text.contains("\nnotes:\n") && text.contains("read as 15360 MiB"),
        "{text}"
    );
}

#[test]
fn no_legend_when_nothing_needs_one() {
    let mut status = real_nodes_status();
    status.nodes.retain(|n| n.name.contains("xe9680"));
    let text = table(&status);
    assert!(
        !text.contains("<unlabeled>") && !text.contains('*'),
        "{text}"
    );
}

fn dump_status() -> GpuInventoryStatus {
    let path = format!(
        "{}/tests/fixtures/allocation-dump.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let dump = crate::sources::dump::parse_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
    let pods: Vec<_> = dump
        .pods
        .iter()
        .filter_map(crate::inventory::allocation::GpuPod::from_pod)
        .collect();
    let inventory = scan(ScanInput::nodes(&read(&dump.nodes)).pods(&pods));
    desired_status(&inventory, None, NodeList::All(Detail::Devices))
}

fn row<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    text.lines()
        .find(|l| l.starts_with(&format!("{first} ")))
        .unwrap_or_else(|| panic!("no row {first} in:\n{text}"))
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn the_node_table_shows_free_per_resource_without_leftover_zeros() {
    let text = table(&dump_status());
    assert!(text.starts_with("total_gpu_nodes: 3  ready_gpu_nodes: 3  total_gpus: 11  free_gpus: 2  pending_gpu_pods: 1\n"), "{text}");
    assert_eq!(row(&text, "h100-a")[4], "2", "{text}");
    assert_eq!(row(&text, "a100-mig")[4], "5 mig-1g.10gb", "{text}");
    assert_eq!(row(&text, "t4-shared")[4], "5 gpu.shared", "{text}");
    let wide = wide(&dump_status());
    // NAME READY VENDOR PRODUCT GPUS FREE MEMORY ALLOCATED (WORKLOAD is "-" and dropped by `row`).
    assert_eq!(row(&wide, "h100-a")[2], "nvidia", "{wide}");
    assert_eq!(row(&wide, "h100-a")[8], "6", "{wide}");
}

#[test]
fn group_by_product_and_namespace() {
    let status = dump_status();
    let products = render(&status, Table::Products, true);
    assert_eq!(
        row(&products, "NVIDIA-H100-80GB-HBM3"),
        ["NVIDIA-H100-80GB-HBM3", "1", "8", "2", "0", "6"]
    );
    assert_eq!(
        row(&products, "nvidia.com/mig-1g.10gb"),
        ["nvidia.com/mig-1g.10gb", "7", "2", "5"]
    );
    let namespaces = render(&status, Table::Namespaces, true);
    assert_eq!(
        row(&namespaces, "ml"),
        ["ml", "nvidia.com/gpu", "4", "16", "1", "4"]
    );
    assert_eq!(
        row(&namespaces, "research"),
        ["research", "nvidia.com/mig-1g.10gb", "2", "0", "0", "0.286"]
    );
    assert!(
        !namespaces.contains("default"),
        "CPU-only pods are not GPU demand: {namespaces}"
    );
}

#[test]
fn hostile_text_from_the_cluster_is_escaped_visibly() {
    let mut status = dump_status();
    let node = &mut status.nodes[0];
    node.product = Some("H100\x1b]0;owned\x07".into());
    node.issues.push(crate::crd::NodeIssue {
        reason: "NotReady".into(),
        message: "PLEG \x1b[2J\nERROR forged line".into(),
        severity: "Degraded".into(),
        since: None,
    });
    node.notes.push("note \u{202e}reversed".into());
    for text in [
        table(&status),
        wide(&status),
        render(&status, Table::Products, true),
    ] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(!text.contains('\u{202e}'), "{text:?}");
    }
    let text = wide(&status);
    assert!(text.contains("PLEG \\x1b[2J\\nERROR forged line"), "{text}");
    assert!(text.contains("H100\\x1b]0;owned\\x07"), "{text}");
    assert!(
        !text.lines().any(|l| l.starts_with("ERROR")),
        "a message cannot forge a line: {text}"
    );
}
