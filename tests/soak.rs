//! The chaos soak's short form: `hack/soak.sh` (the same program as `make soak`) for 60 s on 300 nodes, on a
//! cluster of its own (target/soak-test-cluster): one fault of each kind at least (its API server SIGKILLed,
//! its etcd paused, the leading operator killed; the schedule's first round always fits the window), and a
//! status budget small enough that the operators' `nodes[]` is cut, so the comparison with `scan
//! --status-nodes-budget` checks that both cut alike. Its name starts with `fault_apiserver` so that clusters
//! that cannot run a local control plane skip it as they skip the fault tests (`--skip fault_apiserver`);
//! `make test` (hack/integration-tests.sh) runs it among the other binaries, one test at a time: the API servers
//! it stops are its own.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// The environment the script's own `cargo build` keeps: without the variables `cargo test` sets for a test
/// (CARGO_*, LD_LIBRARY_PATH, ...), which would make that build recompile dependencies whose build scripts
/// watch them, and make the next `cargo test` recompile them back.
const KEPT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "TMPDIR",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "CARGO_HOME",
    "CARGO_TARGET_DIR",
    "CARGO_INCREMENTAL",
    "GPUINV_CACHE_DIR",
    "XDG_CACHE_HOME",
    "K8S_VERSION",
    "KUBEBUILDER_ASSETS",
];

/// The operators' and the scan's `--status-nodes-budget` in the short soak.
const STATUS_NODES_BUDGET: &str = "4Ki";

/// Runs the short soak with a fixed seed and returns its report.json (and the printed table, for messages).
fn short_soak(out: &Path) -> (Value, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A report left by an earlier run must not pass for this one's.
    let _ = std::fs::remove_dir_all(out);
    let kept = KEPT_ENV
        .iter()
        .filter_map(|k| Some((*k, std::env::var_os(k)?)));
    let output = Command::new(root.join("hack/soak.sh"))
        .env_clear()
        .envs(kept)
        .env("SOAK_PROFILE", "dev")
        .env("SOAK_SECS", "60")
        .env("SOAK_NODES", "300")
        .env("SOAK_NODE_IMAGES", "5")
        .env("SOAK_FAULT_EVERY_SECS", "20")
        .env("SOAK_CHURN_RATE", "4")
        .env("SOAK_RSS_EVERY_SECS", "5")
        // 5 of the 60 entries (30 GPU nodes, 30 DRA nodes) fit at seed 20261201: the status's cut happens.
        .env("SOAK_STATUS_NODES_BUDGET", STATUS_NODES_BUDGET)
        .env("SOAK_LEASE_SECS", "6")
        .env("SOAK_SEED", "20261201")
        .env("SOAK_OUT_DIR", out)
        .env(
            "LOCAL_CLUSTER_STATE_DIR",
            root.join("target/soak-test-cluster"),
        )
        .output()
        .expect("run hack/soak.sh");
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let report = std::fs::read(out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report.json ({e}); hack/soak.sh said:\n{printed}"));
    (
        serde_json::from_slice(&report).expect("report.json parses"),
        printed,
    )
}

#[test]
fn fault_apiserver_etcd_and_leader_soak_ends_equal_to_a_fresh_scan() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/soak-test");
    let (report, printed) = short_soak(&out);
    println!("{printed}");
    assert_eq!(
        report["finalEqualsScan"], true,
        "the outputs differ from a fresh scan: {}\n{printed}",
        report["firstDifference"]
    );
    assert_eq!(
        report["quietWrites"], 0,
        "writes in the quiet period: {}",
        report["quietWriteDetail"]
    );
    assert_eq!(
        report["panics"],
        Value::Array(vec![]),
        "panics: {}",
        report["panics"]
    );
    assert!(
        report["convergedAfterLastFaultSecs"]
            .as_f64()
            .is_some_and(|s| s < 120.0),
        "converged after the last fault: {}",
        report["convergedAfterLastFaultSecs"]
    );
    assert_eq!(report["statusNodesBudget"], STATUS_NODES_BUDGET);
    assert!(
        report["statusOmittedNodes"].as_u64().is_some_and(|n| n > 0),
        "the status's nodes[] was not cut: omittedNodes {}",
        report["statusOmittedNodes"]
    );
    let faults = report["faults"].as_array().expect("faults");
    for kind in ["apiServer", "etcd", "leader"] {
        assert!(
            faults.iter().any(|f| f["kind"] == kind),
            "no {kind} fault among {faults:?}"
        );
    }
    assert!(
        report["changes"]["total"]
            .as_u64()
            .is_some_and(|n| n >= 100),
        "too few changes: {}",
        report["changes"]
    );
    assert!(
        report["rssMiB"].as_array().is_some_and(|r| r.len() >= 10),
        "RSS samples: {}",
        report["rssMiB"]
    );
    assert_eq!(report["passed"], true, "{printed}");
}
