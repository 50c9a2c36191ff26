//! Whole free, partly free, fully held: each scheme's node and pods in, the node's physical GPUs out.

use super::*;
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{Mig, MigProfile, Sharing};
use crate::inventory::test_support::{accounted, bound_pod, gpu_node, hami_node};
use crate::inventory::vendors::sharing_layer::PodDevice;

fn node(count: u64, allocatable: &[(&str, &str)]) -> NodeInventory {
    gpu_node(
        "n",
        count,
        "NVIDIA-A100-SXM4-80GB",
        Some(81920),
        allocatable,
    )
}

fn pod(ns: &str, name: &str, requests: &[(&str, u64)]) -> GpuPod {
    bound_pod(ns, name, "n", requests)
}

/// The node as the inventory reads it with `pods` on it.
fn placed(node: NodeInventory, pods: &[GpuPod]) -> NodeInventory {
    (*accounted(vec![node], pods).nodes[0]).clone()
}

fn occupancy(whole_free: u64, partly_free: u64, fully_held: u64) -> Occupancy {
    Occupancy {
        whole_free,
        partly_free,
        fully_held,
    }
}

#[test]
fn whole_gpus_are_free_or_held() {
    let n = placed(
        node(8, &[("nvidia.com/gpu", "8")]),
        &[pod("a", "p", &[("nvidia.com/gpu", 3)])],
    );
    assert_eq!(n.occupancy, occupancy(5, 0, 3));
}

#[test]
fn time_slicing_replicas_spread_over_the_gpus_as_the_device_plugin_hands_them_out() {
    let mut shared = node(4, &[("nvidia.com/gpu", "16")]);
    shared.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: false,
    });
    // 2 replicas: two GPUs hold one each.
    let pods: Vec<GpuPod> = (0..2)
        .map(|i| pod("a", &format!("p{i}"), &[("nvidia.com/gpu", 1)]))
        .collect();
    assert_eq!(placed(shared.clone(), &pods).occupancy, occupancy(2, 2, 0));
    // 13 replicas: 3 on each GPU, one GPU with 4 (full).
    let pods: Vec<GpuPod> = (0..13)
        .map(|i| pod("a", &format!("p{i}"), &[("nvidia.com/gpu", 1)]))
        .collect();
    assert_eq!(placed(shared, &pods).occupancy, occupancy(0, 3, 1));
}

#[test]
fn mig_slices_count_fully_held_and_wholly_free_gpus_by_compute_slices() {
    // Two A100s, each as 7 x 1g.10gb: 14 slices; 8 held.
    let mut n = node(2, &[("nvidia.com/mig-1g.10gb", "14")]);
    n.mig = Some(Mig {
        strategy: Some("mixed".into()),
        devices: vec![MigProfile {
            profile: "1g.10gb".into(),
            count: 14,
            memory_mib: Some(9728),
            resource: Some("nvidia.com/mig-1g.10gb".into()),
        }],
        ..Default::default()
    });
    let pods = [pod("a", "p", &[("nvidia.com/mig-1g.10gb", 8)])];
    // 8 of 14: one GPU fully held (7), the other with 1 held: partly free.
    assert_eq!(placed(n.clone(), &pods).occupancy, occupancy(0, 1, 1));
    assert_eq!(placed(n, &[]).occupancy, occupancy(2, 0, 0));
}

#[test]
fn hami_cards_are_read_by_their_pods_device_records() {
    let n = hami_node(
        node(2, &[("nvidia.com/gpu", "20")]),
        &["GPU-a", "GPU-b"],
        81920,
        10,
    );
    let mut small = pod(
        "a",
        "small",
        &[("nvidia.com/gpu", 1), ("nvidia.com/gpumem", 20480)],
    );
    small.placed = vec![PodDevice {
        id: "GPU-a".into(),
        memory_mib: 20480,
        cores: 0,
    }];
    let n = placed(n, &[small]);
    assert_eq!(n.occupancy, occupancy(1, 1, 0));
    let card = &n.shared_gpus[0];
    assert_eq!(
        (card.held_milli(), card.free_memory_mib()),
        (250, Some(61440))
    );
    assert!(card.has_room());
    // A pod the layer has not yet recorded takes one of the cards counted free.
    let mut m = n.clone();
    m.shared_gpus.iter_mut().for_each(|g| g.parts.clear());
    let late = pod(
        "b",
        "late",
        &[("nvidia.com/gpu", 1), ("nvidia.com/gpumem", 1024)],
    );
    assert_eq!(placed(m, &[late]).occupancy, occupancy(1, 1, 0));
}

#[test]
fn a_kai_group_is_one_gpu_its_fractions_share_and_its_reservation_is_not_a_whole_gpu() {
    let n = node(2, &[("nvidia.com/gpu", "2")]);
    let mut reservation = pod(
        "kai-resource-reservation",
        "gpu-reservation-x",
        &[("nvidia.com/gpu", 1)],
    );
    reservation.gpu_group = Some("g1".into());
    let fraction = |name: &str, milli: u64| {
        let mut p = pod("team", name, &[]);
        p.share = Some(crate::inventory::allocation::pod::PodShare::Fraction { milli });
        p.gpu_group = Some("g1".into());
        p
    };
    let half = placed(n.clone(), &[reservation.clone(), fraction("f1", 500)]);
    assert_eq!(half.occupancy, occupancy(1, 1, 0));
    assert_eq!(half.shared_gpus.len(), 1);
    assert_eq!(half.shared_gpus[0].id, "group/g1");
    let full = placed(n, &[reservation, fraction("f1", 500), fraction("f2", 500)]);
    assert_eq!(full.occupancy, occupancy(1, 0, 1));
}

#[test]
fn spread_and_slices_always_add_up_to_the_gpus() {
    for gpus in 1..6u64 {
        for replicas in 2..5u64 {
            for held in 0..=gpus * replicas + 2 {
                let o = spread(gpus, held, replicas);
                assert_eq!(
                    o.whole_free + o.partly_free + o.fully_held,
                    gpus,
                    "{gpus} {replicas} {held}"
                );
            }
        }
        for used in 0..=gpus * 7 {
            let o = by_slices(gpus, used, gpus * 7, 7);
            assert_eq!(o.whole_free + o.partly_free + o.fully_held, gpus);
        }
    }
}
