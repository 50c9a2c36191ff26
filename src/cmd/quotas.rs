//! `quotas`: Kueue's quotas against the GPUs, and the pending workloads that can never be admitted, as the
//! operator would publish them (`status.quotas`, `status.workloadIssues`), from the cluster or a dump.
//! Exit code: 0 every promise holds, 1 some quota or workload issue, 2 error.

use std::process::ExitCode;

use serde::Serialize;

use super::cli::{GlobalArgs, ScanArgs};
use super::dump_gaps::DumpGaps;
use super::output::stdout::emit;
use super::output::{formatted, object_name};
use super::quotas_args::QuotasArgs;
use super::render;
use super::scan::{failed, scan_inventory};
use crate::crd::{QuotaEntry, WorkloadIssueEntry};
use crate::error::Result;
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
        Ok((text, issues, gaps)) => emit(&text, gaps.exit_code(u8::from(issues))),
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
    let mut status = desired_status(&inventory, None, NodeList::Within(0));
    let issues =
        status.quotas.iter().any(|q| !q.issues.is_empty()) || status.workload_issue_count > 0;
    if let Some(namespace) = global.listed_namespace() {
        // The flavors' quotas are the cluster's (ClusterQueues are cluster-scoped); the Workloads listed are
        // the namespace's. The exit code stays the cluster's, as scan's.
        super::namespace_filter::limit_to_namespace(&mut status, namespace);
    }
    let json = QuotasJson {
        quotas: status.quotas.clone(),
        workload_issues: status.workload_issues.clone(),
        workload_issue_count: status.workload_issue_count,
    };
    // `-o name`: each flavor listed, then each workload that cannot fit (kubectl's `kind.group/name`; a
    // Workload's namespace is in the JSON, as `kubectl get -A -o name` leaves it out).
    let names = || {
        let mut names: Vec<String> = json
            .quotas
            .iter()
            .map(|q| object_name("resourceflavor", "kueue.x-k8s.io", &q.flavor))
            .collect();
        names.dedup();
        names.extend(json.workload_issues.iter().map(|w| {
            let name = w.workload.rsplit('/').next().unwrap_or(&w.workload);
            object_name("workload", "kueue.x-k8s.io", name)
        }));
        names
    };
    let table = |_wide: bool| {
        render::quotas(&status, !args.no_headers).unwrap_or_else(|| {
            if args.no_headers {
                return String::new();
            }
            "no Kueue quotas: Kueue is not installed here, or has no ResourceFlavor or ClusterQueue \
             (nothing to check)\n"
                .to_owned()
        })
    };
    let text = formatted(&args.output, &json, names, table)?;
    Ok((text, issues, gaps))
}
