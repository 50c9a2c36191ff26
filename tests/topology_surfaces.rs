//! Topology where people look, offline on the GB200 fleet fixture (tests/fixtures/topology/): `scan
//! --group-by nvlink|<label>` (one row per domain, a label the built-in table does not know included), `scan
//! -o wide`'s NVLINK and NETWORK columns, and the kubectl plugin's `fit` (the same binary under the name
//! `kubectl-gpu_inventory`), which must answer as `gpu-inventory-operator fit` does. No cluster needed.

mod common;

use common::offline_cli::{operator, row, text};

/// The binary under the plugin's name.
fn plugin(args: &[&str]) -> std::process::Output {
    common::offline_cli::plugin("topology-surfaces", args)
}

fn fleet() -> String {
    common::fixture_path("topology/gb200-fleet.yaml")
}

#[test]
fn scan_group_by_nvlink_lists_every_partition_with_what_it_offers_and_its_problems() {
    let fleet = fleet();
    let out = operator(&["scan", "-f", &fleet, "--group-by", "nvlink"]);
    let text = text(&out);
    assert_eq!(out.status.code(), Some(1), "the fleet has issues:\n{text}");
    assert_eq!(
        row(&text, "DOMAIN"),
        ["DOMAIN", "PRODUCT", "NODES", "GPUS", "FREE", "PROBLEMS"]
    );
    assert_eq!(
        row(&text, "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766"),
        [
            "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766",
            "NVIDIA-GB200",
            "18",
            "72",
            "72",
            "-"
        ]
    );
    // The split rack's second partition, and rack 3 without its clique-less node.
    assert_eq!(
        row(&text, "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.2")[2..5],
        ["9", "36", "36"]
    );
    assert_eq!(
        row(&text, "a2221497-dbce-4964-8826-684c3694fd45.2478")[2..],
        [
            "17",
            "68",
            "52",
            "NvlinkDomainDegraded,NotReady,Unschedulable"
        ]
    );
    assert!(
        text.contains("in no domain at this level (NVIDIA-GB200): gb200-r3-n03"),
        "{text}"
    );
    // Its numbers are status.topology's: the largest domains agree.
    let json = operator(&["scan", "-f", &fleet, "-o", "json", "--group-by", "nvlink"]);
    let status: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let nvlink = status["topology"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["level"] == "nvlink")
        .unwrap();
    for largest in nvlink["largestDomains"].as_array().unwrap() {
        let cells = row(&text, largest["name"].as_str().unwrap());
        assert_eq!(cells[4], largest["freeGpus"].to_string(), "{largest}");
    }
}

#[test]
fn scan_group_by_a_label_reads_it_as_a_level_even_when_the_table_does_not_know_it() {
    let fleet = fleet();
    let out = operator(&[
        "scan",
        "-f",
        &fleet,
        "--group-by",
        "cloud.google.com/gce-topology-subblock",
    ]);
    let text = text(&out);
    assert_eq!(
        row(&text, "subblock-3")[2..],
        [
            "18",
            "72",
            "56",
            "NotReady,Unschedulable,NvlinkCliqueMissing"
        ]
    );
    // `kubernetes.io/arch` is no topology label: --group-by reads it as an extra level, as `fit --level`.
    let out = operator(&["scan", "-f", &fleet, "--group-by", "kubernetes.io/arch"]);
    let text = self::text(&out);
    assert_eq!(
        row(&text, "arm64")[1..5],
        ["NVIDIA-GB200", "54", "216", "184"]
    );
    // JSON prints the status whatever the grouping: no level is added to it.
    let json = operator(&[
        "scan",
        "-f",
        &fleet,
        "-o",
        "json",
        "--group-by",
        "kubernetes.io/arch",
    ]);
    let status: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let levels: Vec<&str> = status["topology"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["level"].as_str().unwrap())
        .collect();
    assert!(
        levels.contains(&"nvlink") && !levels.contains(&"kubernetes.io/arch"),
        "{levels:?}"
    );
    let out = operator(&["scan", "-f", &fleet, "--group-by", "example.com/rack"]);
    assert!(
        self::text(&out).contains("none carries the label example.com/rack"),
        "{}",
        self::text(&out)
    );
    let bad = operator(&["scan", "-f", &fleet, "--group-by", "rack=1"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("nvlink or a node label key"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    // The fixed groupings still work.
    let vendors = operator(&["scan", "-f", &fleet, "--group-by", "vendor"]);
    assert_eq!(
        row(&self::text(&vendors), "nvidia")[..3],
        ["nvidia", "54", "216"]
    );
}

#[test]
fn scan_wide_shows_each_nodes_partition_and_subblock() {
    let fleet = fleet();
    let out = operator(&["scan", "-f", &fleet, "-o", "wide"]);
    let text = text(&out);
    let header = row(&text, "NAME");
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let node = row(&text, "gb200-r1-n01");
    assert_eq!(node[at("NVLINK")], "7c7f4a1e….32766");
    assert_eq!(node[at("NETWORK")], "subblock-1");
    assert!(
        text.contains("NETWORK: the node's domain at cloud.google.com/gce-topology-subblock"),
        "{text}"
    );
}

#[test]
fn the_plugins_fit_answers_as_the_operators_fit() {
    let fleet = fleet();
    for args in [
        vec!["fit", "-f", &fleet, "--gpus", "64", "-o", "json"],
        vec!["fit", "-f", &fleet, "--gpus", "64"],
        vec!["fit", "-f", &fleet, "--gpus", "200", "-o", "json"],
        vec![
            "fit",
            "-f",
            &fleet,
            "--gpus",
            "8",
            "--gpus-per-pod",
            "2",
            "--level",
            "cloud.google.com/gce-topology-block",
            "--product",
            "nvidia gb200",
        ],
    ] {
        let ours = plugin(&args);
        let theirs = operator(&args);
        assert_eq!(ours.status.code(), theirs.status.code(), "{args:?}");
        assert!(!ours.stdout.is_empty(), "{args:?}");
        assert_eq!(text(&ours), text(&theirs), "{args:?}");
    }
    let fits = plugin(&["fit", "-f", &fleet, "--gpus", "64"]);
    assert_eq!(fits.status.code(), Some(0));
    assert!(text(&fits).contains("FITS    yes, in 1 domain(s) at level nvlink"));
    let too_big = plugin(&["fit", "-f", &fleet, "--gpus", "200"]);
    assert_eq!(too_big.status.code(), Some(1));
}

#[test]
fn the_plugins_table_flags_are_refused_with_fit_and_its_help_names_both() {
    let fleet = fleet();
    let out = plugin(&["-w", "fit", "-f", &fleet, "--gpus", "8"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-w/--watch belong(s) to the table"), "{err}");
    let help = text(&plugin(&["--help"]));
    assert!(
        help.contains("Usage: kubectl gpu-inventory [OPTIONS]"),
        "{help}"
    );
    assert!(help.contains("fit "), "{help}");
    assert!(help.contains("`nvlink` (the NVLink partition)"), "{help}");
    let fit_help = text(&plugin(&["fit", "--help"]));
    assert!(fit_help.contains("--gpus-per-pod <K>"), "{fit_help}");
}
