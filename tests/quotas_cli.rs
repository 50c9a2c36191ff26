//! `quotas` offline, on the GB200 fleet fixture (216 GPUs, 204 healthy) with Kueue's objects beside it
//! (tests/fixtures/kueue/quotas.yaml): the table, the JSON, the exit code, and the kubectl plugin's
//! `quotas`, which must print what `gpu-inventory-operator quotas` prints. No cluster needed.

mod common;

use std::path::{Path, PathBuf};

use common::offline_cli::{operator, plugin, row, text};

use serde_json::Value;

/// The fleet and the Kueue objects as one `List` dump, written once per test process.
fn dump() -> PathBuf {
    let fleet = std::fs::read_to_string(common::fixture_path("topology/gb200-fleet.yaml")).unwrap();
    let fleet: String = fleet
        .lines()
        .filter(|l| !l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    let mut list: Value = serde_json::from_str(&fleet).unwrap();
    let kueue = std::fs::read_to_string(common::fixture_path("kueue/quotas.yaml")).unwrap();
    let kueue: Value = serde_saphyr::from_str(&kueue).unwrap();
    let items = list["items"].as_array_mut().unwrap();
    items.extend(kueue["items"].as_array().unwrap().iter().cloned());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/test-logs/quotas-cli-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fleet-and-kueue.json");
    std::fs::write(&path, serde_json::to_vec(&list).unwrap()).unwrap();
    path
}

#[test]
fn quotas_shows_each_flavors_promise_beside_its_healthy_gpus_and_the_workload_that_cannot_fit() {
    let dump = dump();
    let out = operator(&["quotas", "-f", dump.to_str().unwrap()]);
    let table = text(&out);
    assert_eq!(out.status.code(), Some(1), "issues exit 1:\n{table}");
    // 144 + 72 promised; 204 of 216 healthy: r3-n01 NotReady, r3-n02 cordoned, r3-n03 without its clique.
    assert_eq!(
        row(&table, "gb200"),
        [
            "gb200",
            "nvidia.com/gpu",
            "216",
            "72",
            "204",
            "216",
            "188",
            "54",
            "production,research",
            "QuotaExceedsCapacity"
        ]
    );
    assert_eq!(row(&table, "gb200-old-pool")[9], "FlavorMatchesNoNodes");
    assert_eq!(
        row(&table, "team-a/job-pretrain-80-4f7a2")[1..],
        ["research", "WorkloadCannotFit"]
    );
    assert!(
        !table.contains("job-finetune-64"),
        "64 GPUs fit one subblock of 72:\n{table}"
    );
    for part in [
        "gb200-r3-n01 (NotReady), gb200-r3-n02 (cordoned), gb200-r3-n03 (NvlinkCliqueMissing)",
        "(subblock-1, flavor gb200) holds 72 in pods of 4",
    ] {
        assert!(table.contains(part), "{part:?} not in:\n{table}");
    }
}

#[test]
fn quotas_json_is_the_status_fields_and_the_plugin_prints_the_same() {
    let dump = dump();
    let path = dump.to_str().unwrap();
    let out = operator(&["quotas", "-f", path, "-o", "json"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["workloadIssueCount"], 1);
    assert_eq!(json["quotas"][0]["healthyGpus"], 204);
    assert_eq!(
        json["quotas"][0]["clusterQueues"],
        serde_json::json!(["production", "research"])
    );
    assert_eq!(json["workloadIssues"][0]["reason"], "WorkloadCannotFit");
    // -n: the namespace's Workloads listed; the flavors' quotas and the exit code stay the cluster's.
    let listed = |namespace: &str| {
        let out = operator(&["quotas", "-f", path, "-o", "json", "-n", namespace]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        serde_json::from_slice::<Value>(&out.stdout).expect("JSON")
    };
    let team_a = listed("team-a");
    assert_eq!(team_a["workloadIssueCount"], 1, "{team_a}");
    assert_eq!(team_a["quotas"], json["quotas"]);
    let team_b = listed("team-b");
    assert_eq!(team_b["workloadIssueCount"], 0, "{team_b}");
    assert_eq!(team_b["workloadIssues"], serde_json::json!([]), "{team_b}");
    assert_eq!(team_b["quotas"], json["quotas"]);
    let plugin = plugin("quotas-cli", &["quotas", "-f", path]);
    let table = operator(&["quotas", "-f", path]);
    assert_eq!(text(&plugin), text(&table));
    assert_eq!(plugin.status.code(), Some(1));
}

#[test]
fn quotas_without_kueue_says_there_is_nothing_to_check_and_a_bad_file_is_an_error() {
    let fleet = common::fixture_path("topology/gb200-fleet.yaml");
    let out = operator(&["quotas", "-f", &fleet]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out).contains("no Kueue quotas"), "{}", text(&out));
    let out = operator(&["quotas", "-f", "/nonexistent/dump.yaml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/dump.yaml"));
}
