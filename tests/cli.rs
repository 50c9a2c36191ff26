//! The binary's command line: `scan` offline (exit codes, exact JSON, errors with line and column), `crd`,
//! and a clear one-line error without a kubeconfig. No cluster needed.

mod common;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use gpu_inventory_operator::crd::GpuInventoryStatus;

fn operator(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        child.stdin.take().unwrap().write_all(bytes).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn scan_table_shows_the_article_and_exits_1_on_issues() {
    let out = operator(
        &[
            "scan",
            "--from-file",
            &common::fixture_path("homelab-nodes.yaml"),
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "issues found: {}",
        text(&out.stderr)
    );
    let table = text(&out.stdout);
    assert!(
        table.starts_with("total_gpu_nodes: 4  ready_gpu_nodes: 0  total_gpus: 1"),
        "{table}"
    );
    assert!(table.contains("<unlabeled>"));
    assert!(table.contains("omen2: GpuLabelsMissing:"), "{table}");
}

#[test]
fn scan_exits_0_when_every_gpu_node_is_healthy() {
    let healthy = r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node",
        "metadata":{"name":"ok","labels":{"nvidia.com/gpu.product":"NVIDIA-L4","nvidia.com/gpu.count":"1"}},
        "status":{"capacity":{"nvidia.com/gpu":"1"},"allocatable":{"nvidia.com/gpu":"1"},
                  "conditions":[{"type":"Ready","status":"True"}]}}]}"#;
    let out = operator(&["scan", "-f", "-", "-o", "json"], Some(healthy.as_bytes()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn scan_json_is_exactly_the_status_object() {
    let out = operator(
        &[
            "scan",
            "-f",
            &common::fixture_path("gfd-nodes.yaml"),
            "-o",
            "json",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "conditions",
            "fragmentation",
            "freeByVendor",
            "freeGpus",
            "fullyHeldGpus",
            "nodes",
            "observedTime",
            "partlyFreeGpus",
            "pendingGpuPods",
            "problemNodeCount",
            "problemNodes",
            "products",
            "readyGpuNodes",
            "resources",
            "totalGpuNodes",
            "totalGpus",
            "wholeFreeGpus"
        ]
    );
    let status: GpuInventoryStatus = serde_json::from_value(value).unwrap();
    assert_eq!(
        (
            status.total_gpu_nodes,
            status.ready_gpu_nodes,
            status.total_gpus
        ),
        // 8 + 1 + the KubeVirt node's 4 passthrough GPUs (counted since issue #24).
        (4, 3, 13)
    );
    assert_eq!(status.free_by_vendor.as_deref(), Some("nvidia=12"));

    let yaml = operator(
        &[
            "scan",
            "-f",
            &common::fixture_path("gfd-nodes.yaml"),
            "-o",
            "yaml",
        ],
        None,
    );
    let from_yaml: GpuInventoryStatus = serde_saphyr::from_slice(&yaml.stdout).expect("YAML");
    assert_eq!(from_yaml.nodes, status.nodes);
}

#[test]
fn an_offline_dump_of_nodes_and_pods_is_accounted() {
    let dump = common::fixture_path("allocation-dump.yaml");
    let out = operator(&["scan", "-f", &dump, "-o", "json"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status: GpuInventoryStatus = serde_json::from_slice(&out.stdout).expect("JSON");
    // h100-a: train-0 holds 4; serve-0 holds max(init 2, app 1) = 2 (the naive sum is 3); eval-done finished.
    let h100 = status.nodes.iter().find(|n| n.name == "h100-a").unwrap();
    assert_eq!(h100.allocated["nvidia.com/gpu"], 6);
    assert_eq!(h100.free["nvidia.com/gpu"], 2);
    assert_eq!((status.free_gpus, status.pending_gpu_pods), (2, 1));
    let available = status
        .conditions
        .iter()
        .find(|c| c.type_ == "GpusAvailable")
        .unwrap();
    assert_eq!(
        (available.status.as_str(), available.message.as_str()),
        (
            "False",
            "1 GPU pod waiting, unschedulable: ml: 1 pod (16 nvidia.com/gpu); 2 whole GPUs free"
        )
    );
    let by_namespace = operator(&["scan", "-f", &dump, "--group-by", "namespace"], None);
    let table = text(&by_namespace.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["ml", "nvidia.com/gpu", "4", "16", "1", "4"]),
        "{table}"
    );
    // Any node label key is a level to group by (docs/topology.md); one that is no label key is a usage error.
    let bad = operator(&["scan", "-f", &dump, "--group-by", "bad key!"], None);
    assert_eq!(
        bad.status.code(),
        Some(2),
        "a bad --group-by is a usage error"
    );
    assert!(
        text(&bad.stderr).contains("node, product, namespace"),
        "{}",
        text(&bad.stderr)
    );
    let unknown = operator(&["scan", "-f", &dump, "--group-by", "pool"], None);
    assert!(
        text(&unknown.stdout).contains("no GPU node has a place at level pool"),
        "{}",
        text(&unknown.stdout)
    );
}

#[test]
fn bad_input_is_an_error_with_line_and_column_and_exit_2() {
    let cases: [(&[u8], &str); 4] = [
        (
            b"apiVersion: v1\nkind: List\nitems:\n  - metadata: {name: [unclosed\n",
            "line 4",
        ),
        (b"{\"kind\": \"List\", \"items\": [", "line 1"),
        (
            b"{\"kind\": \"ServiceList\", \"items\": []}",
            "found kind \"ServiceList\"",
        ),
        (&[0xff, 0xfe, 0x00, 0x41], "not UTF-8"),
    ];
    for (input, expected) in cases {
        let out = operator(&["scan", "-f", "-"], Some(input));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(expected),
            "expected {expected:?} in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn a_missing_kubeconfig_is_one_clear_line() {
    let out = operator(&["run", "--log-format", "json"], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        stderr.contains("/nonexistent-home/.kube/config") && stderr.contains("KUBECONFIG"),
        "{stderr}"
    );

    let out = operator(&["scan", "--kubeconfig", "/no/such/kubeconfig"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/no/such/kubeconfig"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn crd_prints_yaml_and_help_explains() {
    let out = operator(&["crd"], None);
    assert!(out.status.success());
    let crd = text(&out.stdout);
    assert!(
        crd.contains("name: gpuinventories.homelab.youngju.dev") && crd.contains("- gpuinv"),
        "{crd}"
    );
    let help = text(&operator(&["--help"], None).stdout);
    for word in [
        "run",
        "crd",
        "scan",
        "--kubeconfig",
        "--requeue",
        "GPUINV_REQUEUE",
    ] {
        assert!(help.contains(word), "--help mentions {word}:\n{help}");
    }
}

#[test]
fn an_offline_dump_of_dra_objects_lists_devices_and_their_claims() {
    let dump = common::fixture_path("dra/dump.yaml");
    let out = operator(&["scan", "-f", &dump, "-o", "json"], None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "dra-node-e has tainted GPUs: {}",
        text(&out.stderr)
    );
    let status: GpuInventoryStatus = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!((status.total_gpu_nodes, status.total_gpus), (7, 35));
    let a = status
        .nodes
        .iter()
        .find(|n| n.name == "dra-node-a")
        .unwrap();
    assert_eq!(a.devices.len(), 8);
    let held: Vec<&str> = a
        .devices
        .iter()
        .flat_map(|d| d.allocated_to.iter().map(String::as_str))
        .collect();
    assert_eq!(held.len(), 2, "adminAccess results hold nothing: {held:?}");
    assert!(held.iter().all(|c| c.starts_with("gpu-test1/")), "{held:?}");

    let wide = operator(&["scan", "-f", &dump, "-o", "wide"], None);
    let table = text(&wide.stdout);
    let row = |node: &str, device: &str| {
        table
            .lines()
            .find(|l| l.starts_with(node) && l.contains(&format!("{node}/{device} ")))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no device row {node}/{device}: {table}"))
    };
    assert!(table.contains("devices (DRA):"), "{table}");
    let tainted = row("dra-node-e", "gpu-1");
    assert_eq!(
        tainted.last(),
        Some(&"gpu.nvidia.com/xid=79:NoSchedule"),
        "{tainted:?}"
    );
    assert!(row("dra-node-e", "gpu-0").contains(&"free"));
    let shared = row("dra-node-g", "gpu-0");
    assert!(shared.contains(&"gpu-test3/single-gpu"), "{shared:?}");

    let off = operator(&["scan", "-f", &dump, "-o", "json", "--dra-driver="], None);
    let status: GpuInventoryStatus = serde_json::from_slice(&off.stdout).expect("JSON");
    assert_eq!(
        status.total_gpu_nodes, 1,
        "with DRA off only the migrated node's capacity shows a GPU node"
    );
}

/// Health others publish, offline: a condition named by `--health-condition` only, planned work (exit 0) and
/// a failed driver upgrade (exit 1), and a flag that is not a condition type refused by name.
#[test]
fn scan_reads_health_conditions_and_exits_on_degrading_issues_only() {
    let node = |name: &str, labels: &str, conditions: &str| {
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n    labels:\n      \
             nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n{labels}  status:\n    capacity:\n      \
             nvidia.com/gpu: '8'\n    allocatable:\n      nvidia.com/gpu: '8'\n    conditions:\n    \
             - type: Ready\n      status: 'True'\n{conditions}"
        )
    };
    let list = |items: &[String]| format!("apiVersion: v1\nkind: List\nitems:\n{}", items.concat());
    let upgrading = node(
        "upgrading",
        "      nvidia.com/gpu-driver-upgrade-state: drain-required\n",
        "",
    );
    let out = operator(
        &["scan", "-f", "-", "-o", "json"],
        Some(list(std::slice::from_ref(&upgrading)).as_bytes()),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "planned work fails no script: {}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains("\"DriverUpgradeInProgress\""));
    assert!(text(&out.stdout).contains("\"severity\": \"Info\""));

    let failed = node(
        "failed",
        "      nvidia.com/gpu-driver-upgrade-state: upgrade-failed\n",
        "",
    );
    let out = operator(
        &["scan", "-f", "-"],
        Some(list(&[upgrading.clone(), failed]).as_bytes()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("DriverUpgradeFailed"));

    let own = node(
        "fan",
        "",
        "    - type: AcmeGpuFanFailed\n      status: 'True'\n      message: fan 2 stopped\n",
    );
    let dump = list(&[own]);
    let out = operator(&["scan", "-f", "-"], Some(dump.as_bytes()));
    assert_eq!(
        out.status.code(),
        Some(0),
        "unknown condition types are never guessed at"
    );
    let out = operator(
        &["scan", "-f", "-", "--health-condition", "Acme*Failed"],
        Some(dump.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("fan 2 stopped"),
        "{}",
        text(&out.stdout)
    );

    let bad = operator(
        &["scan", "-f", "-", "--health-condition", "a b"],
        Some(dump.as_bytes()),
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--health-condition"),
        "{}",
        text(&bad.stderr)
    );
}
