//! Fuzzing the dump reader: arbitrary bytes, and generated YAML and JSON shaped like dumps (Lists of Nodes and
//! Pods with fields of every type in every place, anchors and aliases, deep nesting), read under a small cap.
//! Each case asserts that reading ends without a panic and that what it returns is bounded by the cap.
//!
//! `PROPTEST_CASES` sets how many cases run (256 by default; the long run is
//! `PROPTEST_CASES=1000000 cargo test --lib sources::dump::fuzz`). Inputs worth keeping are in
//! `tests/fixtures/dump-corpus/`, replayed by [`the_corpus_reads_as_recorded`].

use proptest::prelude::*;

use super::budget::OBJECT_BYTES;
use super::{Dump, NodeDumpError, parse_dump_within};

/// The cap the fuzzed inputs are read under: small, so that bombs reach it.
const LIMIT: u64 = 256 * 1024;

/// Reads `bytes` and checks what any read must hold: no panic (proptest reports one), and a result
/// bounded by the cap.
fn read_bounded(bytes: &[u8]) -> Result<Dump, NodeDumpError> {
    let read = parse_dump_within(bytes, "fuzz", LIMIT);
    if let Ok(dump) = &read {
        let objects = dump.nodes.len()
            + dump.pods.len()
            + dump.slices.len()
            + dump.claims.len()
            + dump.classes.len()
            + dump.taint_rules.len()
            + dump.kueue.len();
        // Every object read was charged at least OBJECT_BYTES.
        assert!(
            (objects as u64) * (OBJECT_BYTES as u64) <= LIMIT,
            "{objects} objects from {} bytes",
            bytes.len()
        );
        // One warning per object or field taken out (at most 16 per object) and per item not read.
        assert!(dump.warnings.len() <= bytes.len() * 17 + 1);
        assert!(dump.skipped.len() <= dump.warnings.len());
    }
    read
}

/// A scalar as YAML writes one: plain, quoted, null, numbers small and huge, timestamps good and bad.
fn scalar() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9./-]{0,12}",
        Just("~".to_owned()),
        Just("null".to_owned()),
        Just("\"\"".to_owned()),
        Just("yesterday".to_owned()),
        Just("2024-01-01T00:00:00Z".to_owned()),
        Just("99999999999999999999999999".to_owned()),
        Just("1e400".to_owned()),
        Just("-0x8000000000000001".to_owned()),
        Just(".nan".to_owned()),
        "\"[^\"\\\\]{0,8}\"",
        "'[a-z ]{0,8}'",
        Just("true".to_owned()),
    ]
}

/// A value in flow style (which nests freely on one line): scalars, aliases, sequences and mappings.
fn flow_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![scalar(), Just("*a".to_owned()), Just("*b".to_owned())];
    leaf.prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec(("[a-z]{1,6}", inner.clone()), 0..6).prop_map(|v| {
                let entries: Vec<String> = v.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                format!("{{{}}}", entries.join(", "))
            }),
            inner.clone().prop_map(|v| format!("&a {v}")),
            inner.prop_map(|v| format!("&b [{v}, {v}]")),
        ]
    })
}

/// The fields of Nodes and Pods, each given any value: the reader must read or refuse each, never panic.
const FIELDS: &[&str] = &[
    "metadata: {name: gpu-1, creationTimestamp: ",
    "metadata: {name: gpu-1, labels: ",
    "metadata: {name: gpu-1, annotations: {a: ",
    "status: {capacity: {nvidia.com/gpu: ",
    "status: {conditions: [{type: Ready, status: ",
    "status: {images: ",
    "spec: {taints: [{key: k, effect: ",
    "spec: {unschedulable: ",
    "spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: ",
    "spec: {nodeName: ",
];

/// One List item: a Node or a Pod (or no kind) with one field of any value.
fn item() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(""), Just("kind: Node, "), Just("kind: Pod, ")],
        prop::sample::select(FIELDS),
        flow_value(),
    )
        .prop_map(|(kind, field, value)| {
            let closing: String = field
                .chars()
                .rev()
                .filter_map(|c| match c {
                    '{' => Some('}'),
                    '[' => Some(']'),
                    _ => None,
                })
                .collect();
            format!("- {{{kind}{field}{value}{closing}}}\n")
        })
}

proptest! {
    #![proptest_config(ProptestConfig { max_shrink_iters: 2048, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        let _ = read_bounded(&bytes);
    }

    #[test]
    fn arbitrary_text_is_read_or_refused(text in "\\PC{0,512}") {
        let _ = read_bounded(text.as_bytes());
    }

    #[test]
    fn generated_dumps_read_each_node_or_say_so(
        anchors in "(x: &a [a, b]\n)?(y: &b \\{c: d\\}\n)?",
        items in prop::collection::vec(item(), 0..12),
    ) {
        let text = format!("kind: List\n{anchors}items:\n{}", items.concat());
        if let Ok(dump) = read_bounded(text.as_bytes()) {
            // Fail closed: every item is read, or recorded as not read; none vanishes.
            let objects = dump.nodes.len() + dump.pods.len();
            let skipped = dump
                .skipped
                .iter()
                .filter(|s| s.skipped == super::Skipped::Object)
                .count();
            prop_assert_eq!(objects + skipped, items.len(), "{}", text);
        }
    }

    #[test]
    fn generated_values_as_json_are_read_or_refused(value in flow_value()) {
        // Flow YAML without aliases and anchors is near JSON; as a List item's field, either way.
        let json = format!("{{\"kind\": \"List\", \"items\": [{{\"metadata\": {value}}}]}}");
        let _ = read_bounded(json.as_bytes());
        let yaml = format!("kind: List\nitems:\n- metadata: {value}\n");
        let _ = read_bounded(yaml.as_bytes());
    }

    #[test]
    fn alias_chains_are_refused_or_bounded(depth in 1usize..12, copies in 1usize..12, width in 0usize..4096) {
        let mut text = format!("kind: List\na0: &a0 \"{}\"\n", "x".repeat(width));
        for level in 1..=depth {
            let aliases = vec![format!("*a{}", level - 1); copies].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{aliases}]\n"));
        }
        text.push_str("items: []\n");
        let _ = read_bounded(text.as_bytes());
    }
}

/// Each file of `tests/fixtures/dump-corpus/` is read as its name says: `ok-*` reads, `err-*` is refused;
/// either way without a panic.
#[test]
fn the_corpus_reads_as_recorded() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dump-corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the corpus directory")
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.file_name().is_some_and(|n| n != "README.md"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the corpus is there: {files:?}");
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let bytes = std::fs::read(&path).unwrap();
        let read = read_bounded(&bytes);
        if name.starts_with("ok-") {
            assert!(read.is_ok(), "{name}: {:?}", read.err());
        } else {
            assert!(name.starts_with("err-"), "{name}: named ok-* or err-*");
            assert!(read.is_err(), "{name} is refused");
        }
    }
}
