//! `quotas`: Kueue's quotas against the GPUs, and the pending workloads that can never be admitted, as the
//! operator would publish them (`status.quotas`, `status.workloadIssues`), from the cluster or a dump.
//! Exit code: 0 every promise holds, 1 some quota or workload issue, 2 error.

use std::process::ExitCode;

use serde::Serialize;

use super::cli::{GlobalArgs, ScanArgs};
use super::dump_gaps::DumpGaps;
use super::quotas_args::{QuotasArgs, QuotasOutput};
use super::render;
use super::scan::{failed, scan_inventory};
use crate::crd::{QuotaEntry, WorkloadIssueEntry};
use crate::error::{Error, Result};
use crate::publish::content::status::{NodeList, desired_status};

/// What `-o json|yaml` prints.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct QuotasJson {
    quotas: Vec<QuotaEntry>,
    workload_issues: Vec<WorkloadIssueEntry>,
    workload_issue_count: u32,
}

/// Prints the quotas; the exit code says whether any promise fails.
pub async fn run(global: &GlobalArgs, args: &QuotasArgs) -> ExitCode {
    match report(global, args).await {
        Ok((text, issues, gaps)) => {
            print!("{text}");
            gaps.exit_code(u8::from(issues))
        }
        Err(e) => failed(&e),
    }
}

/// The text to print, whether there is any issue, and what of a dump was not read.
async fn report(global: &GlobalArgs, args: &QuotasArgs) -> Result<(String, bool, DumpGaps)> {
    let scan_args = ScanArgs {
        input: args.input.clone(),
        ..ScanArgs::of_query(args.from_file.clone(), args.selector.clone())
    };
    let (inventory, gaps) = scan_inventory(global, &scan_args, &[]).await?;
    let status = desired_status(&inventory, None, NodeList::Within(0));
    let issues =
        status.quotas.iter().any(|q| !q.issues.is_empty()) || status.workload_issue_count > 0;
    let json = QuotasJson {
        quotas: status.quotas.clone(),
        workload_issues: status.workload_issues.clone(),
        workload_issue_count: status.workload_issue_count,
    };
    let text = match args.output {
        QuotasOutput::Json => {
            serde_json::to_string_pretty(&json).map_err(|e| Error::InvalidFlag(e.to_string()))? + "\n"
        }
        QuotasOutput::Yaml => serde_saphyr::to_string(&json).map_err(|e| Error::InvalidFlag(e.to_string()))?,
        QuotasOutput::Table => render::quotas(&status).unwrap_or_else(|| {
            "no Kueue quotas: Kueue is not installed here, or has no ResourceFlavor or ClusterQueue \
             (nothing to check)\n"
                .to_owned()
        }),
    };
    Ok((text, issues, gaps))
}
