//! The DRA fixtures (tests/fixtures/dra/, shapes from NVIDIA's driver and claims the real scheduler wrote; see
//! SOURCES.md there) read the way a DRA-driver expert reads them.

use crate::inventory::test_support::read;
use std::collections::BTreeMap;

use super::{DEFAULT_DRIVER, DraClaim, DraClass, DraInput, DraSlice};
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{NodeInventory, Source};
use crate::inventory::{Inventory, ScanInput, scan};
use crate::sources::dump::{Dump, parse_dump};

fn dump(file: &str) -> Dump {
    let path = format!("{}/tests/fixtures/dra/{file}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    parse_dump(&bytes, &path).unwrap_or_else(|e| panic!("{e}"))
}

fn fixtures() -> Inventory {
    let drivers = vec![DEFAULT_DRIVER.to_owned()];
    let (nodes, slices, claims, classes) = (
        dump("nodes.yaml"),
        dump("slices.yaml"),
        dump("claims.yaml"),
        dump("device-classes.yaml"),
    );
    let slices: Vec<DraSlice> = slices
        .slices
        .iter()
        .filter_map(|s| DraSlice::from_slice(s, &drivers))
        .collect();
    let claims: Vec<DraClaim> = claims.claims.iter().map(DraClaim::from_claim).collect();
    let classes: Vec<DraClass> = classes.classes.iter().map(DraClass::from_class).collect();
    let input = DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        claims: claims.iter().collect(),
        classes: classes.iter().collect(),
        taint_rules: Vec::new(),
    };
    let pods: [&GpuPod; 0] = [];
    scan(ScanInput::nodes(&read(&nodes.nodes)).pods(pods).dra(input))
}

fn node<'a>(inv: &'a Inventory, name: &str) -> &'a NodeInventory {
    inv.nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
}

/// The whole GPUs' resource: NVIDIA's chart (v1) gives `gpu.nvidia.com` `extendedResourceName: nvidia.com/gpu`,
/// so DRA's whole GPUs are counted under the name pods ask for (KEP-5004).
const WHOLE: &str = "nvidia.com/gpu";

/// (resource, capacity, allocated, free) of the node's DRA resources.
fn dra(entry: &NodeInventory) -> BTreeMap<&str, (String, u64, u64)> {
    let served: std::collections::BTreeSet<&str> =
        entry.devices.iter().map(|d| d.resource.as_str()).collect();
    entry
        .capacity
        .iter()
        .filter(|(r, _)| served.contains(r.as_str()))
        .map(|(r, c)| {
            let capacity = c.text().to_owned();
            (
                r.as_str(),
                (
                    capacity,
                    entry.allocated[&r.to_owned()],
                    entry.free[&r.to_owned()],
                ),
            )
        })
        .collect()
}

#[test]
fn every_fixture_node_reads_as_an_expert_reads_it() {
    let inv = fixtures();
    assert_eq!(inv.total_gpu_nodes, 7, "pure DRA nodes are GPU nodes");
    for entry in &inv.nodes {
        assert!(entry.sources.contains(&Source::Dra), "{}", entry.name);
        let reasons: Vec<&str> = entry.issues.iter().map(|i| i.reason.as_str()).collect();
        let expected: &[&str] = if entry.name == "dra-node-e" {
            &["GpuDeviceTainted"]
        } else {
            &[]
        };
        assert_eq!(
            reasons, expected,
            "{}: no GpuLabelsMissing/GpusNotAllocatable on DRA nodes",
            entry.name
        );
    }
    // a: 8 whole GPUs, two held by the demo's claims; the adminAccess claim on gpu-0/gpu-1 takes nothing more.
    let a = node(&inv, "dra-node-a");
    assert_eq!(
        (a.count, a.product.as_deref(), a.memory_mib),
        (8, Some("NVIDIA A100-SXM4-80GB"), Some(81920))
    );
    assert_eq!(dra(a)[WHOLE], ("8".into(), 2, 6));
    // b: static MIG, the current release publishes MIG devices without their GPUs: 4 whole + 4 MIG'd GPUs;
    // the 4-device MIG claim holds one of each profile it asked for.
    let b = node(&inv, "dra-node-b");
    assert_eq!(b.count, 8);
    assert_eq!(dra(b)[WHOLE], ("4".into(), 0, 4));
    assert_eq!(dra(b)["gpu.nvidia.com/mig-1g.5gb"].1, 2);
    // c: v25.3 attributes (index, minor, pcieBusID) read the same; the GPU listed beside its own MIG devices
    // is one GPU, not three.
    let c = node(&inv, "dra-node-c");
    assert_eq!(c.count, 4);
    // e: the health monitor's NoSchedule taints make two GPUs unavailable; effect None does not.
    let e = node(&inv, "dra-node-e");
    assert_eq!(dra(e)[WHOLE], ("4".into(), 0, 2));
    assert_eq!(e.allocatable[&WHOLE.to_owned()], "2");
    assert!(
        e.issues[0]
            .message
            .contains("gpu-1 (gpu.nvidia.com/xid=79:NoSchedule)"),
        "{}",
        e.issues[0].message
    );
    assert!(
        e.issues[0]
            .message
            .contains("gpu-2 (gpu.nvidia.com/gpu-lost:NoSchedule)")
    );
    // f: DynamicMIG, one pool over two slices (counters in one, devices in the other): the GPU and its 14
    // possible partitions, one physical GPU.
    let f = node(&inv, "dra-node-f");
    assert_eq!(f.count, 1);
    assert_eq!(f.devices.len(), 15);
    // g: migrated from the device plugin (capacity 8, allocatable 0): counted once; the claim shared by two
    // pods holds one device, and the scheduler's claim for a pod asking nvidia.com/gpu holds another.
    let g = node(&inv, "dra-node-g");
    assert_eq!(g.count, 8);
    assert_eq!(g.sources, ["device-plugin", "dra"]);
    assert_eq!(dra(g)[WHOLE], ("8".into(), 2, 6));
    assert_eq!(
        g.dra_extended.get(WHOLE).map(String::as_str),
        Some("gpu.nvidia.com"),
        "DRA serves nvidia.com/gpu here, through NVIDIA's class"
    );
    // MIG devices keep the driver's names: the mig.nvidia.com class serves no extended resource.
    assert!(
        dra(b).contains_key("gpu.nvidia.com/mig-1g.5gb"),
        "{:?}",
        dra(b)
    );
    // One model across spellings and nodes.
    let products: BTreeMap<&str, (u32, u64)> = inv
        .products
        .iter()
        .map(|p| (p.name.as_str(), (p.nodes, p.gpus)))
        .collect();
    assert_eq!(products["NVIDIA H100 80GB HBM3"], (3, 13));
    assert_eq!(inv.total_gpus, 35);
}

#[test]
fn the_1_34_dynamic_mig_layout_reads_as_the_split_one() {
    let drivers = vec![DEFAULT_DRIVER.to_owned()];
    let combined = dump("slices-dynamic-mig-k8s-1.34.yaml");
    let slices: Vec<DraSlice> = combined
        .slices
        .iter()
        .filter_map(|s| DraSlice::from_slice(s, &drivers))
        .collect();
    let view = super::resolve(&DraInput {
        drivers: &drivers,
        slices: slices.iter().collect(),
        ..Default::default()
    });
    let f = view.nodes.values().next().expect("one node");
    assert_eq!(f.gpus, 1);
    assert_eq!(f.capacity[&"gpu.nvidia.com/gpu".to_owned()], 1);
    assert!(f.issues.is_empty(), "{:?}", f.issues);
}
