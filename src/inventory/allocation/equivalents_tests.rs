//! GPU-equivalents, rule by rule: each scheme's node and pods in, what each pod holds of a physical GPU and the
//! namespaces' sums out.

use super::*;
use crate::inventory::allocation::pod::PodShare;
use crate::inventory::model::{Inventory, Mig, Sharing};
use crate::inventory::test_support::{accounted, bound_pod as pod, gpu_node};

fn node(
    name: &str,
    product: &str,
    memory_mib: Option<u64>,
    allocatable: &[(&str, &str)],
) -> NodeInventory {
    gpu_node(name, 8, product, memory_mib, allocatable)
}

fn requests(pairs: &[(&str, u64)]) -> ResourceMap<u64> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect()
}

/// The namespaces' GPU-equivalents, as the API writes them.
fn by_namespace(inv: &Inventory) -> Vec<(String, Option<String>)> {
    inv.namespaces
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                n.gpu_equivalents_milli.map(Equivalent::decimal),
            )
        })
        .collect()
}

/// Each of the pod's requests that has an equivalent, in thousandths (the allocation asks [`of_request`] the
/// same, holding by holding).
fn milli(node: &NodeInventory, asked: &[(&str, u64)]) -> Vec<(String, u64)> {
    let requests = requests(asked);
    requests
        .iter()
        .filter_map(|(r, n)| Some((r.clone(), of_request(node, &requests, r, *n)?.milli)))
        .collect()
}

#[test]
fn whole_gpus_are_one_each() {
    let n = node(
        "a",
        "NVIDIA-H100-80GB-HBM3",
        Some(81559),
        &[("nvidia.com/gpu", "8")],
    );
    assert_eq!(
        milli(&n, &[("nvidia.com/gpu", 2)]),
        [("nvidia.com/gpu".to_owned(), 2000)]
    );
    let amd = node("m", "AMD Instinct MI300X", None, &[("amd.com/gpu", "8")]);
    assert_eq!(
        milli(&amd, &[("amd.com/gpu", 1)]),
        [("amd.com/gpu".to_owned(), 1000)]
    );
}

#[test]
fn a_mig_device_is_its_compute_slices_over_the_parent_s() {
    let a100 = node(
        "a",
        "NVIDIA-A100-SXM4-40GB",
        None,
        &[("nvidia.com/mig-3g.20gb", "2")],
    );
    // 3 of an A100's 7 compute slices: 0.429 each.
    assert_eq!(
        milli(&a100, &[("nvidia.com/mig-3g.20gb", 2)]),
        [("nvidia.com/mig-3g.20gb".to_owned(), 857)]
    );
    // An A30 has 4: a 2g.12gb is half of it.
    let a30 = node("b", "NVIDIA-A30", None, &[("nvidia.com/mig-2g.12gb", "2")]);
    assert_eq!(
        milli(&a30, &[("nvidia.com/mig-2g.12gb", 1)]),
        [("nvidia.com/mig-2g.12gb".to_owned(), 500)]
    );
    // Strategy single: every nvidia.com/gpu is a MIG device of the product's profile.
    let mut single = node(
        "c",
        "NVIDIA-A30-MIG-2g.12gb",
        None,
        &[("nvidia.com/gpu", "2")],
    );
    single.mig = Some(Mig {
        strategy: Some("single".into()),
        ..Default::default()
    });
    assert_eq!(
        milli(&single, &[("nvidia.com/gpu", 1)]),
        [("nvidia.com/gpu".to_owned(), 500)]
    );
}

#[test]
fn a_time_slicing_or_mps_replica_is_one_over_the_replicas() {
    let mut sliced = node(
        "a",
        "NVIDIA-GeForce-GTX-1660-Ti-SHARED",
        Some(6144),
        &[("nvidia.com/gpu", "6")],
    );
    sliced.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(6),
        renamed_resource: false,
    });
    assert_eq!(
        milli(&sliced, &[("nvidia.com/gpu", 3)]),
        [("nvidia.com/gpu".to_owned(), 500)]
    );
    let mut renamed = node("b", "NVIDIA-A10G", None, &[("nvidia.com/gpu.shared", "4")]);
    renamed.sharing = Some(Sharing {
        strategy: Some("mps".into()),
        replicas: Some(4),
        renamed_resource: true,
    });
    assert_eq!(
        milli(&renamed, &[("nvidia.com/gpu.shared", 1)]),
        [("nvidia.com/gpu.shared".to_owned(), 250)]
    );
}

#[test]
fn a_hami_share_is_its_memory_limit_else_its_cores_else_the_whole_device() {
    let mut hami = node(
        "a",
        "NVIDIA-A100-SXM4-40GB",
        Some(40960),
        &[("nvidia.com/gpu", "80")],
    );
    hami.sharing = Some(Sharing {
        strategy: Some("HAMi".into()),
        replicas: Some(10),
        renamed_resource: false,
    });
    // 10240 MiB of a 40960 MiB device, on each of 2 devices: a quarter of each.
    assert_eq!(
        milli(
            &hami,
            &[
                ("nvidia.com/gpu", 2),
                ("nvidia.com/gpumem", 10240),
                ("nvidia.com/gpucores", 30)
            ]
        ),
        [("nvidia.com/gpu".to_owned(), 500)]
    );
    assert_eq!(
        milli(&hami, &[("nvidia.com/gpu", 1), ("nvidia.com/gpucores", 30)]),
        [("nvidia.com/gpu".to_owned(), 300)]
    );
    assert_eq!(
        milli(
            &hami,
            &[("nvidia.com/gpu", 1), ("nvidia.com/gpumem-percentage", 25)]
        ),
        [("nvidia.com/gpu".to_owned(), 250)]
    );
    // No limit: HAMi gives the pod a whole device's memory.
    assert_eq!(
        milli(&hami, &[("nvidia.com/gpu", 1)]),
        [("nvidia.com/gpu".to_owned(), 1000)]
    );
    // A limit above the device is the device.
    assert_eq!(
        milli(
            &hami,
            &[("nvidia.com/gpu", 1), ("nvidia.com/gpumem", 99999)]
        ),
        [("nvidia.com/gpu".to_owned(), 1000)]
    );
}

#[test]
fn volcano_aliyun_and_vgpu_profiles_by_their_memory() {
    let volcano = node(
        "v",
        "NVIDIA-A10",
        Some(23028),
        &[("volcano.sh/vgpu-number", "40")],
    );
    assert_eq!(
        milli(
            &volcano,
            &[
                ("volcano.sh/vgpu-number", 1),
                ("volcano.sh/vgpu-memory", 5757)
            ]
        ),
        [("volcano.sh/vgpu-number".to_owned(), 250)]
    );
    let aliyun = node(
        "g",
        "NVIDIA-Tesla-V100",
        Some(32768),
        &[("aliyun.com/gpu-mem", "32")],
    );
    assert_eq!(
        milli(&aliyun, &[("aliyun.com/gpu-mem", 8)]),
        [("aliyun.com/gpu-mem".to_owned(), 250)]
    );
    let vgpu = node(
        "k",
        "NVIDIA-A10",
        None,
        &[("nvidia.com/NVIDIA_A10-4Q", "12")],
    );
    assert_eq!(
        milli(&vgpu, &[("nvidia.com/NVIDIA_A10-4Q", 3)]),
        [("nvidia.com/NVIDIA_A10-4Q".to_owned(), 500)]
    );
}

#[test]
fn memory_and_cores_beside_a_share_and_unknown_partitions_have_no_equivalent_of_their_own() {
    let n = node("a", "NVIDIA-A100", Some(40960), &[("nvidia.com/gpu", "8")]);
    assert!(milli(&n, &[("nvidia.com/gpumem", 1000)]).is_empty());
    let amd = node(
        "m",
        "AMD Instinct MI300X",
        None,
        &[("amd.com/cpx_nps4", "64")],
    );
    assert!(milli(&amd, &[("amd.com/cpx_nps4", 1)]).is_empty());
}

#[test]
fn namespaces_sum_their_pods_parts_as_decimals() {
    let a100 = node(
        "a",
        "NVIDIA-A100-SXM4-40GB",
        None,
        &[
            ("nvidia.com/mig-3g.20gb", "2"),
            ("nvidia.com/mig-1g.5gb", "1"),
        ],
    );
    let mut sliced = node(
        "t",
        "NVIDIA-T4-SHARED",
        Some(15360),
        &[("nvidia.com/gpu", "16")],
    );
    sliced.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: false,
    });
    let whole = node(
        "w",
        "NVIDIA-H100-80GB-HBM3",
        Some(81559),
        &[("nvidia.com/gpu", "8")],
    );
    let inv = accounted(
        vec![a100, sliced, whole],
        &[
            pod("team-a", "train", "w", &[("nvidia.com/gpu", 2)]),
            pod("team-a", "tune", "t", &[("nvidia.com/gpu", 2)]),
            pod("team-b", "mig", "a", &[("nvidia.com/mig-1g.5gb", 1)]),
            pod("team-b", "mig-big", "a", &[("nvidia.com/mig-3g.20gb", 1)]),
        ],
    );
    // team-a: 2 whole + 2 quarters = 2.5; team-b: 1/7 + 3/7 = 0.143 + 0.429.
    assert_eq!(
        by_namespace(&inv),
        [
            ("team-a".to_owned(), Some("2.5".to_owned())),
            ("team-b".to_owned(), Some("0.572".to_owned())),
        ]
    );
}

#[test]
fn kai_fractions_are_their_annotation_and_the_reservation_pod_holds_none() {
    // A T4 (15360 MiB, as KAI reads nvidia.com/gpu.memory), held by KAI's reservation pod for two fractions.
    let t4 = node(
        "t",
        "NVIDIA-Tesla-T4",
        Some(15360),
        &[("nvidia.com/gpu", "1")],
    );
    let mut half = pod("team-a", "half", "t", &[]);
    half.share = PodShare::from_annotations(Some("0.5"), None);
    let mut memory = pod("team-b", "lab12", "t", &[]);
    memory.share = PodShare::from_annotations(None, Some("4096"));
    let reservation = pod(
        "kai-resource-reservation",
        "gpu-reservation-t-x1",
        "t",
        &[("nvidia.com/gpu", 1)],
    );
    let inv = accounted(vec![t4], &[half, memory, reservation]);
    assert_eq!(
        by_namespace(&inv),
        [
            ("kai-resource-reservation".to_owned(), None),
            ("team-a".to_owned(), Some("0.5".to_owned())),
            ("team-b".to_owned(), Some("0.267".to_owned())),
        ]
    );
    // The device is held once, by the reservation pod.
    assert_eq!(inv.nodes[0].allocated.get("nvidia.com/gpu"), Some(&1));
    for bad in ["0", "-0.5", "1.5", "NaN", "half", ""] {
        assert_eq!(PodShare::from_annotations(Some(bad), None), None, "{bad}");
    }
    assert_eq!(PodShare::from_annotations(None, Some("0")), None);
}

#[test]
fn a_dra_claim_holds_a_whole_device_its_mig_slices_or_its_consumed_capacity_of_a_shared_one() {
    use crate::inventory::model::{ClaimRef, Device, DeviceKind, SharedCapacity};
    let claim = |ns: &str, name: &str| ClaimRef {
        namespace: ns.into(),
        name: name.into(),
    };
    let gib = |n: i128| n << 30;
    let mut h100 = node("d", "NVIDIA H100 80GB HBM3", Some(81559), &[]);
    h100.devices = vec![
        Device {
            name: "gpu-0".into(),
            resource: "gpu.nvidia.com/gpu".into(),
            kind: DeviceKind::Whole,
            claims: vec![claim("team-a", "train")],
            ..Default::default()
        },
        Device {
            name: "gpu-1-mig-3g".into(),
            resource: "gpu.nvidia.com/mig-3g.40gb".into(),
            kind: DeviceKind::Partition("3g.40gb".into()),
            claims: vec![claim("team-b", "mig")],
            ..Default::default()
        },
        // KEP-5075: two claims share a device, each by its consumed memory (16 and 40 GiB of 80).
        Device {
            name: "gpu-2".into(),
            resource: "gpu.nvidia.com/gpu".into(),
            kind: DeviceKind::Whole,
            claims: vec![claim("team-a", "small"), claim("team-b", "half")],
            shared: Some(SharedCapacity {
                consumed: [("memory".to_owned(), gib(56))].into(),
                total: [("memory".to_owned(), gib(80))].into(),
                by_claim: vec![
                    (
                        claim("team-a", "small"),
                        [("memory".to_owned(), gib(16))].into(),
                    ),
                    (
                        claim("team-b", "half"),
                        [("memory".to_owned(), gib(40))].into(),
                    ),
                ],
            }),
            ..Default::default()
        },
        // Shared, but no consumed capacity published: an equal part each.
        Device {
            name: "gpu-3".into(),
            resource: "gpu.nvidia.com/gpu".into(),
            kind: DeviceKind::Whole,
            claims: vec![claim("team-a", "x"), claim("team-b", "y")],
            shared: Some(SharedCapacity::default()),
            ..Default::default()
        },
    ];
    let inv = accounted(vec![h100], &[]);
    // team-a: 1 + 0.2 + 0.5; team-b: 3/7 + 0.5 + 0.5.
    assert_eq!(
        by_namespace(&inv),
        [
            ("team-a".to_owned(), Some("1.7".to_owned())),
            ("team-b".to_owned(), Some("1.429".to_owned())),
        ]
    );
}

#[test]
fn decimals_read_back_as_written() {
    for milli in [0, 1, 10, 250, 429, 1000, 2500, 123_456] {
        let text = Equivalent::decimal(milli);
        assert_eq!(Equivalent::parse_decimal(&text), Some(milli), "{text}");
    }
    assert_eq!(Equivalent::decimal(2500), "2.5");
    assert_eq!(Equivalent::decimal(429), "0.429");
    for bad in ["", "x", "1.2345", "-1", "1.-2", "1e3"] {
        assert_eq!(Equivalent::parse_decimal(bad), None, "{bad}");
    }
}
