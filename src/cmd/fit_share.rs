//! `fit` for a share of one GPU (`--gpu-memory`, `--fraction`, `--mig-profile`): where one pod asking for it
//! can start now, over the inventory `scan` sees, by the core's rule (`inventory::allocation::share_fit`).
//! Exit code: 0 it fits, 1 it does not, 2 error.

use std::process::ExitCode;

use serde::Serialize;

use super::cli::{GlobalArgs, ScanArgs};
use super::fit_args::FitArgs;
use super::output::stdout::emit;
use super::output::{OutputFormat, formatted, object_name};
use super::render::aligned;
use super::scan::{failed, scan_inventory};
use crate::error::{Error, Result};
use crate::inventory::allocation::share_fit::{Share, ShareAnswer, ShareRequest, fit_share};
use crate::inventory::model::{Equivalent, quantity_value};

/// The share `args` ask for, if they ask for one; an error for a malformed one, before any cluster is read.
pub(crate) fn request(args: &FitArgs) -> Result<Option<ShareRequest>> {
    let share = if let Some(memory) = &args.gpu_memory {
        Share::MemoryMib(memory_mib(memory)?)
    } else if let Some(fraction) = &args.fraction {
        Share::Fraction(fraction_milli(fraction)?)
    } else if let Some(profile) = &args.mig_profile {
        Share::MigProfile(mig_profile(profile)?)
    } else {
        return Ok(None);
    };
    Ok(Some(ShareRequest {
        share,
        product: args.product.clone(),
        tolerations: args.tolerations.clone(),
    }))
}

/// MiB from `20Gi`, `20480Mi`, `21474836480` with a unit, or a bare number of MiB.
fn memory_mib(text: &str) -> Result<u64> {
    let text = text.trim();
    let bad = || {
        Error::InvalidFlag(format!(
            "--gpu-memory {text:?}: not a quantity of memory above 0 (`20Gi`, `20480Mi`, or a number of MiB)"
        ))
    };
    let mib = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        text.parse::<u64>().map_err(|_| bad())?
    } else {
        let bytes = quantity_value(text)
            .filter(|b| b.is_finite())
            .ok_or_else(bad)?;
        (bytes / f64::from(1u32 << 20)).ceil() as u64
    };
    if mib == 0 {
        return Err(bad());
    }
    Ok(mib)
}

/// Thousandths of a GPU from `0.25`, above 0 and at most 1.
fn fraction_milli(text: &str) -> Result<u64> {
    let value: f64 = text.trim().parse().unwrap_or(f64::NAN);
    if !(value > 0.0 && value <= 1.0) {
        return Err(Error::InvalidFlag(format!(
            "--fraction {text:?}: a fraction of one GPU above 0 and at most 1 (`0.25`)"
        )));
    }
    Ok(((value * 1000.0).round() as u64).max(1))
}

/// `1g.10gb` from itself, `mig-1g.10gb` or `nvidia.com/mig-1g.10gb`.
fn mig_profile(text: &str) -> Result<String> {
    let profile = text.trim();
    let profile = profile.rsplit('/').next().unwrap_or(profile);
    let profile = profile.strip_prefix("mig-").unwrap_or(profile);
    let well_formed = profile.split_once('g').is_some_and(|(slices, _)| {
        !slices.is_empty() && slices.bytes().all(|b| b.is_ascii_digit())
    }) || profile.contains(".");
    if profile.is_empty() || !well_formed {
        return Err(Error::InvalidFlag(format!(
            "--mig-profile {text:?}: a MIG profile as the device plugin names it (`1g.10gb`, `3g.40gb`)"
        )));
    }
    Ok(profile.to_owned())
}

/// Answers and prints; the exit code says whether it fits.
pub(crate) async fn run(global: &GlobalArgs, args: &FitArgs, request: &ShareRequest) -> ExitCode {
    let scan_args = ScanArgs {
        input: args.input.clone(),
        ..ScanArgs::of_query(args.from_file.clone(), args.selector.clone())
    };
    match scan_inventory(global, &scan_args, &[]).await {
        Ok((inventory, gaps)) => {
            let answer = fit_share(&inventory.nodes, request);
            match format_answer(request, &answer, &args.output, !args.no_headers) {
                Ok(text) => emit(&text, gaps.exit_code(u8::from(!answer.fits))),
                Err(e) => failed(&e),
            }
        }
        Err(e) => failed(&e),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShareJson<'a> {
    request: RequestJson<'a>,
    product: Option<&'a str>,
    fits: bool,
    places: Vec<PlaceJson<'a>>,
    why: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RequestJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none", rename = "gpuMemoryMiB")]
    gpu_memory_mib: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fraction: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mig_profile: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PlaceJson<'a> {
    node: &'a str,
    gpu: Option<&'a str>,
    scheme: &'a str,
    count: u64,
    free: &'a str,
}

/// The answer as `-o` asks: the table (only the places' rows unless `headers`) or the JSON document (json,
/// yaml, jsonpath); `name` lists the nodes that take it (`node/NAME`).
pub(crate) fn format_answer(
    request: &ShareRequest,
    answer: &ShareAnswer,
    output: &OutputFormat,
    headers: bool,
) -> Result<String> {
    let json = ShareJson {
        request: RequestJson {
            gpu_memory_mib: match request.share {
                Share::MemoryMib(mib) => Some(mib),
                _ => None,
            },
            fraction: match request.share {
                Share::Fraction(milli) => Some(Equivalent::decimal(milli)),
                _ => None,
            },
            mig_profile: match &request.share {
                Share::MigProfile(p) => Some(p),
                _ => None,
            },
        },
        product: request.product.as_deref(),
        fits: answer.fits,
        places: answer
            .places
            .iter()
            .map(|p| PlaceJson {
                node: &p.node,
                gpu: p.gpu.as_deref(),
                scheme: &p.scheme,
                count: p.count,
                free: &p.free,
            })
            .collect(),
        why: answer.why.as_deref(),
    };
    let names = || {
        let mut nodes: Vec<String> = answer
            .places
            .iter()
            .map(|p| object_name("node", "", &p.node))
            .collect();
        nodes.dedup();
        nodes
    };
    formatted(output, &json, names, |_wide| {
        table(request, answer, headers)
    })
}

fn table(request: &ShareRequest, answer: &ShareAnswer, headers: bool) -> String {
    use crate::runtime::terminal_text::visible;
    let header = ["NODE", "GPU", "SCHEME", "COUNT", "FREE"];
    let rows: Vec<Vec<String>> = answer
        .places
        .iter()
        .map(|p| {
            vec![
                p.node.clone(),
                p.gpu.clone().unwrap_or_else(|| "-".to_owned()),
                p.scheme.clone(),
                p.count.to_string(),
                p.free.clone(),
            ]
        })
        .collect();
    if !headers {
        return aligned(&header, &rows, false);
    }
    let product = request.product.as_deref().unwrap_or("any product");
    let mut out = format!("POD     {} ({})\n", request.share, visible(product));
    if !answer.fits {
        out.push_str(&format!(
            "FITS    no\nWHY     {}\n",
            visible(answer.why.as_deref().unwrap_or("-"))
        ));
        return out;
    }
    let gpus: u64 = answer.places.iter().map(|p| p.count).sum();
    let nodes = {
        let mut names: Vec<&str> = answer.places.iter().map(|p| p.node.as_str()).collect();
        names.dedup();
        names.len()
    };
    out.push_str(&format!(
        "FITS    yes, on {gpus} GPU(s) or device(s) of {nodes} node(s)\n\n"
    ));
    out.push_str(&aligned(&header, &rows, true));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_fractions_and_profiles_are_read_and_bad_ones_refused() {
        assert_eq!(memory_mib("20Gi").unwrap(), 20480);
        assert_eq!(memory_mib("20480Mi").unwrap(), 20480);
        assert_eq!(memory_mib("3000").unwrap(), 3000);
        for bad in ["", "0", "lots", "-1Gi", "0Mi"] {
            assert!(memory_mib(bad).is_err(), "{bad}");
        }
        assert_eq!(fraction_milli("0.25").unwrap(), 250);
        assert_eq!(fraction_milli("1").unwrap(), 1000);
        for bad in ["0", "1.5", "-0.1", "half", "NaN"] {
            assert!(fraction_milli(bad).is_err(), "{bad}");
        }
        assert_eq!(mig_profile("nvidia.com/mig-1g.10gb").unwrap(), "1g.10gb");
        assert_eq!(mig_profile("3g.40gb").unwrap(), "3g.40gb");
        assert!(mig_profile("").is_err());
        assert!(mig_profile("big").is_err());
    }
}
