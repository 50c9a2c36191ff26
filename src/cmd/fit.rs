//! `fit`: can a job of G GPUs start now, and where? The inventory `scan` sees (live, or from a dump), asked
//! through the core's gang rule (`inventory::topology::fit`); a share of one GPU is `fit_share`'s. Exit code:
//! 0 it fits, 1 it does not, 2 error.

use std::process::ExitCode;

use serde::Serialize;

use super::cli::{GlobalArgs, ScanArgs};
use super::dump_gaps::DumpGaps;
use super::fit_args::FitArgs;
use super::output::stdout::emit;
use super::output::{OutputFormat, formatted, object_name};
use super::render::aligned;
use super::scan::{EXIT_ERROR, failed, scan_inventory, scan_inventory_from};
use crate::error::{Error, Result};
use crate::inventory::model::NVLINK;
use crate::inventory::topology::domains::levels_of;
use crate::inventory::topology::label_table::HOSTNAME;
use crate::inventory::topology::{FitAnswer, FitError, FitRequest, fit};
use crate::sources::pod_traits::ReadFrom;

/// Exit code: the job fits.
const EXIT_FITS: u8 = 0;
/// Exit code: it does not.
const EXIT_DOES_NOT_FIT: u8 = 1;

/// The answer as JSON prints it (`gpus`, `gpusPerPod`, `product`, `fits`, `level`, `domains`, `why`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FitJson<'a> {
    gpus: u64,
    gpus_per_pod: u64,
    product: Option<&'a str>,
    fits: bool,
    level: Option<&'a str>,
    domains: Vec<DomainJson<'a>>,
    why: Option<&'a str>,
    /// `fit --plan` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<&'a super::fit_plan::PlanJson>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct DomainJson<'a> {
    name: &'a str,
    free_gpus: u64,
    nodes: &'a [String],
}

/// Answers and prints; the exit code says whether it fits.
pub async fn run(global: &GlobalArgs, args: &FitArgs) -> ExitCode {
    match super::fit_share::request(args) {
        Ok(Some(share)) => return super::fit_share::run(global, args, &share).await,
        Ok(None) => {}
        Err(e) => return failed(&e),
    }
    let (answer, inventory, gaps, from) = match answered(global, args).await {
        Ok(answered) => answered,
        Err(e) => return failed(&e),
    };
    let planned = match args.plan {
        true => {
            let namespace = global.listed_namespace();
            super::fit_plan::plan_for(&inventory, &answer, &from, namespace, &args.tolerations)
                .await
        }
        false => None,
    };
    drop(from);
    let plan = planned.as_ref().map(|p| &p.json);
    let text = match format_planned(&answer, plan, &args.output, !args.no_headers) {
        Ok(text) => text,
        Err(e) => return failed(&e),
    };
    // Fail closed: the traits could not be read whole, so there is no plan, and that is an error.
    if let Some(why) = planned
        .as_ref()
        .filter(|p| p.refused)
        .and_then(|p| p.json.why())
    {
        let code = emit(&text, gaps.or(ExitCode::from(EXIT_ERROR)));
        super::output::stdout::say(&format!(
            "error: fit --plan: {}",
            crate::runtime::terminal_text::visible(why)
        ));
        return code;
    }
    let code = if answer.fits {
        EXIT_FITS
    } else {
        EXIT_DOES_NOT_FIT
    };
    emit(&text, gaps.exit_code(code))
}

/// The answer for `args`, the inventory it was found in, what of a dump was not read, and where it was
/// read.
async fn answered(
    global: &GlobalArgs,
    args: &FitArgs,
) -> Result<(FitAnswer, crate::inventory::Inventory, DumpGaps, ReadFrom)> {
    let request = request(args)?;
    let (inventory, gaps, from) = read_inventory_from(global, args).await?;
    if let Some(level) = &request.level {
        known_level(&inventory, level)?;
    }
    let answer = fit(&inventory.nodes, &request).map_err(|e| Error::InvalidFlag(e.to_string()))?;
    Ok((answer, inventory, gaps, from))
}

/// An error when `level` is a label no GPU node carries: a typo (`--level nvlnk`) would otherwise read as
/// "does not fit" (exit 1), and a script would take it for an answer. `nvlink` and the hostname are levels
/// everywhere.
fn known_level(inventory: &crate::inventory::Inventory, level: &str) -> Result<()> {
    if level == NVLINK || level == HOSTNAME {
        return Ok(());
    }
    let nodes: Vec<&crate::inventory::model::NodeInventory> =
        inventory.nodes.iter().map(AsRef::as_ref).collect();
    let levels = levels_of(&nodes);
    if levels.contains(&level) {
        return Ok(());
    }
    let mut known = vec![HOSTNAME, NVLINK];
    known.extend(levels.iter().filter(|l| **l != NVLINK));
    Err(Error::InvalidFlag(format!(
        "--level {}: no GPU node carries this label, so it is no topology level here (a typo?); the levels \
         here: {}",
        crate::runtime::terminal_text::visible(level),
        crate::runtime::terminal_text::visible(&known.join(", "))
    )))
}

/// The request `args` ask, checked before any cluster is read (a `--gpus 0` is refused once, not per cluster).
pub(crate) fn request(args: &FitArgs) -> Result<FitRequest> {
    if let Some(level) = args.level.as_deref()
        && level.trim().is_empty()
    {
        return Err(Error::InvalidFlag(
            "--level: empty; name `nvlink` or a node label key".to_owned(),
        ));
    }
    let Some(gpus) = args.gpus else {
        return Err(Error::InvalidFlag(
            "--gpus: a share of a GPU (--gpu-memory, --fraction, --mig-profile) is answered one cluster at a \
             time; ask without --all-contexts, or with --context"
                .to_owned(),
        ));
    };
    let request = FitRequest {
        gpus,
        product: args.product.clone(),
        gpus_per_pod: args.gpus_per_pod,
        level: args.level.as_ref().map(|l| l.trim().to_owned()),
        tolerations: args.tolerations.clone(),
    };
    match fit(&[], &request) {
        Err(FitError::Invalid(why)) => Err(Error::InvalidFlag(why)),
        _ => Ok(request),
    }
}

/// The inventory `scan` would see, with the level `--level` names read too, and what of a dump was not read.
pub(crate) async fn read_inventory(
    global: &GlobalArgs,
    args: &FitArgs,
) -> Result<(crate::inventory::Inventory, DumpGaps)> {
    let scan_args = ScanArgs {
        input: args.input.clone(),
        ..ScanArgs::of_query(args.from_file.clone(), args.selector.clone())
    };
    let extra: Vec<String> = args.level.iter().cloned().collect();
    scan_inventory(global, &scan_args, &extra).await
}

/// As [`read_inventory`], with where it was read: `--plan` reads the pods' traits there.
async fn read_inventory_from(
    global: &GlobalArgs,
    args: &FitArgs,
) -> Result<(crate::inventory::Inventory, DumpGaps, ReadFrom)> {
    let scan_args = ScanArgs {
        input: args.input.clone(),
        ..ScanArgs::of_query(args.from_file.clone(), args.selector.clone())
    };
    let extra: Vec<String> = args.level.iter().cloned().collect();
    scan_inventory_from(global, &scan_args, &extra).await
}

/// The answer as `-o` asks: the table (only the domains' rows unless `headers`), or the JSON document
/// (json, yaml, jsonpath); `name` lists the nodes of the domains where it fits (`node/NAME`). `fit --plan`'s
/// plan goes under it.
fn format_planned(
    answer: &FitAnswer,
    plan: Option<&super::fit_plan::PlanJson>,
    output: &OutputFormat,
    headers: bool,
) -> Result<String> {
    let names = || {
        let mut nodes: Vec<String> = answer
            .domains
            .iter()
            .flat_map(|d| d.nodes.iter().map(|n| object_name("node", "", n)))
            .collect();
        nodes.dedup();
        nodes
    };
    let mut json = fit_json(answer);
    json.plan = plan;
    formatted(output, &json, names, |_wide| {
        let mut out = table(answer, headers);
        if let Some(plan) = plan.filter(|_| headers) {
            out.push_str(&super::fit_plan::table(plan));
        }
        out
    })
}

/// The answer as JSON prints it.
pub(crate) fn fit_json(answer: &FitAnswer) -> FitJson<'_> {
    FitJson {
        gpus: answer.gpus,
        gpus_per_pod: answer.gpus_per_pod,
        product: answer.product.as_deref(),
        fits: answer.fits,
        level: answer.level.as_deref(),
        domains: answer
            .domains
            .iter()
            .map(|d| DomainJson {
                name: &d.name,
                free_gpus: d.free_gpus,
                nodes: &d.nodes,
            })
            .collect(),
        why: answer.why.as_deref(),
        plan: None,
    }
}

fn table(answer: &FitAnswer, headers: bool) -> String {
    use crate::runtime::terminal_text::visible;
    let rows: Vec<Vec<String>> = answer
        .domains
        .iter()
        .map(|d| {
            vec![
                d.name.clone(),
                d.free_gpus.to_string(),
                d.nodes.len().to_string(),
            ]
        })
        .collect();
    let header = ["DOMAIN", "FREE-GPUS", "NODES"];
    if !headers {
        return aligned(&header, &rows, false);
    }
    let product = answer.product.as_deref().unwrap_or("any product");
    let pods = answer.gpus.div_ceil(answer.gpus_per_pod.max(1));
    let mut out = format!(
        "JOB     {} GPUs as {pods} pod(s) of {} ({})\n",
        answer.gpus,
        answer.gpus_per_pod,
        visible(product)
    );
    let level = answer.level.as_deref().unwrap_or("-");
    if !answer.fits {
        out.push_str(&format!(
            "FITS    no (level {})\nWHY     {}\n",
            visible(level),
            visible(answer.why.as_deref().unwrap_or("-"))
        ));
        return out;
    }
    out.push_str(&format!(
        "FITS    yes, in {} domain(s) at level {}\n\n",
        answer.domains.len(),
        visible(level)
    ));
    // Through the shared columns: a domain name of any length is cut with a mark, never a format width.
    out.push_str(&aligned(&header, &rows, true));
    out
}
