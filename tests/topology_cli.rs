//! `fit` and `scan`'s topology offline, on the GB200 fleet fixture (tests/fixtures/topology/): exit codes,
//! the JSON contract, the table, a Kueue Topology read from a dump, `--topology-label`, and clear errors. No
//! cluster needed.

mod common;

use common::offline_cli::operator;
use serde_json::Value;

fn fleet() -> String {
    common::fixture_path("topology/gb200-fleet.yaml")
}

fn fit_json(extra: &[&str]) -> (Option<i32>, Value) {
    let fleet = fleet();
    let mut args = vec!["fit", "-f", fleet.as_str(), "-o", "json"];
    args.extend_from_slice(extra);
    let out = operator(&args);
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), json)
}

#[test]
fn a_job_that_fits_exits_0_with_every_domain_at_the_narrowest_level() {
    let (code, json) = fit_json(&["--gpus", "64"]);
    assert_eq!(code, Some(0));
    assert_eq!(json["fits"], true);
    assert_eq!(json["level"], "nvlink");
    assert_eq!(json["gpusPerPod"], 4);
    assert_eq!(json["product"], "NVIDIA-GB200");
    assert_eq!(json["domains"].as_array().unwrap().len(), 1);
    assert_eq!(
        json["domains"][0]["name"],
        "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766"
    );
    assert_eq!(json["domains"][0]["freeGpus"], 72);
    assert_eq!(json["domains"][0]["nodes"].as_array().unwrap().len(), 18);
    assert!(json["why"].is_null());
}

#[test]
fn a_job_that_does_not_fit_exits_1_and_says_why() {
    let (code, json) = fit_json(&["--gpus", "200"]);
    assert_eq!(code, Some(1));
    assert_eq!(json["fits"], false);
    assert_eq!(json["domains"], serde_json::json!([]));
    let why = json["why"].as_str().unwrap();
    assert!(
        why.contains("only 184 NVIDIA-GB200 GPUs are free in pods of 4, 200 asked"),
        "{why}"
    );
    let fleet = fleet();
    let table = operator(&["fit", "-f", &fleet, "--gpus", "200"]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("FITS    no"), "{text}");
    assert!(text.contains("WHY     only 184"), "{text}");
}

#[test]
fn gpus_per_pod_and_level_are_the_users_to_choose() {
    let (code, json) = fit_json(&["--gpus", "28", "--gpus-per-pod", "2", "--level", "nvlink"]);
    assert_eq!(code, Some(0));
    let names: Vec<&str> = json["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1"),
        "{names:?}"
    );
    // Any node label is a level when asked for, known to the table or not.
    let (code, json) = fit_json(&["--gpus", "8", "--level", "nvidia.com/gpu.machine"]);
    assert_eq!(
        (code, json["domains"][0]["name"].as_str()),
        (Some(0), Some("GB200-NVL72"))
    );
}

#[test]
fn bad_requests_exit_2_with_a_clear_error() {
    let fleet = fleet();
    for (args, says) in [
        (vec!["--gpus", "0"], "--gpus must be at least 1"),
        (
            vec!["--gpus", "8", "--gpus-per-pod", "0"],
            "--gpus-per-pod must be at least 1",
        ),
        (
            vec!["--gpus", "8", "--product", "NVIDIA-H100"],
            "the products are: NVIDIA-GB200",
        ),
        (vec!["--gpus", "8", "--level", " "], "--level: empty"),
    ] {
        let mut all = vec!["fit", "-f", fleet.as_str()];
        all.extend(args);
        let out = operator(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{all:?}: {stderr}");
    }
    let out = operator(&["fit", "-f", "/nonexistent/dump.yaml", "--gpus", "8"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn scan_shows_each_nodes_places_and_the_topology_summary() {
    let fleet = fleet();
    let out = operator(&["scan", "-f", &fleet, "-o", "json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let node = status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "gb200-r3-n03")
        .unwrap();
    assert_eq!(
        node["topology"]["cloud.google.com/gce-topology-subblock"],
        "subblock-3"
    );
    assert!(node["topology"].get("nvlink").is_none());
    let reasons: Vec<&str> = node["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["NvlinkCliqueMissing"]);
    let nvlink = status["topology"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["level"] == "nvlink")
        .unwrap();
    assert_eq!(nvlink["degradedDomains"], 1);
    assert_eq!(nvlink["problems"][0]["reason"], "NvlinkDomainDegraded");
    let degraded = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Degraded")
        .unwrap();
    assert!(
        degraded["message"]
            .as_str()
            .unwrap()
            .contains("NvlinkDomainDegraded: 1 domain"),
        "{degraded}"
    );
}

#[test]
fn a_kueue_topology_in_the_dump_and_topology_label_add_levels() {
    let dir = std::env::temp_dir().join(format!("gpuinv-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = std::fs::read_to_string(fleet()).unwrap();
    let body = fixture.lines().skip(1).collect::<Vec<_>>().join("\n");
    let mut list: Value = serde_json::from_str(&body).unwrap();
    let items = list["items"].as_array_mut().unwrap();
    items.push(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology",
        "metadata": {"name": "gb200"},
        "spec": {"levels": [
            {"nodeLabel": "nvidia.com/gpu.machine"},
            {"nodeLabel": "kubernetes.io/hostname"}
        ]}
    }));
    // Another group's kind `Topology` is none of the scan's.
    items.push(serde_json::json!({
        "apiVersion": "example.com/v1", "kind": "Topology",
        "metadata": {"name": "other"}, "spec": {"levels": [{"nodeLabel": "kubernetes.io/arch"}]}
    }));
    let path = dir.join("fleet-with-topology.json");
    std::fs::write(&path, serde_json::to_vec(&list).unwrap()).unwrap();
    let out = operator(&["scan", "-f", path.to_str().unwrap(), "-o", "json"]);
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let levels: Vec<&str> = status["topology"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["level"].as_str().unwrap())
        .collect();
    assert!(levels.contains(&"nvidia.com/gpu.machine"), "{levels:?}");
    assert!(!levels.contains(&"kubernetes.io/arch"), "{levels:?}");
    assert!(
        !levels.contains(&"kubernetes.io/hostname"),
        "one node is no domain: {levels:?}"
    );
    let fleet = fleet();
    let flagged = operator(&[
        "scan",
        "-f",
        &fleet,
        "-o",
        "json",
        "--topology-label",
        "node.kubernetes.io/instance-type",
    ]);
    let status: Value = serde_json::from_slice(&flagged.stdout).unwrap();
    assert!(
        status["topology"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["level"] == "node.kubernetes.io/instance-type"),
        "{}",
        status["topology"]
    );
    std::fs::remove_dir_all(&dir).ok();
}
