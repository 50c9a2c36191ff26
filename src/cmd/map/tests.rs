//! The map drawn from hand-made fleets: the picture line by line, the plan over it, the width and the
//! summaries at any size, colour, and hostile names.

use std::sync::Arc;

use super::cells::{Cell, free_agrees};
use super::draw::{draw, shape_of};
use super::picture::{Grouping, Map, picture};
use super::view::{MAX_BODY_LINES, Shape, View};
use crate::inventory::Inventory;
use crate::inventory::allocation::GpuPod;
use crate::inventory::model::{
    Amount, GPU_CLIQUE, Holder, IdleHolding, NodeInventory, Sharing, UtilizationReport,
    UtilizationState,
};
use crate::inventory::test_support::{accounted, bound_pod, gpu_node};
use crate::inventory::text_map::Text;
use crate::sources::pod_traits::ReadFrom;

fn h100(name: &str) -> NodeInventory {
    gpu_node(name, 8, "H100", None, &[("nvidia.com/gpu", "8")])
}

/// Pods `(name, gpus, node)` of namespace `ml`.
fn pods(layout: &[(&str, u64, &str)]) -> Vec<GpuPod> {
    layout
        .iter()
        .map(|(name, gpus, on)| bound_pod("ml", name, on, &[("nvidia.com/gpu", *gpus)]))
        .collect()
}

/// Five 8-GPU H100 nodes in pieces (a: 3 free, b: 3, c: 4, d: cordoned, e: 5 free and 2 withdrawn by the
/// device plugin), and a time-sliced L4 node of 4 GPUs, 2 of them holding one replica each.
fn fragmented() -> Inventory {
    let mut d = h100("gpu-d");
    d.unschedulable = true;
    let mut e = h100("gpu-e");
    e.allocatable
        .insert("nvidia.com/gpu".to_owned(), Amount::parse("6"));
    let mut f = gpu_node("gpu-f", 4, "L4", None, &[("nvidia.com/gpu", "16")]);
    f.sharing = Some(Sharing {
        strategy: Some("time-slicing".into()),
        replicas: Some(4),
        renamed_resource: false,
    });
    let nodes = vec![h100("gpu-a"), h100("gpu-b"), h100("gpu-c"), d, e, f];
    let layout = [
        ("a-0", 3, "gpu-a"),
        ("a-1", 2, "gpu-a"),
        ("b-0", 5, "gpu-b"),
        ("c-0", 4, "gpu-c"),
        ("d-0", 2, "gpu-d"),
        ("e-0", 1, "gpu-e"),
        ("f-0", 1, "gpu-f"),
        ("f-1", 1, "gpu-f"),
    ];
    accounted(nodes, &pods(&layout))
}

const PLAIN: View = View {
    width: 80,
    colour: false,
    headers: true,
};

fn lines(text: &str) -> Vec<&str> {
    text.lines().collect()
}

#[test]
fn a_fragmented_fleet_is_drawn_one_cell_per_gpu() {
    let inventory = fragmented();
    let map = picture(&inventory, &Grouping::Auto, None);
    assert_eq!(map.grouped_by, "product", "no topology: by product");
    let text = draw(&map, &PLAIN);
    assert_eq!(
        lines(&text),
        [
            "6 GPU nodes, 44 GPUs: 15 held, 2 shared, 17 free, 2 unhealthy, 8 unusable;",
            "  grouped by product",
            "H100  5 nodes  #15 .15 !2 x8",
            "  gpu-a  #####...",
            "  gpu-b  #####...",
            "  gpu-c  ####....",
            "  gpu-d  xxxxxxxx  cordoned",
            "  gpu-e  #.....!!",
            "L4  1 node  ~2 .2",
            "  gpu-f  ~~..",
            "",
            "legend: # held  ~ shared (held in part)  . free  ! unhealthy",
            "  x node NotReady, cordoned or tainted",
            "idle GPUs are not shown: give --prometheus-url to read dcgm-exporter's activity",
            "  (docs/utilization.md); held GPUs are all #",
        ],
        "{text}"
    );
    for node in &inventory.nodes {
        let cells = &map
            .groups
            .iter()
            .flat_map(|g| &g.nodes)
            .find(|n| n.name == node.name);
        assert!(free_agrees(node, &cells.unwrap().cells), "{}", node.name);
    }
    let rows = draw(
        &map,
        &View {
            headers: false,
            ..PLAIN
        },
    );
    assert_eq!(lines(&rows).len(), 6, "--no-headers: the rows only\n{rows}");
}

/// A plan's second look at an empty dump: every pod movable, of priority 0, under no budget.
fn plan_from(dump: &ReadFrom) -> Option<super::PlanFrom<'_>> {
    Some(super::PlanFrom {
        from: dump,
        namespace: None,
    })
}

#[tokio::test]
async fn the_plan_is_drawn_over_the_fleet_and_its_moves_listed() {
    let inventory = fragmented();
    let dump = ReadFrom::Dump(Default::default());
    // c lacks 4 and holds one pod of 4, which fits e's 5 free; a and b lack 5; e lacks 3 but frees only 1.
    let job = super::job(&inventory, 8, None, plan_from(&dump))
        .await
        .unwrap();
    assert!(!job.fits);
    let map = picture(&inventory, &Grouping::Auto, Some(job));
    let text = draw(&map, &PLAIN);
    let drawn = lines(&text);
    assert_eq!(
        drawn[3..8],
        [
            "  gpu-a  #####...",
            "  gpu-b  #####...",
            "> gpu-c  ----....",
            "  gpu-d  xxxxxxxx  cordoned",
            "  gpu-e  #++++.!!",
        ],
        "{text}"
    );
    assert_eq!(
        drawn[drawn.len() - 4..],
        [
            "plan: move 1 pod, 4 GPUs, so that 8 GPUs are free on gpu-c (marked >): delete",
            "  each pod below; its controller recreates it and the scheduler places it where",
            "  shown",
            "  ml/c-0 (4 GPUs): gpu-c -> gpu-e",
        ],
        "{text}"
    );
    assert!(
        text.contains("- left by a moved pod") && text.contains("+ taken by a moved pod"),
        "{text}"
    );
    assert_eq!((map.counts.leaving, map.counts.arriving), (4, 4));
}

#[tokio::test]
async fn a_job_that_fits_now_marks_its_nodes_and_moves_nothing() {
    let inventory = fragmented();
    let dump = ReadFrom::Dump(Default::default());
    let job = super::job(&inventory, 5, Some("H100".into()), plan_from(&dump))
        .await
        .unwrap();
    assert!(job.fits && job.plan.is_none());
    let map = picture(&inventory, &Grouping::Auto, Some(job));
    let text = draw(&map, &PLAIN);
    let marked: Vec<&str> = text.lines().filter(|l| l.starts_with("> ")).collect();
    assert_eq!(marked, ["> gpu-e  #.....!!"], "{text}");
    assert!(text.contains("fit now on 1 node (marked >)"), "{text}");
}

/// `nodes` 8-GPU nodes named `<prefix>-<i>`, 4 to an NVLink domain, node i holding `held(i)` GPUs.
fn fleet(prefix: &str, nodes: usize, held: impl Fn(usize) -> u64) -> Inventory {
    let mut made = Vec::new();
    let mut placed = Vec::new();
    for i in 0..nodes {
        let name = format!("{prefix}-{i:05}");
        let mut node = h100(&name);
        node.topology.nvlink = Some((
            GPU_CLIQUE,
            Text::from(format!("rack-{:04}.1", i / 4).as_str()),
        ));
        if held(i) > 0 {
            placed.push((format!("p-{i}"), held(i), name));
        }
        made.push(node);
    }
    let layout: Vec<(&str, u64, &str)> = placed
        .iter()
        .map(|(p, g, n)| (p.as_str(), *g, n.as_str()))
        .collect();
    accounted(made, &pods(&layout))
}

fn longest_line(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn three_hundred_gpus_fit_eighty_columns_one_node_a_row() {
    // 37 nodes with 60-character names: every node keeps a row, its name cut in the middle.
    let prefix = format!("gke-a-very-long-cluster-name-{}", "x".repeat(45));
    let inventory = fleet(&prefix, 37, |i| (i % 9) as u64);
    let map = picture(&inventory, &Grouping::Auto, None);
    assert_eq!(map.grouped_by, "nvlink");
    assert!(map.gpus >= 296 && map.groups.len() == 10);
    assert_eq!(shape_of(&map, 80), Shape::Nodes);
    let text = draw(&map, &PLAIN);
    assert!(longest_line(&text) <= 80, "{text}");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("  gke-")).collect();
    assert_eq!(rows.len(), 37, "{text}");
    // Both ends of each name are kept: the nodes stay told apart.
    assert!(
        rows[36].contains("…") && rows[36].contains("x-00036"),
        "{text}"
    );
    assert!(text.contains("[rack-0000.1] H100  4 nodes"), "{text}");
}

#[test]
fn five_thousand_gpus_are_summarised_within_the_line_budget() {
    // 625 nodes in 157 domains: identical nodes first share rows, then every group is one line.
    let few_shapes = fleet("gpu", 625, |i| [0, 8, 8, 4][i % 4]);
    let map = picture(&few_shapes, &Grouping::Product, None);
    assert_eq!(map.gpus, 5000);
    assert_eq!(shape_of(&map, 80), Shape::Collapsed);
    let text = draw(&map, &PLAIN);
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with("  gpu-")).collect();
    assert_eq!(rows.len(), 3, "{text}");
    let stood_for: usize = rows
        .iter()
        .map(|r| {
            r.rsplit_once('×')
                .map_or(1, |(_, n)| n.trim().parse().unwrap())
        })
        .sum();
    assert_eq!(stood_for, 625, "every node is in some row:\n{text}");
    let by_domain = picture(&few_shapes, &Grouping::Auto, None);
    assert_eq!(shape_of(&by_domain, 80), Shape::Groups);
    let text = draw(&by_domain, &PLAIN);
    assert!(longest_line(&text) <= 80, "{text}");
    assert!(text.lines().count() <= MAX_BODY_LINES + 12, "{text}");
    assert!(text.contains("... 110 more groups"), "{text}");
    assert!(
        text.contains("[rack-0000.1] H100  4 nodes  #20 .12"),
        "{text}"
    );
}

#[test]
fn colour_only_repeats_the_glyphs() {
    let map = picture(&fragmented(), &Grouping::Auto, None);
    let plain = draw(&map, &PLAIN);
    assert!(!plain.contains('\x1b'), "{plain}");
    let coloured = draw(
        &map,
        &View {
            colour: true,
            ..PLAIN
        },
    );
    assert!(coloured.contains("\x1b[32m..."), "{coloured}");
    let stripped = strip_escapes(&coloured);
    assert_eq!(stripped, plain);
}

fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

#[test]
fn a_hostile_node_name_is_shown_escaped_never_obeyed() {
    let mut evil = h100("evil\x1b[2J\x1b]0;owned\x07-node");
    evil.product = Some("H100\x1b[31m".into());
    let map = picture(&accounted(vec![evil], &[]), &Grouping::Auto, None);
    let text = draw(&map, &PLAIN);
    assert!(!text.contains('\x1b') && !text.contains('\x07'), "{text:?}");
    assert!(
        text.contains("evil\\x1b[2J\\x1b]0;owned\\x07-node"),
        "{text}"
    );
    assert!(text.contains("H100\\x1b[31m  1 node"), "{text}");
}

#[test]
fn idle_gpus_show_where_prometheus_answered_and_the_legend_says_when_not() {
    let mut inventory = fragmented();
    let idle = IdleHolding {
        holder: Holder::Pod {
            namespace: "ml".into(),
            name: "b-0".into(),
        },
        resource: "nvidia.com/gpu".into(),
        amount: 5,
        equivalent_milli: Some(5000),
        idle_since: jiff::Timestamp::UNIX_EPOCH,
    };
    inventory.idle.insert("gpu-b".into(), Arc::from(vec![idle]));
    inventory.utilization = Some(UtilizationReport {
        state: UtilizationState::Current,
        ..Default::default()
    });
    let map = picture(&inventory, &Grouping::Auto, None);
    let text = draw(&map, &PLAIN);
    assert!(text.contains("  gpu-b  iiiii..."), "{text}");
    assert!(
        text.contains("i held, idle") && !text.contains("not shown"),
        "{text}"
    );
    inventory.utilization.as_mut().unwrap().state = UtilizationState::Unknown;
    let unknown = picture(&inventory, &Grouping::Auto, None);
    assert_eq!(
        unknown.counts.idle, 0,
        "an unknown answer calls nothing idle"
    );
    assert!(draw(&unknown, &PLAIN).contains("not whole"));
}

#[test]
fn the_document_lists_each_nodes_cells_by_name() {
    let map: Map = picture(&fragmented(), &Grouping::Auto, None);
    let json = serde_json::to_value(&map).unwrap();
    let d = &json["groups"][0]["nodes"][3];
    assert_eq!(d["name"], "gpu-d");
    assert_eq!(d["unusable"], "cordoned");
    assert_eq!(d["cells"].as_array().unwrap().len(), 8);
    assert_eq!(d["cells"][0], "unusable");
    assert_eq!(json["groups"][1]["counts"]["shared"], 2);
    assert_eq!(json["idle"], "notRead");
    assert!(Cell::ALL.windows(2).all(|w| w[0] < w[1]), "screen order");
}
