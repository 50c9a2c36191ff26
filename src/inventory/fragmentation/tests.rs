use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{GPU_CLIQUE, NodeInventory, SizeUse};
use crate::inventory::test_support::{accounted, bound_pod, gpu_node};
use crate::inventory::text_map::Text;

const H100: &str = "NVIDIA-H100-80GB-HBM3";

/// Four 8-GPU nodes holding 3, 5, 4 and 4 GPUs: 16 free in pieces of 5, 3, 4 and 4.
fn fragmented() -> (Vec<NodeInventory>, Vec<GpuPod>) {
    let nodes = (1..=4)
        .map(|i| gpu_node(&format!("n{i}"), 8, H100, None, &[("nvidia.com/gpu", "8")]))
        .collect();
    let pods = [3, 5, 4, 4]
        .iter()
        .enumerate()
        .map(|(i, held)| {
            bound_pod(
                "team",
                &format!("p{i}"),
                &format!("n{}", i + 1),
                &[("nvidia.com/gpu", *held)],
            )
        })
        .collect();
    (nodes, pods)
}

fn pending(name: &str, gpus: u64) -> GpuPod {
    GpuPod {
        namespace: "wait".into(),
        name: name.into(),
        phase: "Pending".into(),
        unschedulable: true,
        requests: [("nvidia.com/gpu".to_owned(), gpus)].into_iter().collect(),
        ..Default::default()
    }
}

fn size(gpus: u64, usable_gpus: u64, asked: bool) -> SizeUse {
    SizeUse {
        gpus,
        usable_gpus,
        asked,
    }
}

#[test]
fn each_size_uses_the_whole_pods_of_each_nodes_free_gpus() {
    let (nodes, pods) = fragmented();
    let inventory = accounted(nodes, &pods);
    let [product] = &inventory.fragmentation.products[..] else {
        panic!("one product: {:?}", inventory.fragmentation);
    };
    assert_eq!(
        (product.free_gpus, product.largest_piece, product.pieces),
        (16, 5, 4)
    );
    assert_eq!(
        product.sizes,
        [
            size(1, 16, false),
            size(2, 14, false),
            size(4, 12, false),
            size(8, 0, false)
        ]
    );
    assert!(product.levels.is_empty(), "no topology labels, no levels");
    assert_eq!(inventory.fragmentation.blocked_pods, 0);
}

#[test]
fn a_pending_pod_that_fits_in_total_but_on_no_node_is_blocked_by_fragmentation() {
    let (nodes, mut pods) = fragmented();
    pods.push(pending("eight", 8));
    pods.push(pending("four", 4)); // n1 holds it: it waits for something else
    pods.push(pending("twenty", 20)); // more than is free: it waits for capacity
    let inventory = accounted(nodes, &pods);
    let fragmentation = &inventory.fragmentation;
    assert_eq!(fragmentation.blocked_pods, 1, "{fragmentation:?}");
    let blocked = &fragmentation.blocked[0];
    assert_eq!(
        (
            &*blocked.name,
            blocked.gpus,
            &*blocked.product,
            blocked.free_gpus,
            blocked.largest_piece
        ),
        ("eight", 8, H100, 16, 5)
    );
    // The sizes asked for join the ladder, marked.
    let sizes = &fragmentation.products[0].sizes;
    assert!(sizes.contains(&size(8, 0, true)), "{sizes:?}");
    assert!(sizes.contains(&size(20, 0, true)), "{sizes:?}");
    assert!(sizes.contains(&size(4, 12, true)), "{sizes:?}");
}

#[test]
fn a_cordoned_or_not_ready_node_offers_no_piece() {
    let (mut nodes, mut pods) = fragmented();
    nodes[0].unschedulable = true; // its 5 free are not free to a new pod
    nodes[1].ready = false;
    pods.push(pending("eight", 8));
    let inventory = accounted(nodes, &pods);
    let product = &inventory.fragmentation.products[0];
    assert_eq!((product.free_gpus, product.largest_piece), (8, 4));
    assert_eq!(
        inventory.fragmentation.blocked_pods, 1,
        "8 <= 8 free, 4 at most on a node"
    );
}

#[test]
fn a_pods_node_selector_limits_the_nodes_it_is_judged_on() {
    let (nodes, mut pods) = fragmented();
    let mut picky = pending("picky", 8);
    picky.node_selector = [("pool".to_owned(), "none".to_owned())]
        .into_iter()
        .collect();
    pods.push(picky);
    let inventory = accounted(nodes, &pods);
    assert_eq!(
        inventory.fragmentation.blocked_pods, 0,
        "no node it may run on"
    );
}

#[test]
fn blocked_pods_are_all_counted_and_the_largest_listed_first() {
    let (nodes, mut pods) = fragmented();
    for i in 0..30 {
        pods.push(pending(&format!("w{i:02}"), if i % 2 == 0 { 6 } else { 8 }));
    }
    let inventory = accounted(nodes, &pods);
    let fragmentation = &inventory.fragmentation;
    assert_eq!(fragmentation.blocked_pods, 30);
    assert_eq!(fragmentation.blocked.len(), super::BLOCKED_LISTED);
    assert_eq!(fragmentation.blocked[0].gpus, 8);
    assert_eq!(&*fragmentation.blocked[0].name, "w01");
    assert_eq!(fragmentation.blocked[15].gpus, 6);
}

#[test]
fn the_ladder_stops_at_the_widest_node_but_keeps_what_is_asked() {
    let nodes = vec![gpu_node("small", 2, "T4", None, &[("nvidia.com/gpu", "2")])];
    let inventory = accounted(nodes, &[pending("three", 3)]);
    assert_eq!(
        inventory.fragmentation.products[0].sizes,
        [size(1, 2, false), size(2, 2, false), size(3, 0, true)]
    );
    assert_eq!(
        inventory.fragmentation.blocked_pods, 0,
        "3 > 2 free: capacity, not pieces"
    );
}

#[test]
fn a_level_counts_what_gangs_of_whole_pods_can_use_per_domain() {
    // Two NVLink partitions of two 4-GPU nodes: A offers 4 (4 + 2 free, pods of 4), B offers 8.
    let mut nodes: Vec<NodeInventory> = ["a1", "a2", "b1", "b2"]
        .iter()
        .map(|n| gpu_node(n, 4, "GB200", None, &[("nvidia.com/gpu", "4")]))
        .collect();
    for node in &mut nodes {
        let domain = format!("cluster.{}", &node.name[..1]);
        node.topology.nvlink = Some((GPU_CLIQUE, Text::from(domain.as_str())));
    }
    let pods = [bound_pod("t", "p", "a2", &[("nvidia.com/gpu", 2)])];
    let inventory = accounted(nodes, &pods);
    let [level] = &inventory.fragmentation.products[0].levels[..] else {
        panic!("{:?}", inventory.fragmentation.products[0].levels);
    };
    assert_eq!(
        (&*level.level, level.gpus_per_pod, level.largest_piece),
        ("nvlink", 4, 8)
    );
    assert_eq!(level.sizes, [size(4, 12, false), size(8, 8, false)]);
}

#[test]
fn one_event_when_pods_start_waiting_on_pieces_and_one_when_none_does() {
    use crate::inventory::events::{EventBase, transitions_since};
    let (nodes, pods) = fragmented();
    let calm = accounted(nodes.clone(), &pods);
    let mut waiting = pods.clone();
    waiting.push(pending("eight", 8));
    waiting.push(pending("eight-b", 8));
    let blocked = accounted(nodes.clone(), &waiting);
    let reasons = |old: &crate::inventory::model::Inventory, new| {
        transitions_since(EventBase::Model(old), new)
            .into_iter()
            .filter(|e| e.reason.starts_with("Fragmented"))
            .map(|e| (e.reason, e.note))
            .collect::<Vec<_>>()
    };
    let appeared = reasons(&calm, &blocked);
    assert_eq!(appeared.len(), 1, "{appeared:?}");
    assert_eq!(appeared[0].0, "FragmentedCapacity");
    assert!(
        appeared[0].1.starts_with("2 pending GPU pods fit the free GPUs in total but on no node: wait/eight asks for 8 of the 16 free"),
        "{}",
        appeared[0].1
    );
    let mut more = waiting.clone();
    more.push(pending("eight-c", 8));
    let three = accounted(nodes.clone(), &more);
    assert!(reasons(&blocked, &three).is_empty(), "no event per pod");
    let cleared = reasons(&blocked, &calm);
    assert_eq!(cleared.len(), 1);
    assert_eq!(cleared[0].0, "FragmentedCapacityResolved");
}
