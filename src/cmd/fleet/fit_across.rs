//! `kubectl gpu-inventory fit --gpus G --context A --context B ...` (or `--all-contexts`): where in the fleet
//! can the job start? Each cluster answered by the same gang rule as one; a product a cluster does not have
//! is a "no" there, not an error. Exit code: 2 when some cluster could not be read, else 0 when the job fits
//! in some cluster, else 1.

use std::process::ExitCode;

use serde::Serialize;

use super::across::{ErrorJson, errors};
use super::{ClusterRead, FleetArgs, read_each, report_errors};
use crate::cmd::cli::GlobalArgs;
use crate::cmd::fit::{FitJson, fit_json, read_inventory, request};
use crate::cmd::fit_args::FitArgs;
use crate::cmd::output::stdout::{EXIT_CLOSED_PIPE, emit};
use crate::cmd::output::{formatted, object_name};
use crate::cmd::scan::{EXIT_ERROR, failed};
use crate::inventory::topology::{FitAnswer, FitError, fit};

/// Answers in every context and prints where the job fits.
pub(crate) async fn run(
    global: &GlobalArgs,
    fleet: &FleetArgs,
    args: &FitArgs,
    contexts: &[String],
) -> ExitCode {
    let request = match request(args) {
        Ok(request) => request,
        Err(e) => return failed(&e),
    };
    let reads = read_each(contexts, fleet.per_cluster(), |context| {
        let global = global.for_context(&context);
        let request = &request;
        async move {
            // Contexts are clusters, never a dump: nothing can be missing from one.
            let (inventory, _no_dump) = read_inventory(&global, args).await?;
            Ok(match fit(&inventory.nodes, request) {
                Ok(answer) => answer,
                // Not every cluster has every product: there, the job does not fit.
                Err(unknown @ FitError::UnknownProduct { .. }) => FitAnswer {
                    gpus: request.gpus,
                    product: request.product.clone(),
                    why: Some(unknown.to_string()),
                    ..FitAnswer::default()
                },
                Err(FitError::Invalid(why)) => FitAnswer {
                    why: Some(why),
                    ..FitAnswer::default()
                },
            })
        }
    })
    .await;
    let json = FleetFitJson {
        clusters: reads
            .iter()
            .filter_map(|r| {
                Some(ClusterFitJson {
                    context: &r.context,
                    answer: fit_json(r.result.as_ref().ok()?),
                })
            })
            .collect(),
        errors: errors(&reads),
        fits_in: fits_in(&reads),
    };
    // `-o name`: the nodes of the domains where it fits, cluster after cluster.
    let names = || {
        reads
            .iter()
            .filter_map(|r| r.result.as_ref().ok())
            .flat_map(|a| a.domains.iter().flat_map(|d| d.nodes.iter()))
            .map(|n| object_name("node", "", n))
            .collect()
    };
    let code = if reads.iter().any(|r| r.result.is_err()) {
        ExitCode::from(EXIT_ERROR)
    } else if fits_in(&reads).is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    let code = match formatted(&args.output, &json, names, |_wide| {
        table(args, &reads, !args.no_headers)
    }) {
        Ok(text) => emit(&text, code),
        Err(e) => return failed(&e),
    };
    if code != ExitCode::from(EXIT_CLOSED_PIPE) {
        report_errors(&reads);
    }
    code
}

fn fits_in(reads: &[ClusterRead<FitAnswer>]) -> Vec<&str> {
    reads
        .iter()
        .filter(|r| r.result.as_ref().is_ok_and(|a| a.fits))
        .map(|r| r.context.as_str())
        .collect()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FleetFitJson<'a> {
    clusters: Vec<ClusterFitJson<'a>>,
    errors: Vec<ErrorJson<'a>>,
    fits_in: Vec<&'a str>,
}

#[derive(Serialize)]
struct ClusterFitJson<'a> {
    context: &'a str,
    answer: FitJson<'a>,
}

fn table(args: &FitArgs, reads: &[ClusterRead<FitAnswer>], headers: bool) -> String {
    let product = args.product.as_deref().unwrap_or("any product");
    let mut out = format!(
        "JOB     {} GPUs ({})\n\n",
        args.gpus.unwrap_or_default(),
        crate::runtime::terminal_text::visible(product)
    );
    let rows: Vec<Vec<String>> = reads
        .iter()
        .map(|r| match &r.result {
            Ok(answer) => vec![
                r.context.clone(),
                if answer.fits { "yes" } else { "no" }.to_owned(),
                answer.product.clone().unwrap_or_else(|| "-".into()),
                answer.gpus_per_pod.to_string(),
                answer.level.clone().unwrap_or_else(|| "-".into()),
                answer.domains.len().to_string(),
                answer
                    .domains
                    .iter()
                    .map(|d| d.free_gpus)
                    .max()
                    .map_or_else(|| "-".into(), |n| n.to_string()),
                answer.why.clone().unwrap_or_default(),
            ],
            Err(error) => vec![
                r.context.clone(),
                "error".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                error.clone(),
            ],
        })
        .collect();
    let header = [
        "CLUSTER",
        "FITS",
        "PRODUCT",
        "POD-GPUS",
        "LEVEL",
        "DOMAINS",
        "MOST-FREE",
        "WHY",
    ];
    if !headers {
        return crate::cmd::render::aligned(&header, &rows, false);
    }
    out += &crate::cmd::render::fleet_columns(&header, &rows);
    let fits = fits_in(reads);
    out += &format!(
        "\nFITS IN: {}\n",
        if fits.is_empty() {
            "no cluster read".to_owned()
        } else {
            crate::runtime::terminal_text::visible(&fits.join(", ")).into_owned()
        }
    );
    out
}
