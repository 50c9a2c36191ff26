//! The programs in `examples/` against the real API server: the crate used as a library by someone else.
//! `make test` builds them first (`cargo build --examples`); a missing one fails with what to run.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{TEST_LABEL, TestEnv, is_homelab, kubeconfig_path};

/// `target/<profile>/examples/<name>`, next to this test binary's `target/<profile>/deps/`.
fn example(name: &str) -> PathBuf {
    let test_binary = std::env::current_exe().expect("the test binary's path");
    let profile_dir = test_binary
        .parent()
        .and_then(|deps| deps.parent())
        .expect("test binaries live in target/<profile>/deps");
    let path = profile_dir.join("examples").join(name);
    assert!(
        path.exists(),
        "{} is not built: run `cargo build --examples` first (make test does)",
        path.display()
    );
    path
}

#[tokio::test]
async fn list_inventories_prints_the_home_lab() {
    let env = TestEnv::new("example-list").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let _operator = env.start_operator("2s");
    env.wait_inventory(
        &env.inventory_name(),
        Duration::from_secs(30),
        "the home-lab inventory",
        is_homelab,
    )
    .await;
    let out = Command::new(example("list_inventories"))
        .args(["-l", &format!("{TEST_LABEL}={}", env.id)])
        .env("KUBECONFIG", kubeconfig_path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        3,
        "one inventory, two products (sorted: `<` before letters):\n{stdout}"
    );
    assert!(
        lines[0].starts_with(&format!(
            "{}: 4 GPU nodes (0 Ready), 1 GPU; Degraded: ",
            env.id
        )),
        "{stdout}"
    );
    assert!(
        lines[2].contains("NVIDIA-GeForce-RTX-4070-Laptop-GPU-SHARED")
            && lines[2].contains("1 node ")
            && lines[2].ends_with("1 GPU"),
        "{stdout}"
    );
    assert!(
        lines[1].contains("<unlabeled>")
            && lines[1].contains("3 nodes")
            && lines[1].ends_with("0 GPUs"),
        "{stdout}"
    );
    env.cleanup().await;
}

#[test]
fn scan_dump_reads_a_dump_without_a_cluster() {
    let out = Command::new(example("scan_dump"))
        .arg(common::fixture_path("homelab-nodes.yaml"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("8 nodes read, 4 GPU nodes (0 Ready), 1 GPUs\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Ready=False (GpuNodesNotReady): 0 of 4 GPU nodes Ready"),
        "{stdout}"
    );
    let bad = Command::new(example("scan_dump"))
        .arg("/nonexistent.yaml")
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("reading /nonexistent.yaml"));
}
