//! Kueue absent, then installed while the operator runs (docs/quotas.md): without Kueue's CRDs the operator
//! says so in one info line and publishes no quotas; once they are installed it starts watching them without
//! a restart (discovery is asked again every 30 s) and publishes the quotas of the objects made then.
//!
//! In a binary of its own: it deletes Kueue's CRDs from the shared cluster (every Kueue object with them),
//! which no other test may see happen: `make test` (hack/integration-tests.sh) runs it alone, after every other
//! binary (`ALONE_BINARIES`); the referee and quota binaries
//! install the CRDs again when they start (`common::kueue::install_crds`). Kueue's controller is not run:
//! the operator reads Kueue's objects, whoever admits them.

mod common;

use std::time::Duration;

use common::kueue::quota_objects::{GPU, QuotaObjects};
use common::kueue::{GROUP, crd_dir, install_crds, kubectl};
use common::{TEST_LABEL, TestEnv, eventually};
use serde_json::json;

/// Discovery's refresh (30 s), a scan, and a loaded machine.
const API_APPEARS: Duration = Duration::from_secs(75);
const CONVERGE: Duration = Duration::from_secs(30);

/// Deletes Kueue's CRDs (and so every Kueue object) and waits until discovery no longer lists them. Objects
/// left by a stopped Kueue keep finalizers no one would lift: they are cleared first.
fn uninstall_kueue() {
    let listed = kubectl(&["api-resources", "--api-group", GROUP, "-o", "name"]);
    for resource in listed.lines().filter(|l| !l.is_empty()) {
        let objects = kubectl(&[
            "get",
            resource,
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{\"\\n\"}{end}",
        ]);
        for object in objects.lines().filter(|l| !l.is_empty()) {
            let (namespace, name) = object.split_once('/').unwrap_or(("", object));
            let mut args = vec![
                "patch",
                resource,
                name,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ];
            if !namespace.is_empty() {
                args.extend(["-n", namespace]);
            }
            kubectl(&args);
        }
    }
    let dir = crd_dir();
    kubectl(&[
        "delete",
        "--ignore-not-found",
        "--wait=true",
        "-f",
        dir.to_str().unwrap(),
    ]);
    let started = std::time::Instant::now();
    while !kubectl(&["api-resources", "--api-group", GROUP, "-o", "name"])
        .trim()
        .is_empty()
    {
        assert!(
            started.elapsed() < CONVERGE,
            "discovery still lists Kueue's kinds after the CRDs' deletion"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[tokio::test]
async fn without_kueue_one_info_line_and_no_quotas_and_once_installed_its_quotas_without_a_restart()
{
    let env = TestEnv::new("quota-crds").await;
    uninstall_kueue();
    env.load_fixture_only(
        "topology/gb200-fleet.yaml",
        &["gb200-r1-n01", "gb200-r1-n02"],
    )
    .await;
    let operator = env.start_operator("2s");
    let inv = env.inventory_name();
    let status = env
        .wait_inventory(&inv, CONVERGE, "the inventory of 2 GB200 nodes", |s| {
            s.total_gpus == 8
        })
        .await
        .status
        .unwrap();
    assert!(
        status.quotas.is_empty() && status.workload_issues.is_empty(),
        "{status:?}"
    );
    let said = eventually(CONVERGE, "the operator saying Kueue is absent", || async {
        let log = operator.log();
        let lines: Vec<String> = log
            .lines()
            .filter(|l| l.contains("Kueue") && l.contains("unavailable"))
            .map(str::to_owned)
            .collect();
        (!lines.is_empty()).then_some(lines)
    })
    .await;
    assert_eq!(
        said.len(),
        1,
        "one info line for Kueue's absence: {said:#?}"
    );
    assert!(
        said[0].contains("Kueue's quotas are not checked"),
        "{}",
        said[0]
    );

    // Kueue installed: its objects made through its API (its controller need not run for the operator).
    install_crds();
    let kueue = QuotaObjects::new(&env);
    let flavor = kueue
        .create(
            "ResourceFlavor",
            "gb200",
            json!({ "nodeLabels": { TEST_LABEL: env.id } }),
        )
        .await;
    kueue
        .create(
            "ClusterQueue",
            "research",
            json!({ "namespaceSelector": {}, "resourceGroups": [{ "coveredResources": [GPU],
                "flavors": [{ "name": flavor, "resources": [{ "name": GPU, "nominalQuota": 12 }] }] }] }),
        )
        .await;
    let status = env
        .wait_inventory(
            &inv,
            API_APPEARS,
            "the quotas, once Kueue's CRDs are served",
            |s| !s.quotas.is_empty(),
        )
        .await
        .status
        .unwrap();
    let entry = &status.quotas[0];
    assert_eq!(
        (
            entry.flavor.as_str(),
            entry.nominal_quota,
            entry.healthy_gpus
        ),
        (flavor.as_str(), 12, 8)
    );
    assert_eq!(entry.issues[0].reason, "QuotaExceedsCapacity");
    assert!(
        operator.log().contains("served: watching them"),
        "the watches started"
    );
}
