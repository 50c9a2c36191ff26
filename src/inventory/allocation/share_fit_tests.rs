//! `fit` for a share: each scheme's rule names the GPUs a hand check finds.

use std::sync::Arc;

use super::*;
use crate::inventory::allocation::GpuPod;
use crate::inventory::allocation::pod::PodShare;
use crate::inventory::model::{Mig, MigProfile};
use crate::inventory::test_support::{accounted, bound_pod as pod, gpu_node, hami_node};
use crate::inventory::vendors::sharing_layer::PodDevice;

fn node(name: &str, count: u64, allocatable: &[(&str, &str)]) -> NodeInventory {
    gpu_node(
        name,
        count,
        "NVIDIA-A100-SXM4-80GB",
        Some(81920),
        allocatable,
    )
}

fn nodes(list: Vec<NodeInventory>, pods: &[GpuPod]) -> Vec<Arc<NodeInventory>> {
    accounted(list, pods).nodes
}

fn ask(share: Share) -> ShareRequest {
    ShareRequest {
        share,
        product: None,
        tolerations: Vec::new(),
    }
}

fn named(answer: &ShareAnswer) -> Vec<(String, Option<String>, u64)> {
    answer
        .places
        .iter()
        .map(|p| (p.node.clone(), p.gpu.clone(), p.count))
        .collect()
}

/// A HAMi node of two A100-80GB cards, one with 70 GiB held, and a plain node with 2 of 8 GPUs free.
fn fleet() -> Vec<Arc<NodeInventory>> {
    let hami = hami_node(
        node("hami", 2, &[("nvidia.com/gpu", "20")]),
        &["GPU-a", "GPU-b"],
        81920,
        10,
    );
    let mut big = pod(
        "a",
        "big",
        "hami",
        &[("nvidia.com/gpu", 1), ("nvidia.com/gpumem", 71680)],
    );
    big.placed = vec![PodDevice {
        id: "GPU-a".into(),
        memory_mib: 71680,
        cores: 0,
    }];
    let plain = node("plain", 8, &[("nvidia.com/gpu", "8")]);
    let whole = pod("b", "whole", "plain", &[("nvidia.com/gpu", 6)]);
    nodes(vec![hami, plain], &[big, whole])
}

#[test]
fn a_memory_share_fits_the_cards_with_that_much_free_and_the_whole_free_gpus() {
    let fleet = fleet();
    // 20 GiB: card a has 10 GiB left (no), card b all; the plain node's 2 whole GPUs.
    let answer = fit_share(&fleet, &ask(Share::MemoryMib(20480)));
    assert!(answer.fits);
    assert_eq!(
        named(&answer),
        [
            ("hami".into(), Some("GPU-b".into()), 1),
            ("plain".into(), None, 2)
        ]
    );
    // 8 GiB fits card a too.
    let answer = fit_share(&fleet, &ask(Share::MemoryMib(8192)));
    assert_eq!(answer.places.len(), 3);
    assert!(answer.places[0].free.starts_with("10240 MiB free"));
    // More than a card has: nowhere, and it says why.
    let answer = fit_share(&fleet, &ask(Share::MemoryMib(90000)));
    assert!(!answer.fits);
    assert!(answer.why.unwrap().contains("2 Ready, schedulable"));
}

#[test]
fn a_fraction_fits_by_what_the_gpu_has_left() {
    let fleet = fleet();
    // Card a has 0.125 left of 1 (10240 of 81920 MiB).
    let answer = fit_share(&fleet, &ask(Share::Fraction(250)));
    assert_eq!(
        named(&answer),
        [
            ("hami".into(), Some("GPU-b".into()), 1),
            ("plain".into(), None, 2)
        ]
    );
    let answer = fit_share(&fleet, &ask(Share::Fraction(125)));
    assert_eq!(answer.places.len(), 3);
}

#[test]
fn a_kai_group_takes_a_fraction_while_its_fractions_leave_room() {
    let n = node("kai", 1, &[("nvidia.com/gpu", "1")]);
    let mut reservation = pod(
        "kai-resource-reservation",
        "r",
        "kai",
        &[("nvidia.com/gpu", 1)],
    );
    reservation.gpu_group = Some("g".into());
    let mut fraction = pod("team", "f", "kai", &[]);
    fraction.share = Some(PodShare::Fraction { milli: 600 });
    fraction.gpu_group = Some("g".into());
    let fleet = nodes(vec![n], &[reservation, fraction]);
    let fits = fit_share(&fleet, &ask(Share::Fraction(400)));
    assert_eq!(named(&fits), [("kai".into(), Some("group/g".into()), 1)]);
    assert_eq!(fits.places[0].scheme, "KAI");
    assert!(!fit_share(&fleet, &ask(Share::Fraction(500))).fits);
}

#[test]
fn a_mig_profile_fits_free_devices_of_that_profile_only() {
    let mut mixed = node("mixed", 1, &[("nvidia.com/mig-1g.10gb", "7")]);
    mixed.mig = Some(Mig {
        strategy: Some("mixed".into()),
        devices: vec![MigProfile {
            profile: "1g.10gb".into(),
            count: 7,
            memory_mib: Some(9728),
            resource: Some("nvidia.com/mig-1g.10gb".into()),
        }],
        ..Default::default()
    });
    let held = pod("a", "p", "mixed", &[("nvidia.com/mig-1g.10gb", 5)]);
    let fleet = nodes(vec![mixed], &[held]);
    let answer = fit_share(&fleet, &ask(Share::MigProfile("1g.10gb".into())));
    assert_eq!(named(&answer), [("mixed".into(), None, 2)]);
    assert!(!fit_share(&fleet, &ask(Share::MigProfile("3g.40gb".into()))).fits);
}

#[test]
fn a_cordoned_node_and_another_product_are_left_out() {
    let mut fleet = fleet();
    Arc::make_mut(&mut fleet[1]).unschedulable = true;
    let answer = fit_share(&fleet, &ask(Share::MemoryMib(20480)));
    assert_eq!(named(&answer), [("hami".into(), Some("GPU-b".into()), 1)]);
    let mut other = ask(Share::MemoryMib(1024));
    other.product = Some("NVIDIA-L4".into());
    let answer = fit_share(&fleet, &other);
    assert!(!answer.fits);
    assert!(
        answer
            .why
            .unwrap()
            .starts_with("none of 0 Ready, schedulable GPU node(s) of NVIDIA-L4")
    );
    let answer = fit_share(&fleet, &ask(Share::MemoryMib(90000)));
    assert!(answer.why.unwrap().ends_with("; left out: 1 cordoned"));
}
