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
use super::scan::{failed, scan_inventory};
use crate::error::{Error, Result};
use crate::inventory::Inventory;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::topology::{FitRequest, fit};
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
    let drawn = scan_inventory(global, &scan_args, &extra)
        .await
        .and_then(|(inventory, gaps)| {
            let map = map_of(&inventory, args)?;
            let fits = map.job.as_ref().is_none_or(|j| j.fits);
            Ok((shown(&map, args, colour)?, fits, gaps))
        });
    match drawn {
        Ok((text, fits, gaps)) => emit(&text, gaps.exit_code(u8::from(!fits))),
        Err(e) => failed(&e),
    }
}

/// The map `args` ask for: the groups, and the job of `--gpus` (with `--plan`, its plan) laid over them.
fn map_of(inventory: &Inventory, args: &MapArgs) -> Result<Map> {
    let job = match args.gpus {
        Some(gpus) => Some(job(inventory, gpus, args.product.clone(), args.plan)?),
        None => None,
    };
    Ok(picture(inventory, &args.group_by, job))
}

/// A job of `gpus` GPUs in one pod on one node, asked of `fit` as `fit --gpus G --gpus-per-pod G --level
/// kubernetes.io/hostname` would, with `fit --plan`'s plan when it fits nowhere and `plan` is asked.
fn job(inventory: &Inventory, gpus: u64, product: Option<String>, plan: bool) -> Result<Job> {
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
    Ok(Job {
        gpus,
        fits: answer.fits,
        nodes,
        plan: plan.then(|| plan_for(inventory, &answer)).flatten(),
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
