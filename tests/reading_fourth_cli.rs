//! `scan -f` over the fourth round's real objects (tests/fixtures/reading4/, #53): each object dumped alone, as
//! its owner would dump their node, and read as the expert reads it. No cluster needed.

mod common;

use common::fixture_nodes;
use common::offline_cli::scan_json;
use common::reading4::{GROUPS, assert_agree, disagreements, expected};
use serde_json::Value;

/// `scan -f -` of one object alone: its entry, if listed.
fn scan_alone(node: &Value) -> Option<Value> {
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [node]});
    scan_json(&list)["nodes"]
        .as_array()
        .and_then(|n| n.first())
        .cloned()
}

#[test]
fn every_fourth_round_object_dumped_alone_reads_as_the_expert_reads_it() {
    let mut failures = Vec::new();
    let mut rows = 0;
    for group in GROUPS {
        let nodes = fixture_nodes(&format!("reading4/{group}-nodes.yaml"));
        for want in expected(group) {
            rows += 1;
            let node = nodes
                .iter()
                .find(|n| n.metadata.name.as_deref() == Some(want.node.as_str()))
                .unwrap_or_else(|| panic!("{group}: no node {}", want.node));
            let node = serde_json::to_value(node).unwrap();
            let entry = scan_alone(&node);
            let labels = node["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            for wrong in disagreements(&want, entry.as_ref(), &labels, &[]) {
                failures.push((want.node.clone(), wrong));
            }
        }
    }
    assert!(rows >= 60, "{rows} rows");
    assert_agree(&failures, rows);
}
