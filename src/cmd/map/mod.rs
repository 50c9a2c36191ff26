//! `kubectl gpu-inventory map`: the fleet as rows of cells, one cell per GPU, grouped by NVLink domain or
//! network block (else by product), and with `--gpus G --plan` `fit --plan`'s moves drawn over it
//! (docs/fragmentation.md, "The map"). The cells are `cells`', the groups and the plan's overlay
//! `picture`'s, the text `draw`'s and `prose`'s: all pure, so the tests draw fleets of any size without a
//! cluster. Exit code: 0 drawn (with `--gpus`: 0 the job fits now, 1 it does not), 2 error, 3 a dump not
//! read in full.

mod cells;
mod draw;
pub(crate) mod picture;
mod prose;
#[cfg(test)]
mod tests;
mod view;

use std::process::ExitCode;

use super::cli::{GlobalArgs, ScanArgs};
use super::fit_plan::plan_for;
use super::map_args::MapArgs;
use super::output::stdout::emit;
use super::output::{formatted, object_name};
use super::scan::{failed, scan_inventory_from};
use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::topology::{FitRequest, fit};
use crate::sources::pod_traits::ReadFrom;
use picture::{Grouping, Job, Map, picture};
use view::View;

/// Reads the fleet, draws it; `colour`: the plugin's decision for stdout (`--color`, NO_COLOR, TERM).
pub(crate) async fn run(global: &GlobalArgs, args: &MapArgs, colour: bool) -> ExitCode {
    let scan_args = ScanArgs {
        input: args.input.clone(),
        utilization: args.utilization.clone(),
        ..ScanArgs::of_query(args.from_file.clone(), args.selector.clone())
    };
    // The level `--group-by` names is read as one (`nvlink` and the known labels are read anyway).
    let extra: Vec<String> = match &args.group_by {
        Grouping::Level(level) => vec![level.clone()],
        _ => Vec::new(),
    };
    let drawn = match scan_inventory_from(global, &scan_args, &extra).await {
        Ok((inventory, gaps, from)) => {
            let namespace = global.listed_namespace();
            map_of(&inventory, args, &from, namespace)
                .await
                .and_then(|map| {
                    let fits = map.job.as_ref().is_none_or(|j| j.fits);
                    Ok((shown(&map, args, colour)?, fits, gaps))
                })
        }
        Err(e) => Err(e),
    };
    match drawn {
        Ok((text, fits, gaps)) => emit(&text, gaps.exit_code(u8::from(!fits))),
        Err(e) => failed(&e),
    }
}

/// The map `args` ask for: the groups, and the job of `--gpus` (with `--plan`, its plan, the pods' traits
/// read from `from`; with `-n`, only `namespace`'s pods moved) laid over them.
async fn map_of(
    inventory: &Inventory,
    args: &MapArgs,
    from: &ReadFrom,
    namespace: Option<&str>,
) -> Result<Map> {
    let job = match args.gpus {
        Some(gpus) => {
            let plan = args.plan.then_some(PlanFrom { from, namespace });
            Some(job(inventory, gpus, args.product.clone(), plan).await?)
        }
        None => None,
    };
    Ok(picture(inventory, &args.group_by, job))
}

/// Where a plan reads the pods' traits, and the one namespace whose pods it may move (`-n`).
struct PlanFrom<'a> {
    from: &'a ReadFrom,
    namespace: Option<&'a str>,
}

/// A job of `gpus` GPUs in one pod on one node, asked of `fit` as `fit --gpus G --gpus-per-pod G --level
/// kubernetes.io/hostname` would, with `fit --plan`'s plan when it fits nowhere and a plan is asked. A plan
/// refused (the pods' traits not read whole: fail closed) is an error.
async fn job(
    inventory: &Inventory,
    gpus: u64,
    product: Option<String>,
    plan: Option<PlanFrom<'_>>,
) -> Result<Job> {
    let request = FitRequest {
        gpus,
        product,
        gpus_per_pod: Some(gpus),
        level: Some(HOSTNAME.to_owned()),
        tolerations: Vec::new(),
    };
    let answer =
        fit(&inventory.nodes, &request).map_err(|e| Error::InvalidFlag(format!("--gpus: {e}")))?;
    let nodes = answer
        .domains
        .iter()
        .flat_map(|d| d.nodes.iter().cloned())
        .collect();
    let planned = match plan {
        Some(PlanFrom { from, namespace }) => {
            plan_for(inventory, &answer, from, namespace, &[]).await
        }
        None => None,
    };
    if let Some(refused) = planned.as_ref().filter(|p| p.refused) {
        return Err(Error::InvalidFlag(format!(
            "map --plan: {}",
            refused
                .json
                .why()
                .unwrap_or("the pods' traits could not be read")
        )));
    }
    Ok(Job {
        gpus,
        fits: answer.fits,
        nodes,
        plan: planned.map(|p| p.json),
    })
}

/// The map as `-o` asks: the picture, the map as a document, or `node/NAME` per node.
fn shown(map: &Map, args: &MapArgs, colour: bool) -> Result<String> {
    let names = || {
        map.groups
            .iter()
            .flat_map(|g| &g.nodes)
            .map(|n| object_name("node", "", &n.name))
            .collect()
    };
    let view = View {
        width: args.width,
        colour,
        headers: !args.no_headers,
    };
    formatted(&args.output, map, names, |_wide| draw::draw(map, &view))
}
