use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::ResourceExt;

use k8s_openapi::api::resource::v1::ResourceSlice;

use super::*;

fn fixture(file: &str) -> Dump {
    let path = format!("{}/tests/fixtures/dumps/{file}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    parse_dump(&bytes, file).unwrap_or_else(|e| panic!("{e}"))
}

fn yaml(text: &str) -> Result<Dump, String> {
    parse_dump(text.as_bytes(), "t.yaml").map_err(|e| e.to_string())
}

#[test]
fn a_mixed_list_of_nodes_pods_and_others() {
    let text = br#"{"kind": "List", "items": [
        {"metadata": {"name": "old-style"}},
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}},
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "ns"}},
        {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"}}
    ]}"#;
    let dump = parse_dump(text, "t").unwrap();
    assert_eq!((dump.nodes.len(), dump.pods.len()), (2, 1));
    // Kinds the scan does not read are skipped without a word.
    assert_eq!(dump.warnings, Vec::<String>::new());
}

#[test]
fn device_taint_rules_of_any_served_version_are_read() {
    let text = br#"{"kind": "List", "items": [
        {"kind": "DeviceTaintRule", "apiVersion": "resource.k8s.io/v1alpha3", "metadata": {"name": "a"},
         "spec": {"deviceSelector": {"pool": "n"}, "taint": {"key": "k", "effect": "NoSchedule"}}},
        {"kind": "DeviceTaintRule", "apiVersion": "resource.k8s.io/v1", "metadata": {"name": "b"},
         "spec": {"taint": {"key": "k", "effect": "None"}}}
    ]}"#;
    let dump = parse_dump(text, "t").unwrap();
    let names: Vec<String> = dump.taint_rules.iter().map(|r| r.name_any()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(
        dump.taint_rules[0].data["spec"]["deviceSelector"]["pool"],
        "n"
    );
}

#[test]
fn a_device_taint_rule_of_a_version_not_read_is_skipped_with_a_warning() {
    let dump = yaml(
        "kind: List\nitems:\n- apiVersion: resource.k8s.io/v1beta1\n  kind: DeviceTaintRule\n  \
         metadata: {name: old}\n  spec: {taint: {key: k, effect: NoSchedule}}\n\
         - apiVersion: resource.k8s.io/v1\n  kind: DeviceTaintRule\n  metadata: {name: new}\n  \
         spec: {taint: {key: k, value: 08, effect: NoSchedule}}\n",
    )
    .unwrap();
    assert_eq!(dump.taint_rules.len(), 1);
    // The taint's value is a string position: `08` stays `08`.
    assert_eq!(dump.taint_rules[0].data["spec"]["taint"]["value"], "08");
    assert_eq!(
        dump.warnings,
        [
            "t.yaml: items[0] (DeviceTaintRule old): apiVersion \"resource.k8s.io/v1beta1\" is not one this \
             scan reads (resource.k8s.io/v1, v1beta2 or v1alpha3); skipped. Re-export it with a served \
             version: kubectl get devicetaintrules.v1.resource.k8s.io -o yaml (v1beta2 on Kubernetes 1.36, \
             v1alpha3 before)"
        ]
    );
}

#[test]
fn a_bad_json_item_is_named_and_skipped() {
    let text = br#"{"kind": "List", "items": [
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {"containers": 3}},
        {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "q"}, "spec": {"containers": []}}
    ]}"#;
    let dump = parse_dump(text, "dump.json").unwrap();
    assert_eq!(dump.pods.len(), 1);
    assert_eq!(dump.pods[0].name_any(), "q");
    assert_eq!(
        dump.warnings,
        [
            "dump.json: items[0] (Pod p): spec.containers: invalid type: integer `3`, expected a sequence; \
          skipped, the file's other objects are read"
        ]
    );
}

#[test]
fn dra_objects_of_older_versions_are_read_as_v1() {
    let dump = fixture("dra-versions.yaml");
    let slices: BTreeMap<String, &ResourceSlice> =
        dump.slices.iter().map(|s| (s.name_any(), s)).collect();
    assert_eq!(
        slices.keys().collect::<Vec<_>>(),
        [
            "node-a-gpu.nvidia.com-v1",
            "node-b-gpu.nvidia.com-v1beta1",
            "node-c-gpu.nvidia.com-v1beta2"
        ]
    );
    // v1beta1: the device's `basic:` fields are the v1 device's own.
    let device = &slices["node-b-gpu.nvidia.com-v1beta1"]
        .spec
        .devices
        .as_ref()
        .unwrap()[0];
    let attributes = device.attributes.as_ref().unwrap();
    assert_eq!(device.name, "gpu-0");
    assert_eq!(
        attributes["productName"].string.as_deref(),
        Some("NVIDIA A100-SXM4-40GB")
    );
    assert_eq!(
        attributes["driverVersion"].version.as_deref(),
        Some("550.54.15")
    );
    assert_eq!(attributes["index"].int, Some(0));
    assert_eq!(
        device.capacity.as_ref().unwrap()["memory"].value,
        Quantity("40Gi".to_owned())
    );
    assert_eq!(
        slices["node-b-gpu.nvidia.com-v1beta1"].spec.pool.generation,
        3
    );
    // v1beta2: v1's schema.
    let device = &slices["node-c-gpu.nvidia.com-v1beta2"]
        .spec
        .devices
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        device.capacity.as_ref().unwrap()["memory"].value,
        Quantity("48Gi".to_owned())
    );
    // v1beta1 claim: the request's own fields are v1's `exactly`; a firstAvailable request has none.
    let requests = dump.claims[0]
        .spec
        .as_ref()
        .unwrap()
        .devices
        .as_ref()
        .unwrap()
        .requests
        .as_ref()
        .unwrap();
    let exactly = requests[0].exactly.as_ref().unwrap();
    assert_eq!(
        (
            requests[0].name.as_str(),
            exactly.device_class_name.as_str()
        ),
        ("gpus", "gpu.nvidia.com")
    );
    assert_eq!(
        (exactly.allocation_mode.as_deref(), exactly.count),
        (Some("ExactCount"), Some(2))
    );
    assert!(requests[1].exactly.is_none());
    let first = &requests[1].first_available.as_ref().unwrap()[0];
    assert_eq!(
        (first.name.as_str(), first.device_class_name.as_str()),
        ("big", "gpu.nvidia.com")
    );
    let results = dump.claims[0]
        .status
        .as_ref()
        .and_then(|s| s.allocation.as_ref())
        .and_then(|a| a.devices.as_ref())
        .and_then(|d| d.results.as_ref())
        .unwrap();
    assert_eq!(
        (results[0].pool.as_str(), results[0].device.as_str()),
        ("node-b", "gpu-0")
    );
    assert_eq!(dump.classes[0].name_any(), "gpu.nvidia.com");
    assert_eq!(dump.nodes[0].name_any(), "node-a");
}

#[test]
fn an_api_version_not_read_is_skipped_with_one_warning_naming_it() {
    let dump = fixture("dra-versions.yaml");
    assert_eq!(
        dump.warnings,
        [
            "dra-versions.yaml: items[6] (ResourceSlice node-d-gpu.nvidia.com-future): apiVersion \
             \"resource.k8s.io/v9\" is not one this scan reads (resource.k8s.io/v1, v1beta2, v1beta1 or v1alpha3); \
             skipped. Re-export it with a served version: kubectl get resourceslices.v1.resource.k8s.io -o \
             yaml (v1beta1 before Kubernetes 1.34)"
        ]
    );
    // Everything else of the file is read.
    let counts = |d: &Dump| {
        (
            d.nodes.len(),
            d.slices.len(),
            d.claims.len(),
            d.classes.len(),
        )
    };
    assert_eq!(counts(&dump), (1, 3, 1, 1));

    // 1.31's v1alpha3 is read: v1beta1's `basic:`, and a capacity that is a bare quantity (#38 rule 6).
    let dump = yaml(
        "apiVersion: resource.k8s.io/v1alpha3\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  \
         driver: gpu.nvidia.com\n  nodeName: n\n  pool: {name: n, generation: 1, resourceSliceCount: 1}\n  \
         devices:\n  - name: gpu-0\n    basic:\n      attributes: {type: {string: mig}}\n      \
         capacity: {memory: 40Gi}\n",
    )
    .unwrap();
    assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
    let device = &dump.slices[0].spec.devices.as_ref().unwrap()[0];
    assert_eq!(
        device.capacity.as_ref().unwrap()["memory"].value,
        Quantity("40Gi".to_owned())
    );
    assert!(device.attributes.as_ref().unwrap().contains_key("type"));
}

#[test]
fn a_typed_list_s_version_applies_to_its_items() {
    // The API server's own list (as `kubectl get --raw` or a client library writes it): items carry no
    // apiVersion or kind of their own.
    let dump = yaml(
        "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceSliceList\nitems:\n- metadata: {name: s}\n  \
         spec:\n    driver: gpu.nvidia.com\n    pool: {name: p, generation: 1, resourceSliceCount: 1}\n    \
         devices:\n    - name: gpu-0\n      basic: {capacity: {memory: {value: 40Gi}}}\n",
    )
    .unwrap();
    let device = &dump.slices[0].spec.devices.as_ref().unwrap()[0];
    assert_eq!(
        device.capacity.as_ref().unwrap()["memory"].value,
        Quantity("40Gi".to_owned())
    );
}

#[test]
fn unquoted_label_values_are_read_as_written() {
    let dump = fixture("pyyaml-labels.yaml");
    assert_eq!(dump.warnings, Vec::<String>::new());
    let labels = dump.nodes[0].labels();
    for (key, value) in [
        ("nvidia.com/cuda.driver.rev", "08"),
        ("example.com/version", "1.10"),
        ("example.com/flag", "true"),
        ("example.com/answer", "yes"),
        ("example.com/hex", "0x1F"),
        ("nvidia.com/cuda.driver.major", "550"),
        ("nvidia.com/gpu.present", "true"),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }
    assert_eq!(dump.nodes[0].annotations()["example.com/build"], "1e3");
    let pod = &dump.pods[0];
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(
        spec.node_selector.as_ref().unwrap()["nvidia.com/cuda.driver.rev"],
        "08"
    );
    assert_eq!(spec.containers[0].image.as_deref(), Some("trainer:1.10"));
    // A quantity written as a bare number reads as its text.
    let limits = spec.containers[0]
        .resources
        .as_ref()
        .unwrap()
        .limits
        .as_ref();
    assert_eq!(limits.unwrap()["nvidia.com/gpu"], Quantity("8".to_owned()));
}

#[test]
fn a_bad_object_among_good_ones_is_named_and_the_others_are_read() {
    let dump = fixture("bad-objects.yaml");
    let names = |objects: Vec<String>| objects.join(",");
    assert_eq!(
        names(dump.nodes.iter().map(|n| n.name_any()).collect()),
        "gpu-a"
    );
    assert_eq!(
        names(dump.pods.iter().map(|p| p.name_any()).collect()),
        "fine"
    );
    assert_eq!(
        names(dump.slices.iter().map(|s| s.name_any()).collect()),
        "good-slice"
    );
    assert_eq!(
        dump.warnings,
        [
            "bad-objects.yaml: items[1] (Pod ml/broken): spec.containers: invalid type: `3`, expected a \
             sequence (line 21, column 17); skipped, the file's other objects are read",
            "bad-objects.yaml: items[3] (ResourceSlice bad-slice): spec.pool.generation: invalid type: \
             string \"1\", expected i64 (line 39, column 19); skipped, the file's other objects are read",
        ]
    );
}

#[test]
fn untyped_positions_keep_numbers_that_would_not_print_back() {
    let tree = tree::parse_yaml(
        "{a: 08, b: 1.10, c: 8, d: 0.5, e: true, f: yes, g: ~, h: 1e3, i: -3, j: +5, k: .5, l: '8', \
         m: 0x1F, n: 12345678901234567890123}",
        &mut budget::Budget::new(DEFAULT_MAX_INPUT_BYTES),
    )
    .unwrap()
    .unwrap();
    let value: serde_json::Value = decode::decode(&tree).unwrap();
    assert_eq!(
        value,
        serde_json::json!({"a": "08", "b": "1.10", "c": 8, "d": 0.5, "e": true, "f": "yes", "g": null,
            "h": "1e3", "i": -3, "j": "+5", "k": ".5", "l": "8", "m": "0x1F",
            "n": "12345678901234567890123"})
    );
}

#[test]
fn number_and_boolean_positions_read_yaml_1_2() {
    let dump = yaml(
        "kind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: d\n  allNodes: True\n  \
         pool: {name: p, generation: 0x10, resourceSliceCount: +2}\n",
    )
    .unwrap();
    let spec = &dump.slices[0].spec;
    assert_eq!(
        (
            spec.all_nodes,
            spec.pool.generation,
            spec.pool.resource_slice_count
        ),
        (Some(true), 16, 2)
    );
    let error =
        yaml("kind: ResourceSlice\nmetadata: {name: s}\nspec: {allNodes: yes}\n").unwrap_err();
    assert!(
        error.contains("spec.allNodes: invalid type: `yes`, expected a boolean"),
        "{error}"
    );
}

#[test]
fn aliases_are_copied_and_an_alias_bomb_is_an_error() {
    // PyYAML writes a repeated Python object once, with an anchor, then aliases it.
    let dump = yaml(
        "kind: List\nitems:\n- kind: Node\n  metadata:\n    name: a\n    labels: &id001\n      \
         nvidia.com/gpu.product: H100\n- kind: Node\n  metadata:\n    name: b\n    labels: *id001\n",
    )
    .unwrap();
    assert_eq!(dump.nodes[1].labels()["nvidia.com/gpu.product"], "H100");

    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (level, previous) in ["b", "c", "d", "e", "f", "g"]
        .iter()
        .zip(["a", "b", "c", "d", "e", "f"])
    {
        bomb.push_str(&format!(
            "{level}: &{level} [{}]\n",
            vec![format!("*{previous}"); 10].join(", ")
        ));
    }
    let error = yaml(&bomb).unwrap_err();
    assert!(error.contains("expands to more than"), "{error}");
}

#[test]
fn what_is_not_one_dump_is_an_error() {
    let second = yaml("kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: b}\n")
        .unwrap_err();
    assert!(
        second.contains("line 3: a second YAML document"),
        "{second}"
    );
    let items = yaml("kind: List\nitems: 5\n").unwrap_err();
    assert_eq!(
        items,
        "t.yaml: `items` is not a sequence (line 2, column 8)"
    );
    let scalar = yaml("just text\n").unwrap_err();
    assert!(
        scalar.ends_with("found a scalar, not an object"),
        "{scalar}"
    );
    let empty = yaml("# nothing\n").unwrap_err();
    assert!(empty.ends_with("found an empty document"), "{empty}");
}
