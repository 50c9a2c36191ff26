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
            "nodes",
            "observedTime",
            "readyGpuNodes",
            "totalGpuNodes",
            "totalGpus"
        ]
    );
    let status: GpuInventoryStatus = serde_json::from_value(value).unwrap();
    assert_eq!(
        (
            status.total_gpu_nodes,
            status.ready_gpu_nodes,
            status.total_gpus
        ),
        (4, 3, 9)
    );

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
fn bad_input_is_an_error_with_line_and_column_and_exit_2() {
    let cases: [(&[u8], &str); 4] = [
        (
            b"apiVersion: v1\nkind: List\nitems:\n  - metadata: {name: [unclosed\n",
            "line 4",
        ),
        (b"{\"kind\": \"List\", \"items\": [", "line 1"),
        (
            b"{\"kind\": \"PodList\", \"items\": []}",
            "found kind \"PodList\"",
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
