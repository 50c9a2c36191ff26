//! Other people's text on the real API server: a node whose Ready message carries a screen-clearing escape,
//! an OSC title sequence and a forged log line. `scan`'s table and the operator's text log show it escaped,
//! never obey it, and stay one line per record (kubectl's CVE-2021-25743 was this).

mod common;

use std::time::Duration;

use common::{OperatorProcess, TEST_LABEL, TestEnv, kubeconfig_path};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

const HOSTILE: &str =
    "PLEG is not healthy \u{1b}[2J\u{1b}]0;owned\u{7}\nERROR forged record \u{202e}desrever";
const SHOWN: &str =
    r"PLEG is not healthy \x1b[2J\x1b]0;owned\x07\nERROR forged record \u{202e}desrever";

fn no_raw_controls(text: &str) -> bool {
    !text
        .chars()
        .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}')
}

#[tokio::test]
async fn hostile_condition_text_is_escaped_in_scan_and_logs() {
    let env = TestEnv::new("hostile-text").await;
    // Created Ready without a kubelet (not handed to KWOK, so nobody rewrites its conditions before the node
    // lifecycle controller's grace period), then turned NotReady with the hostile message: the
    // GpuNodeNotReady event quotes it.
    let name = format!("{}-evil", env.id);
    let node: Node = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { TEST_LABEL: env.id, "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "1" } },
        "status": { "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady",
            "message": "kubelet is posting ready status" }] }
    }))
    .unwrap();
    let nodes: Api<Node> = Api::all(env.client.clone());
    nodes
        .create(&PostParams::default(), &node)
        .await
        .expect("create the node");

    let mut args = env.operator_args("30s");
    args.extend(["--log-format".into(), "text".into()]);
    let operator = OperatorProcess::start_with_env(
        &env.id,
        &args,
        &[("RUST_LOG", "info,gpu_inventory_operator=debug")],
    );
    env.wait_inventory(
        &env.inventory_name(),
        Duration::from_secs(30),
        "the node Ready",
        |s| s.nodes.iter().any(|n| n.name == name && n.ready),
    )
    .await;
    let now = jiff::Timestamp::now().to_string();
    let hostile = json!({ "status": { "conditions": [{ "type": "Ready", "status": "False",
        "reason": "KubeletNotReady", "message": HOSTILE, "lastHeartbeatTime": now,
        "lastTransitionTime": now }] } });
    nodes
        .patch_status(&name, &PatchParams::default(), &Patch::Strategic(hostile))
        .await
        .expect("patch the Ready condition");
    // The event about it carries the message into a debug log line.
    let log = common::eventually(
        Duration::from_secs(30),
        "the event note in the log",
        || async {
            let log = operator.log();
            log.contains(SHOWN).then_some(log)
        },
    )
    .await;
    assert!(
        no_raw_controls(&log),
        "raw control characters in the operator's log:\n{log:?}"
    );
    assert!(
        !log.lines().any(|l| l.starts_with("ERROR forged")),
        "a message forged a log record:\n{log}"
    );
    assert!(
        log.lines()
            .all(|l| l.trim().is_empty() || l.chars().next().is_some_and(|c| c.is_ascii_digit())),
        "every record starts with its timestamp:\n{log}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args([
            "scan",
            "-o",
            "wide",
            "-l",
            &format!("{TEST_LABEL}={}", env.id),
        ])
        .args(["--kubeconfig", &kubeconfig_path().display().to_string()])
        .output()
        .expect("scan runs");
    let table = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(
        table.contains(SHOWN),
        "the message is shown escaped:\n{table}"
    );
    assert!(
        no_raw_controls(&table),
        "raw control characters reached the terminal:\n{table:?}"
    );
    env.cleanup().await;
}
