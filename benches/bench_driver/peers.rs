//! The peer comparison of the allocation scenario: one-shot `gpu-inventory-operator scan -o json` (live)
//! against `kubectl-view-allocations` on the same cluster, alternating, each under GNU time (`-v`: peak
//! RSS, CPU), and their per-node nvidia.com/gpu numbers held against each other and against the driver's
//! truth, node by node.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};
use testkit::settings::bench::Settings;

use crate::alloc_fleet::GPU;
use crate::alloc_observe::{SeenNode, int};
use crate::alloc_truth::Expected;
use crate::measure::percentile;
use crate::{Res, log};

/// One run of a tool.
pub struct Measured {
    pub wall_secs: f64,
    pub rss_mib: f64,
    pub cpu_secs: f64,
    pub exit: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Runs `bin args` under `time -v`.
pub fn measured(time_bin: &Path, bin: &Path, args: &[&str]) -> Res<Measured> {
    let t0 = Instant::now();
    let out = Command::new(time_bin)
        .arg("-v")
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{} -v {}: {e}", time_bin.display(), bin.display()))?;
    let wall_secs = t0.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let field = |name: &str| {
        stderr
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
    };
    let rss_kb = field("Maximum resident set size (kbytes):")
        .ok_or(format!("no peak RSS in the output of time -v: {stderr}"))?;
    let cpu_secs = field("User time (seconds):").unwrap_or(f64::NAN)
        + field("System time (seconds):").unwrap_or(f64::NAN);
    Ok(Measured {
        wall_secs,
        rss_mib: rss_kb / 1024.0,
        cpu_secs,
        exit: field("Exit status:").map(|v| v as i32),
        stdout: out.stdout,
        stderr,
    })
}

/// The per-node nvidia.com/gpu numbers of `scan -o json` (the status object), of the nodes that have any (a
/// node whose GPUs are DRA devices has none: kubectl-view-allocations does not list it under nvidia.com/gpu).
fn scan_nodes(stdout: &[u8]) -> Res<BTreeMap<String, SeenNode>> {
    let status: Value = serde_json::from_slice(stdout)?;
    let nodes = status["nodes"].as_array().ok_or("scan: no nodes[]")?;
    Ok(nodes
        .iter()
        .filter_map(|n| {
            let node = SeenNode {
                allocatable: int(&n["allocatable"][GPU]),
                allocated: int(&n["allocated"][GPU]),
                free: int(&n["free"][GPU]),
            };
            let name = n["name"].as_str()?.to_owned();
            node.allocatable.is_some().then_some((name, node))
        })
        .collect())
}

/// The per-node numbers of `kubectl-view-allocations -g resource,node -o csv`: the rows of kind `node`
/// under resource nvidia.com/gpu, with their Requested, Allocatable and Free columns.
fn kva_nodes(stdout: &[u8]) -> Res<BTreeMap<String, SeenNode>> {
    let text = String::from_utf8_lossy(stdout);
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or("kubectl-view-allocations: empty output")?
        .split(',')
        .collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| h.eq_ignore_ascii_case(name))
            .ok_or(format!(
                "kubectl-view-allocations: no column {name} in {header:?}"
            ))
    };
    let (kind, resource, node) = (col("kind")?, col("resource")?, col("node")?);
    let (requested, allocatable, free) = (col("Requested")?, col("Allocatable")?, col("Free")?);
    let number = |v: Option<&&str>| {
        v.and_then(|v| v.trim().parse::<f64>().ok())
            .map(|v| v as u64)
    };
    let mut out = BTreeMap::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        if cells.get(kind) != Some(&"node") || cells.get(resource) != Some(&GPU) {
            continue;
        }
        let seen = SeenNode {
            allocatable: number(cells.get(allocatable)),
            allocated: number(cells.get(requested)).or(Some(0)),
            free: number(cells.get(free)),
        };
        if let Some(name) = cells.get(node) {
            out.insert((*name).to_owned(), seen);
        }
    }
    Ok(out)
}

/// How `a` and `b` differ, node by node (nodes missing from either count as differences).
fn differences(
    a: &BTreeMap<String, SeenNode>,
    b: &BTreeMap<String, SeenNode>,
    what: (&str, &str),
) -> Value {
    let mut names: Vec<&String> = a.keys().chain(b.keys()).collect();
    names.sort();
    names.dedup();
    let mut agree = 0;
    let mut diffs = Vec::new();
    for name in &names {
        match (a.get(*name), b.get(*name)) {
            (Some(x), Some(y)) if x == y => agree += 1,
            (x, y) => diffs.push(json!({ "node": name, what.0: x.map(show), what.1: y.map(show) })),
        }
    }
    json!({ "nodes": names.len(), "agree": agree, "differ": diffs.len(),
        "differences": diffs.iter().take(20).collect::<Vec<_>>() })
}

fn show(n: &SeenNode) -> Value {
    json!({ "allocatable": n.allocatable, "allocated": n.allocated, "free": n.free })
}

/// The driver's truth in the same shape.
fn truth(exp: &Expected) -> BTreeMap<String, SeenNode> {
    exp.nodes
        .iter()
        .map(|(name, n)| {
            let seen = SeenNode {
                allocatable: Some(n.allocatable),
                allocated: Some(exp.allocated(name)),
                free: Some(exp.free(name)),
            };
            (name.clone(), seen)
        })
        .collect()
}

pub fn medians(runs: &[Measured]) -> Value {
    let median = |f: fn(&Measured) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        percentile(&v, 50.0)
    };
    json!({
        "runs": runs.len(),
        "wall_secs": median(|m| m.wall_secs),
        "rss_mib": median(|m| m.rss_mib),
        "cpu_secs": median(|m| m.cpu_secs),
        "each": runs.iter().map(|m| json!({
            "wall_secs": m.wall_secs, "rss_mib": m.rss_mib, "cpu_secs": m.cpu_secs, "exit": m.exit,
        })).collect::<Vec<_>>(),
    })
}

/// Both tools `runs` times each, alternating (scan first); their medians and the node-by-node comparison
/// of their last outputs.
pub async fn compare(s: &Settings, kva: &Path, exp: &Expected, runs: usize) -> Res<Value> {
    let kubeconfig = s.kubeconfig.to_string_lossy().into_owned();
    let scan_args = ["scan", "-o", "json", "--kubeconfig", &kubeconfig];
    // Every node, tainted or not (--ignore-taints with no value), zero rows too, one row per node.
    let kva_args = [
        "--kubeconfig",
        &kubeconfig,
        "-r",
        "gpu",
        "-g",
        "resource,node",
        "-o",
        "csv",
        "-z",
        "--ignore-taints",
    ];
    let (mut scans, mut kvas) = (Vec::new(), Vec::new());
    for run in 0..runs.max(1) {
        let scan = tokio::task::block_in_place(|| {
            measured(&s.alloc.time_bin, &s.operator_bin, &scan_args)
        })?;
        // scan exits 1 when some GPU node has an issue: still a scan.
        if !matches!(scan.exit, Some(0 | 1)) {
            return Err(format!("scan failed ({:?}): {}", scan.exit, scan.stderr).into());
        }
        let other = tokio::task::block_in_place(|| measured(&s.alloc.time_bin, kva, &kva_args))?;
        if other.exit != Some(0) {
            return Err(format!(
                "kubectl-view-allocations failed ({:?}): {}",
                other.exit, other.stderr
            )
            .into());
        }
        log(format!(
            "peers run {}: scan {:.2}s {:.1} MiB, kubectl-view-allocations {:.2}s {:.1} MiB",
            run + 1,
            scan.wall_secs,
            scan.rss_mib,
            other.wall_secs,
            other.rss_mib
        ));
        scans.push(scan);
        kvas.push(other);
    }
    // Once more with its default flags, to show what they leave out (tainted nodes, rows of zero).
    let default_args = [
        "--kubeconfig",
        &kubeconfig,
        "-r",
        "gpu",
        "-g",
        "resource,node",
        "-o",
        "csv",
    ];
    let by_default =
        tokio::task::block_in_place(|| measured(&s.alloc.time_bin, kva, &default_args))?;
    let shown = kva_nodes(&by_default.stdout)?;
    let scanned = scan_nodes(&scans.last().expect("a run").stdout)?;
    let viewed = kva_nodes(&kvas.last().expect("a run").stdout)?;
    let truth = truth(exp);
    let result = json!({
        "scan": medians(&scans),
        "view_allocations": medians(&kvas),
        "scan_args": scan_args,
        "view_allocations_args": kva_args,
        "scan_vs_view_allocations": differences(&scanned, &viewed, ("scan", "view_allocations")),
        "scan_vs_truth": differences(&scanned, &truth, ("scan", "truth")),
        "view_allocations_vs_truth": differences(&viewed, &truth, ("view_allocations", "truth")),
        "view_allocations_default_flags": {
            "args": default_args,
            "gpu_nodes_shown": shown.len(),
            "gpu_nodes": truth.len(),
            "allocatable_shown": shown.values().filter_map(|n| n.allocatable).sum::<u64>(),
        },
    });
    Ok(result)
}
