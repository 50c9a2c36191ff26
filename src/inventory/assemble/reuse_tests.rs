//! A scan of the caches' `Arc`s reuses an entry only when its node, its pods and the scope are the very same,
//! and the result is always a fresh scan's.

use std::sync::Arc;

use crate::inventory::allocation::GpuPod;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::memory::ScanMemory;
use crate::inventory::model::Inventory;
use crate::inventory::test_support::read;
use crate::inventory::{ScanInput, scan};
use crate::sources::dump::parse_dump;

/// The allocation fixture as the caches would hold it: three GPU nodes, their pods, one pod pending.
fn fleet() -> (Vec<Arc<ClusterNode>>, Vec<Arc<GpuPod>>) {
    let path = format!(
        "{}/tests/fixtures/allocation-dump.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let dump = parse_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
    let nodes = read(&dump.nodes).into_iter().map(Arc::new).collect();
    let pods = dump
        .pods
        .iter()
        .filter_map(GpuPod::from_pod)
        .map(Arc::new)
        .collect();
    (nodes, pods)
}

fn fresh(nodes: &[Arc<ClusterNode>], pods: &[Arc<GpuPod>]) -> Inventory {
    scan(ScanInput::nodes(nodes.iter().map(AsRef::as_ref)).pods(pods.iter().map(AsRef::as_ref)))
}

fn reusing(nodes: &[Arc<ClusterNode>], pods: &[Arc<GpuPod>], memory: &mut ScanMemory) -> Inventory {
    scan(ScanInput::shared(nodes, pods).memory(memory))
}

#[test]
fn the_same_objects_again_reuse_every_entry_with_the_same_result() {
    let (nodes, pods) = fleet();
    let mut memory = ScanMemory::default();
    let first = reusing(&nodes, &pods, &mut memory);
    assert_eq!(first.total_gpu_nodes, 3, "the fixture's GPU nodes");
    assert_eq!(memory.reused(), 0, "nothing to reuse on the first scan");
    assert_eq!(first, fresh(&nodes, &pods));

    let again = reusing(&nodes, &pods, &mut memory);
    assert_eq!(memory.reused(), 3, "every GPU node's entry is handed out");
    assert_eq!(again, first);
    assert!(
        first
            .nodes
            .iter()
            .zip(&again.nodes)
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );
}

#[test]
fn a_changed_node_pod_or_scope_scans_that_node_again() {
    let (mut nodes, mut pods) = fleet();
    let mut memory = ScanMemory::default();
    reusing(&nodes, &pods, &mut memory);

    // An equal pod in a new Arc is a new version as the cache would hand it out: its node is scanned again.
    let held = pods
        .iter()
        .position(|p| p.node.as_deref() == Some("h100-a"))
        .unwrap();
    pods[held] = Arc::new((*pods[held]).clone());
    let before = memory.reused();
    assert_eq!(reusing(&nodes, &pods, &mut memory), fresh(&nodes, &pods));
    assert_eq!(
        memory.reused() - before,
        2,
        "h100-a scanned again, the others reused"
    );

    // The pod leaves: h100-a's free GPUs change, and the result is a fresh scan's.
    let gone = pods.remove(held);
    let after = reusing(&nodes, &pods, &mut memory);
    assert_eq!(after, fresh(&nodes, &pods));
    let h100 = |inv: &Inventory| {
        inv.nodes
            .iter()
            .find(|n| n.name == "h100-a")
            .unwrap()
            .free
            .clone()
    };
    pods.push(gone);
    assert_ne!(
        h100(&after),
        h100(&fresh(&nodes, &pods)),
        "the pod held GPUs there"
    );

    // A cordoned node is a new node version.
    let cordoned = nodes.iter().position(|n| &*n.name == "a100-mig").unwrap();
    let mut changed = (*nodes[cordoned]).clone();
    changed.unschedulable = true;
    nodes[cordoned] = Arc::new(changed);
    assert_eq!(reusing(&nodes, &pods, &mut memory), fresh(&nodes, &pods));

    // A node that AMD's labeller labelled changes every node's scope (AMD's labeller runs): none is reused.
    let amd: k8s_openapi::api::core::v1::Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "amd-labelled", "labels": {"feature.node.kubernetes.io/amd-gpu": "true"}}
    }))
    .unwrap();
    nodes.push(Arc::new(read(&[amd]).remove(0)));
    let before = memory.reused();
    let with_amd = reusing(&nodes, &pods, &mut memory);
    assert_eq!(with_amd, fresh(&nodes, &pods));
    assert_eq!(
        memory.reused(),
        before,
        "a new scope scans every node again"
    );
}

#[test]
fn a_scan_without_the_caches_arcs_reuses_nothing() {
    let (nodes, pods) = fleet();
    let mut memory = ScanMemory::default();
    reusing(&nodes, &pods, &mut memory);
    let plain = scan(
        ScanInput::nodes(nodes.iter().map(AsRef::as_ref))
            .pods(pods.iter().map(AsRef::as_ref))
            .memory(&mut memory),
    );
    assert_eq!(plain, fresh(&nodes, &pods));
    assert_eq!(memory.reused(), 0, "no identity, no reuse");
}
