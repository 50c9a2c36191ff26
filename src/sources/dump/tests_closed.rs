//! The dump reader fails closed and stays bounded: objects not read are recorded, fields the scan does not
//! read are taken out leniently, aliases are charged by bytes, and text errors have a line and column.

use super::*;

fn yaml(text: &str) -> Result<Dump, String> {
    parse_dump(text.as_bytes(), "t.yaml").map_err(|e| e.to_string())
}

#[test]
fn a_field_the_scan_does_not_read_is_taken_out_and_the_node_kept() {
    let dump = yaml(
        "kind: List\nitems:\n- kind: Node\n  metadata:\n    name: gpu-1\n    creationTimestamp: yesterday\n  \
         status:\n    capacity: {nvidia.com/gpu: \"8\"}\n",
    )
    .unwrap();
    assert_eq!(dump.nodes.len(), 1);
    let capacity = dump.nodes[0]
        .status
        .as_ref()
        .unwrap()
        .capacity
        .as_ref()
        .unwrap();
    assert_eq!(capacity["nvidia.com/gpu"].0, "8");
    assert!(dump.skipped.is_empty(), "{:?}", dump.skipped);
    assert_eq!(dump.warnings.len(), 1);
    assert!(
        dump.warnings[0].starts_with("t.yaml: items[0] (Node gpu-1): metadata.creationTimestamp: "),
        "{:?}",
        dump.warnings
    );
    assert!(
        dump.warnings[0].contains("the scan does not read it"),
        "{:?}",
        dump.warnings
    );
}

#[test]
fn a_null_capacity_keeps_the_node_and_is_recorded() {
    let dump = yaml(
        "kind: List\nitems:\n- kind: Node\n  metadata: {name: gpu-1}\n  status:\n    capacity: \
         {nvidia.com/gpu: ~, cpu: \"64\"}\n",
    )
    .unwrap();
    assert_eq!(dump.nodes.len(), 1, "the node is read");
    let capacity = dump.nodes[0]
        .status
        .as_ref()
        .unwrap()
        .capacity
        .as_ref()
        .unwrap();
    assert_eq!(capacity["cpu"].0, "64", "the rest of the capacity is read");
    assert_eq!(
        dump.skipped,
        vec![SkippedObject {
            kind: "Node".into(),
            name: "gpu-1".into(),
            item: Some(0),
            field: "status.capacity[\"nvidia.com/gpu\"]".into(),
            reason: dump.skipped[0].reason.clone(),
            skipped: Skipped::Field,
        }]
    );
    assert_eq!(
        dump.skipped[0].reason,
        "invalid type: null, expected Quantity (line 6, column 32)"
    );
}

#[test]
fn an_object_not_read_is_recorded_with_its_field() {
    let dump = yaml(
        "kind: List\nitems:\n- kind: Node\n  metadata: {name: good}\n- kind: Node\n  metadata: {name: \
         [bad]}\n- 7\n- apiVersion: resource.k8s.io/v9\n  kind: ResourceSlice\n  metadata: {name: s}\n",
    )
    .unwrap();
    assert_eq!(dump.nodes.len(), 1, "a node without its name is not read");
    let fields: Vec<(&str, &str, Option<usize>, Skipped)> = dump
        .skipped
        .iter()
        .map(|s| (s.kind.as_str(), s.field.as_str(), s.item, s.skipped))
        .collect();
    assert_eq!(
        fields,
        vec![
            ("Node", "metadata.name", Some(1), Skipped::Object),
            ("", "", Some(2), Skipped::Object),
            ("ResourceSlice", "apiVersion", Some(3), Skipped::Object),
        ]
    );
}

#[test]
fn an_alias_costs_the_bytes_it_copies() {
    // 4 KiB aliased 100 times is 400 KiB once read, from a file of 5 KiB.
    let text = format!(
        "kind: List\ns: &s \"{}\"\nitems:\n- metadata:\n    name: n\n    annotations: {{a: [{}]}}\n",
        "x".repeat(4096),
        vec!["*s"; 100].join(", ")
    );
    assert!(parse_dump_within(text.as_bytes(), "t", 1 << 20).is_ok());
    let error = parse_dump_within(text.as_bytes(), "t", 300 * 1024)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("expands to more than 307200 bytes"),
        "{error}"
    );
    assert!(error.contains("line 6"), "the alias past the cap: {error}");
}

#[test]
fn tiny_objects_cost_their_decoded_size() {
    let text = format!("kind: List\nitems:\n{}", "- {}\n".repeat(200));
    let error = parse_dump_within(text.as_bytes(), "t", 100 * 1024)
        .unwrap_err()
        .to_string();
    assert!(error.contains("each object at least 2048"), "{error}");
    assert_eq!(
        parse_dump_within(text.as_bytes(), "t", 1 << 20)
            .unwrap()
            .nodes
            .len(),
        200
    );
}

#[test]
fn text_errors_say_the_line_and_column() {
    let bytes = b"kind: List\nitems:\n- metadata: {name: caf\xe9}\n";
    let error = parse_dump(bytes, "t.yaml").unwrap_err().to_string();
    assert!(error.contains("line 3, column 23"), "{error}");
    let error = parse_dump(b"kind: List\n\0", "t.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("binary data (a NUL byte at line 2, column 1)"),
        "{error}"
    );
    let error = parse_dump_within(&[b' '; 2000], "t.yaml", 1024)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("more than 1024 bytes (--max-input-bytes)"),
        "{error}"
    );
}

#[test]
fn a_tree_deeper_than_the_limit_through_aliases_is_refused() {
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    let text = format!(
        "a: &a {deep}\nb: {}*a{}\n",
        "[".repeat(150),
        "]".repeat(150)
    );
    let error = yaml(&text).unwrap_err();
    assert!(error.contains("nested more than 300 levels"), "{error}");
}

#[test]
fn a_file_of_one_object_with_a_bad_field_is_read_without_it_and_says_so() {
    let dump = yaml(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels:\n    \"nvidia.com/gpu.count\": [8]\n",
    )
    .unwrap();
    assert_eq!(dump.nodes.len(), 1);
    assert_eq!(
        dump.warnings,
        [
            "t.yaml: Node n: metadata.labels[\"nvidia.com/gpu.count\"]: invalid type: sequence, expected a \
          string (line 6, column 29); field ignored (the scan reads it: the object is read without it)"
        ]
    );
    assert_eq!(dump.skipped.len(), 1);
    let error = yaml("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: 3}\n")
        .unwrap_err();
    assert_eq!(
        error,
        "t.yaml: Pod p: spec.containers: invalid type: `3`, expected a sequence (line 4, column 20)"
    );
}

#[test]
fn a_tree_costs_its_text_and_its_nodes_exactly() {
    // Two scalars of 4 and 0 bytes in a sequence: three nodes and four bytes of text.
    let text = "[abcd, '']";
    let exact = 3 * tree::NODE_BYTES + 4;
    assert!(tree::parse_yaml(text, &mut Budget::new(exact as u64)).is_ok());
    assert!(tree::parse_yaml(text, &mut Budget::new(exact as u64 - 1)).is_err());
    let mut budget = Budget::new(10);
    let error = tree::charge(&mut budget, 11, tree::At { line: 3, column: 7 }).unwrap_err();
    assert!(
        error.starts_with("line 3, column 7: the dump expands"),
        "{error}"
    );
}
