//! `fit` against the truth in the scale scenario (issue #42): after each run, the operator stopped, one
//! `gpu-inventory-operator fit` under GNU time (wall, peak RSS, CPU) asks where a job of H100 GPUs in pods of
//! [`PER_POD`] (2: the fleet's H100 nodes are rarely empty) can start within one NVLink domain, and its domains
//! are held against the driver's own count over the fleet as the run left it: per rack (`nvidia.com/gpu.clique`, scale_fleet.rs's topology labels), the H100
//! nodes that are not cordoned each offer `floor(free / 2) * 2` (the gang rule of docs/topology.md; the fleet's
//! tainted nodes carry `nvidia.com/gpu=present:NoSchedule`, which a pod asking for GPUs tolerates). The job
//! asks for what the best rack offers by that count (at least one pod), so that the answer is neither every
//! rack nor none: exactly the racks that offer the most.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{Value, json};
use testkit::cluster::topology_labels;
use testkit::settings::bench::Settings;

use crate::alloc_fleet::GpuNodeSpec;
use crate::alloc_truth::Expected;
use crate::peers::{measured, medians};
use crate::{Res, log};

/// The job: GPUs per pod, product, level.
const PER_POD: u64 = 2;
const PRODUCT: &str = "NVIDIA-H100-80GB-HBM3";
const LEVEL: &str = "nvlink";

/// Each device-plugin GPU node's NVLink clique (its `nvidia.com/gpu.clique` label), by name.
pub fn cliques(gpu_nodes: &[GpuNodeSpec]) -> HashMap<String, String> {
    gpu_nodes
        .iter()
        .enumerate()
        .map(|(j, n)| {
            let [(_, clique), ..] = topology_labels(j);
            (n.name.clone(), clique)
        })
        .collect()
}

/// What each rack offers the job, by the driver's count: clique -> GPUs.
fn offered(expected: &Expected, cliques: &HashMap<String, String>) -> BTreeMap<String, u64> {
    let mut offered: BTreeMap<String, u64> = BTreeMap::new();
    for (name, spec) in &expected.nodes {
        let Some(clique) = cliques.get(name) else {
            continue;
        };
        if spec.product == PRODUCT && !spec.cordoned {
            *offered.entry(clique.clone()).or_default() += expected.free(name) / PER_POD * PER_POD;
        }
    }
    offered
}

/// One `fit` run, and its domains against [`truth`].
pub fn compare(s: &Settings, expected: &Expected, cliques: &HashMap<String, String>) -> Res<Value> {
    let mut truth = offered(expected, cliques);
    let asked = truth.values().copied().max().unwrap_or(0).max(PER_POD);
    truth.retain(|_, gpus| *gpus >= asked);
    let kubeconfig = s.kubeconfig.to_string_lossy().into_owned();
    let (gpus, per_pod) = (asked.to_string(), PER_POD.to_string());
    let args = [
        "fit",
        "--gpus",
        &gpus,
        "--gpus-per-pod",
        &per_pod,
        "--product",
        PRODUCT,
        "--level",
        LEVEL,
        "-o",
        "json",
        "--kubeconfig",
        &kubeconfig,
    ];
    let run = tokio::task::block_in_place(|| measured(&s.alloc.time_bin, &s.operator_bin, &args))?;
    // 0: it fits; 1: it does not; anything else an error.
    if !matches!(run.exit, Some(0 | 1)) {
        return Err(format!("fit failed ({:?}): {}", run.exit, run.stderr).into());
    }
    let answer: Value =
        serde_json::from_slice(&run.stdout).map_err(|e| format!("fit -o json: not JSON ({e})"))?;
    let said: BTreeMap<String, u64> = answer["domains"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| Some((d["name"].as_str()?.to_owned(), d["freeGpus"].as_u64()?)))
        .collect();
    let domains: BTreeSet<&String> = said.keys().chain(truth.keys()).collect();
    let differing: Vec<&String> = domains
        .into_iter()
        .filter(|k| said.get(*k) != truth.get(*k))
        .collect();
    let differ_count = differing.len();
    let differ: Vec<Value> = differing
        .iter()
        .take(10)
        .map(|k| json!({ "domain": k, "fit": said.get(*k), "truth": truth.get(*k) }))
        .collect();
    log(format!(
        "fit {asked} GPUs: {:.2}s {:.1} MiB; {} domains fit ({} by the driver's count), {differ_count} differ",
        run.wall_secs,
        run.rss_mib,
        said.len(),
        truth.len()
    ));
    Ok(json!({
        "fit": medians(std::slice::from_ref(&run)),
        "args": args,
        "gpus": asked,
        "fits": answer["fits"],
        "domains": said.len(),
        "truth_domains": truth.len(),
        "differ": differ_count,
        "first_differences": differ,
    }))
}
