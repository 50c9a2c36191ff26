//! The topology rules on the GB200 fleet fixture (tests/fixtures/topology/gb200-fleet.yaml: three NVL72
//! racks of 18 x 4 GPUs in two GKE blocks; one rack split in two partitions; NotReady, cordoned, clique-less,
//! busy and half-busy nodes), each expectation worked out by hand from the fixture's docstring.

use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{IssueReason, NVLINK};
use crate::inventory::test_support::read;
use crate::inventory::topology::{FitRequest, fit};
use crate::inventory::{Inventory, ScanInput, scan};
use crate::sources::dump::parse_dump;

const BLOCK: &str = "cloud.google.com/gce-topology-block";
const SUBBLOCK: &str = "cloud.google.com/gce-topology-subblock";
const RACK_1: &str = "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766";
const RACK_3: &str = "a2221497-dbce-4964-8826-684c3694fd45.2478";

pub(crate) fn fleet() -> Inventory {
    let path = format!(
        "{}/tests/fixtures/topology/gb200-fleet.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let dump = parse_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
    assert!(dump.warnings.is_empty(), "{:?}", dump.warnings);
    let pods: Vec<GpuPod> = dump.pods.iter().filter_map(GpuPod::from_pod).collect();
    scan(ScanInput::nodes(&read(&dump.nodes)).pods(&pods))
}

fn ask(
    inventory: &Inventory,
    gpus: u64,
    k: Option<u64>,
    level: Option<&str>,
) -> crate::inventory::topology::FitAnswer {
    let request = FitRequest {
        gpus,
        product: None,
        gpus_per_pod: k,
        level: level.map(str::to_owned),
        tolerations: Vec::new(),
    };
    fit(&inventory.nodes, &request).unwrap()
}

#[test]
fn every_node_has_its_partition_and_network_domains() {
    let inventory = fleet();
    let node = inventory
        .nodes
        .iter()
        .find(|n| n.name == "gb200-r1-n01")
        .unwrap();
    assert_eq!(node.topology.domain(NVLINK), Some(RACK_1));
    assert_eq!(node.topology.domain(BLOCK), Some("block-a"));
    assert_eq!(node.topology.domain(SUBBLOCK), Some("subblock-1"));
    let clique_less = inventory
        .nodes
        .iter()
        .find(|n| n.name == "gb200-r3-n03")
        .unwrap();
    assert_eq!(clique_less.topology.domain(NVLINK), None);
    assert_eq!(clique_less.topology.domain(SUBBLOCK), Some("subblock-3"));
}

#[test]
fn the_summary_counts_domains_and_what_they_offer_per_level() {
    let inventory = fleet();
    let at = |level: &str| {
        inventory
            .topology
            .iter()
            .find(|s| s.level == level && s.product == "NVIDIA-GB200")
            .unwrap_or_else(|| panic!("no summary at {level}"))
    };
    let nvlink = at(NVLINK);
    assert_eq!(nvlink.gpus_per_pod, 4);
    // Rack 1 (one partition), rack 2 (two), rack 3 (one, without its clique-less node).
    assert_eq!(nvlink.domains, 4);
    assert_eq!(nvlink.largest_free_gpus, 72);
    let fitting = |s: &crate::inventory::model::TopologySummary, g: u64| {
        s.domains_fitting
            .iter()
            .find(|f| f.at_least == g)
            .map(|f| f.domains)
    };
    // Partition sizes 72, 36, 36, 68; free 72, 20, 36, 52.
    assert_eq!(fitting(nvlink, 4), Some(4));
    assert_eq!(fitting(nvlink, 32), Some(3));
    assert_eq!(fitting(nvlink, 64), Some(1));
    assert_eq!(fitting(nvlink, 72), Some(1));
    assert_eq!(
        nvlink.domains_fitting.last().unwrap().at_least,
        72,
        "up to the largest domain"
    );
    let subblock = at(SUBBLOCK);
    assert_eq!(subblock.domains, 3);
    assert_eq!(
        (
            subblock.largest_domains[0].name.as_str(),
            subblock.largest_domains[0].free_gpus
        ),
        ("subblock-1", 72)
    );
    let block = at(BLOCK);
    assert_eq!(block.largest_free_gpus, 72 + 56);
    assert_eq!(fitting(block, 128), Some(1));
    // fit's order: nvlink, then the narrowest network level first.
    let levels: Vec<&str> = inventory.topology.iter().map(|s| &*s.level).collect();
    assert_eq!(levels[0], NVLINK);
    let pos = |l: &str| levels.iter().position(|x| *x == l).unwrap();
    assert!(pos(SUBBLOCK) < pos(BLOCK) && pos(BLOCK) < pos("topology.kubernetes.io/zone"));
}

#[test]
fn a_partition_with_members_at_fault_is_degraded_and_its_healthy_members_are_not() {
    let inventory = fleet();
    let nvlink = inventory
        .topology
        .iter()
        .find(|s| s.level == NVLINK)
        .unwrap();
    assert_eq!(nvlink.degraded_domains, 1);
    let problem = &nvlink.problems[0];
    assert_eq!(problem.domain, RACK_3);
    assert_eq!(problem.nodes, ["gb200-r3-n01", "gb200-r3-n02"]);
    assert_eq!(
        problem.message,
        "NVLink partition a2221497-dbce-4964-8826-684c3694fd45.2478 (rack a2221497-dbce-4964-8826-684c3694fd45): \
         15 of 17 nodes usable (gb200-r3-n01 NotReady, gb200-r3-n02 cordoned); a 68-GPU job cannot start here"
    );
    let healthy = inventory
        .nodes
        .iter()
        .find(|n| n.name == "gb200-r3-n06")
        .unwrap();
    assert!(healthy.issues.is_empty(), "{:?}", healthy.issues);
}

#[test]
fn the_node_without_the_clique_its_peers_carry_is_nvlink_clique_missing_and_only_it() {
    let inventory = fleet();
    let marked: Vec<&str> = inventory
        .nodes
        .iter()
        .filter(|n| n.issue(IssueReason::NvlinkCliqueMissing).is_some())
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(marked, ["gb200-r3-n03"]);
    let issue = inventory
        .nodes
        .iter()
        .find(|n| n.name == "gb200-r3-n03")
        .unwrap()
        .issue(IssueReason::NvlinkCliqueMissing)
        .unwrap();
    assert!(
        issue.message.contains("53 other NVIDIA-GB200 node(s)"),
        "{}",
        issue.message
    );
}

#[test]
fn fit_finds_the_narrowest_level_and_every_domain_there() {
    let inventory = fleet();
    let one_node = ask(&inventory, 4, None, None);
    assert!(one_node.fits);
    assert_eq!(one_node.level.as_deref(), Some("kubernetes.io/hostname"));
    let rack = ask(&inventory, 64, None, None);
    assert_eq!(
        (rack.fits, rack.level.as_deref(), rack.gpus_per_pod),
        (true, Some(NVLINK), 4)
    );
    assert_eq!(rack.domains.len(), 1);
    assert_eq!(
        (rack.domains[0].name.as_str(), rack.domains[0].free_gpus),
        (RACK_1, 72)
    );
    assert_eq!(rack.domains[0].nodes.len(), 18);
    // 80 GPUs: no partition or subblock offers them; block-a does (72 + 56).
    let block = ask(&inventory, 80, None, None);
    assert_eq!((block.fits, block.level.as_deref()), (true, Some(BLOCK)));
    assert_eq!(
        block
            .domains
            .iter()
            .map(|d| (d.name.as_str(), d.free_gpus))
            .collect::<Vec<_>>(),
        [("block-a", 128)]
    );
    // At a level asked for: every subblock offering 56, most first.
    let sub = ask(&inventory, 56, None, Some(SUBBLOCK));
    let names: Vec<(&str, u64)> = sub
        .domains
        .iter()
        .map(|d| (d.name.as_str(), d.free_gpus))
        .collect();
    assert_eq!(
        names,
        [("subblock-1", 72), ("subblock-2", 56), ("subblock-3", 56)]
    );
}

#[test]
fn pods_smaller_than_the_node_use_the_half_busy_nodes() {
    let inventory = fleet();
    // Partition 1 of rack 2: 5 free nodes (20 GPUs) and 4 half-busy ones (2 free each).
    let partition = "0b9e3d2c-6a71-4e8f-8c1d-2e3f4a5b6c02.1";
    let whole = ask(&inventory, 28, None, Some(NVLINK));
    assert!(whole.domains.iter().all(|d| d.name != partition));
    let pairs = ask(&inventory, 28, Some(2), Some(NVLINK));
    let found = pairs
        .domains
        .iter()
        .find(|d| d.name == partition)
        .expect("fits in pods of 2");
    assert_eq!(found.free_gpus, 28);
    assert_eq!(found.nodes.len(), 9);
}

#[test]
fn when_nothing_fits_why_says_what_stands_in_the_way() {
    let inventory = fleet();
    let too_big = ask(&inventory, 200, None, None);
    assert!(!too_big.fits);
    let why = too_big.why.unwrap();
    assert!(
        why.contains("only 184 NVIDIA-GB200 GPUs are free in pods of 4, 200 asked"),
        "{why}"
    );
    assert!(
        why.contains("2 node(s) NotReady or cordoned: gb200-r3-n01, gb200-r3-n02"),
        "{why}"
    );
    let scattered = ask(&inventory, 76, None, Some(NVLINK));
    let why = scattered.why.unwrap();
    assert!(
        why.contains("the largest nvlink domain has 72 GPUs in pods of 4, fewer than 76"),
        "{why}"
    );
    let spread = ask(&inventory, 64, None, Some(SUBBLOCK));
    assert!(spread.fits);
    let spread = ask(&inventory, 76, None, Some(SUBBLOCK));
    let why = spread.why.unwrap();
    assert!(why.contains("fewer than 76"), "{why}");
    let by_block = ask(&inventory, 130, None, Some(BLOCK));
    let why = by_block.why.unwrap();
    assert!(
        why.contains("free GPUs are scattered: 184 free in pods of 4 over 2"),
        "{why}"
    );
}

#[test]
fn a_bad_request_is_an_error_and_an_unknown_product_names_the_known_ones() {
    let inventory = fleet();
    let zero = FitRequest {
        gpus: 0,
        ..Default::default()
    };
    assert!(fit(&inventory.nodes, &zero).is_err());
    let unknown = FitRequest {
        gpus: 8,
        product: Some("NVIDIA-H100".into()),
        ..Default::default()
    };
    let error = fit(&inventory.nodes, &unknown).unwrap_err().to_string();
    assert!(error.contains("NVIDIA-GB200"), "{error}");
    let spelled = FitRequest {
        gpus: 8,
        product: Some("nvidia gb200".into()),
        ..Default::default()
    };
    assert!(fit(&inventory.nodes, &spelled).unwrap().fits);
}

#[test]
fn a_scan_with_a_memory_keeps_the_marked_entry_until_what_marked_it_changes() {
    use crate::inventory::memory::ScanMemory;
    use std::sync::Arc;
    let path = format!(
        "{}/tests/fixtures/topology/gb200-fleet.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut dump = parse_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
    let mut memory = ScanMemory::default();
    let marked = |inventory: &Inventory| {
        inventory
            .nodes
            .iter()
            .find(|n| n.name == "gb200-r3-n03")
            .unwrap()
            .clone()
    };
    let first = scan(ScanInput::nodes(&read(&dump.nodes)).memory(&mut memory));
    let again = scan(ScanInput::nodes(&read(&dump.nodes)).memory(&mut memory));
    assert!(
        marked(&first)
            .issue(IssueReason::NvlinkCliqueMissing)
            .is_some()
    );
    assert!(
        Arc::ptr_eq(&marked(&first), &marked(&again)),
        "nothing changed: the marked entry is the last scan's"
    );
    assert_eq!(
        again,
        scan(ScanInput::nodes(&read(&dump.nodes))),
        "the same result as without a memory"
    );

    // One labelled node of the product leaves: the count in the message changes, so the mark is made again.
    let gone = dump
        .nodes
        .iter()
        .position(|n| n.metadata.name.as_deref() == Some("gb200-r1-n01"))
        .unwrap();
    dump.nodes.remove(gone);
    let after = scan(ScanInput::nodes(&read(&dump.nodes)).memory(&mut memory));
    assert!(!Arc::ptr_eq(&marked(&again), &marked(&after)));
    let entry = marked(&after);
    let message = &entry
        .issue(IssueReason::NvlinkCliqueMissing)
        .unwrap()
        .message;
    assert!(
        message.contains("52 other NVIDIA-GB200 node(s)"),
        "{message}"
    );
    assert_eq!(after, scan(ScanInput::nodes(&read(&dump.nodes))));
}
