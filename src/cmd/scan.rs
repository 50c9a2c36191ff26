//! `scan`: one read-only pass, from the cluster or from a dump of nodes, pods and DRA objects, printed for humans or
//! scripts (the tables are in `cmd::render`). What a dump's scan could not read is `dump_gaps.rs`'s.

use std::process::ExitCode;

use jiff::Timestamp;

use super::cli::{GlobalArgs, OutputFormat, ScanArgs};
use super::dump_gaps::DumpGaps;
use super::group_by::GroupBy;
use super::output::stdout::emit;
use super::output::{formatted, object_name};
use super::render::{self, Table};
use crate::crd::GpuInventoryStatus;
use crate::error::{Error, Result};
use crate::inventory::model::NVLINK;
use crate::inventory::selector::{LabelSelector, parse_selector};
use crate::inventory::topology::by_domain::level_domains;
use crate::inventory::{Inventory, NodeUniverse};
use crate::publish::content::plan::plan_status;
use crate::publish::content::status::{NodeList, desired_status};
use crate::publish::content::wire::Detail;
use crate::runtime::client::connect;
use crate::sources::dump::{Dump, parse_dump_within, read_dump_bytes};
use crate::sources::pod_traits::ReadFrom;
use crate::sources::{Cluster, OneShot, Readers, Snapshot, Sources, SourcesConfig};

/// Exit code: every GPU node healthy.
pub(crate) const EXIT_HEALTHY: u8 = 0;
/// Exit code: at least one GPU node has an issue.
pub(crate) const EXIT_ISSUES: u8 = 1;
/// Exit code: the scan itself failed (unreadable input, unreachable cluster, bad flag).
pub(crate) const EXIT_ERROR: u8 = 2;

/// Says why a command failed, on stderr with hostile text escaped; [`EXIT_ERROR`].
pub fn failed(e: &Error) -> ExitCode {
    use crate::runtime::terminal_text::visible;
    let text = e.to_string();
    // A kubeconfig's YAML error is the parser's lines (a snippet, a caret under the column): each line is
    // escaped on its own, the line breaks kept. Everything else is one line.
    let shown = match e {
        Error::Kubeconfig(_) => text.lines().map(visible).collect::<Vec<_>>().join("\n"),
        _ => visible(&text).into_owned(),
    };
    super::output::stdout::say(&format!("error: {shown}"));
    ExitCode::from(EXIT_ERROR)
}

/// Runs the scan and prints it; the exit code says whether any issue was found (on every GPU node, listed
/// or not).
pub async fn run(global: &GlobalArgs, args: &ScanArgs) -> ExitCode {
    let extra: Vec<String> = table_level(&args.output, &args.group_by)
        .map(str::to_owned)
        .into_iter()
        .collect();
    match scan_inventory(global, args, &extra).await {
        Ok((inventory, gaps)) => {
            let status = listed_status(
                &inventory,
                args.status_nodes_budget,
                None,
                global.listed_namespace(),
            )
            .expect("a first status is always written");
            let shown = ScanShown {
                format: &args.output,
                group_by: &args.group_by,
                headers: !args.no_headers,
            };
            // Objects of a dump that were not read are named in the JSON and YAML documents.
            let text = match &args.output {
                OutputFormat::Json | OutputFormat::Yaml if gaps.skipped_any() => {
                    Ok(gaps.format_with(&status, &args.output))
                }
                _ => format_scan(&inventory, &status, &shown),
            };
            match text {
                Ok(text) => emit(&text, gaps.exit_code(inventory_exit_code(&inventory))),
                Err(e) => failed(&e),
            }
        }
        Err(e) => failed(&e),
    }
}

/// [`EXIT_ISSUES`] when some GPU node listed in `status` has a degrading issue, else [`EXIT_HEALTHY`]
/// (planned work, `Info`, fails no script).
pub(crate) fn exit_code(status: &GpuInventoryStatus) -> ExitCode {
    let degrading = |n: &crate::crd::GpuNodeEntry| n.issues.iter().any(|i| i.severity != "Info");
    if status.nodes.iter().any(degrading) {
        ExitCode::from(EXIT_ISSUES)
    } else {
        ExitCode::from(EXIT_HEALTHY)
    }
}

/// As [`exit_code`], over every GPU node of `inventory` (a status cut by a budget may not list them all).
fn inventory_exit_code(inventory: &Inventory) -> u8 {
    let degrading = inventory.problem_nodes().any(|n| {
        n.issues
            .iter()
            .any(|i| i.severity() != crate::inventory::model::Severity::Info)
    });
    if degrading { EXIT_ISSUES } else { EXIT_HEALTHY }
}

/// The label a table grouped by a topology level must read as one: `--group-by <key>` with `-o table|wide`.
/// JSON and YAML print the status whatever the grouping, so they read no extra level: `scan -o json` is
/// the same with or without `--group-by`.
pub(crate) fn table_level<'a>(output: &OutputFormat, group_by: &'a GroupBy) -> Option<&'a str> {
    output.is_table().then(|| group_by.extra_level()).flatten()
}

/// The inventory a scan sees and its status; the level a `--group-by` table names is read too.
pub(crate) async fn scan_status(
    global: &GlobalArgs,
    args: &ScanArgs,
) -> Result<(Inventory, GpuInventoryStatus, DumpGaps)> {
    let extra: Vec<String> = table_level(&args.output, &args.group_by)
        .map(str::to_owned)
        .into_iter()
        .collect();
    let (inventory, gaps) = scan_inventory(global, args, &extra).await?;
    let status = listed_status(
        &inventory,
        args.status_nodes_budget,
        None,
        global.listed_namespace(),
    )
    .expect("a first status is always written");
    // What of a dump was not read goes back with the status: the caller's exit code must say so.
    Ok((inventory, status, gaps))
}

/// The inventory a scan sees; `extra_levels` are topology levels beside the table's, Kueue's and
/// `--topology-label` (`fit --level` and `--group-by` add the one asked about; `nvlink` is no label and
/// is left out). With it, what of a dump could not be read (nothing for a cluster): the caller's exit code
/// must say so ([`DumpGaps::exit_code`]).
pub(crate) async fn scan_inventory(
    global: &GlobalArgs,
    args: &ScanArgs,
    extra_levels: &[String],
) -> Result<(Inventory, DumpGaps)> {
    scan_inventory_from(global, args, extra_levels)
        .await
        .map(|(inventory, gaps, _)| (inventory, gaps))
}

/// As [`scan_inventory`], with where it read, for a second look (`fit --plan` reads the pods' traits there).
pub(crate) async fn scan_inventory_from(
    global: &GlobalArgs,
    args: &ScanArgs,
    extra_levels: &[String],
) -> Result<(Inventory, DumpGaps, ReadFrom)> {
    let selector = match &args.selector {
        Some(text) => {
            parse_selector(text).map_err(|e| Error::InvalidFlag(format!("--selector: {e}")))?
        }
        None => LabelSelector::default(),
    };
    let config = SourcesConfig {
        node_label_selector: args.selector.clone(),
        dra_drivers: global.dra_drivers(),
        health: global.health_table(),
        topology_labels: global
            .topology_labels
            .iter()
            .chain(extra_levels.iter().filter(|level| level.as_str() != NVLINK))
            .cloned()
            .collect(),
        utilization: args.utilization.source()?,
    };
    let (snapshot, gaps, from) = read_once(global, args, &Readers::of(&config)).await?;
    // A live scan lists the nodes the selector picks, but pods and claims of the whole cluster; a dump holds
    // what the user put in it. Either way the selector is applied to the nodes here, as the operator does.
    let inventory = snapshot.scan(&selector, NodeUniverse::Cluster, None);
    Ok((inventory, gaps, from))
}

/// What `readers` read once from the dump `args` name, or else from the cluster, listed page by page, and
/// where. What could not be read is said once the cluster answered, naming the context where several are
/// read side by side.
async fn read_once(
    global: &GlobalArgs,
    args: &ScanArgs,
    readers: &Readers,
) -> Result<(Snapshot, DumpGaps, ReadFrom)> {
    if let Some(path) = args.from_file.as_deref() {
        let (dump, source) = read_dump(path, args.input.max_input_bytes)?;
        let gaps = DumpGaps::of(&dump, source);
        let snapshot = Sources::list_once(readers, &OneShot::Dump(&dump)).await?;
        return Ok((snapshot.objects, gaps, ReadFrom::Dump(dump)));
    }
    let connection = connect(&global.client_config()).await?;
    let from = OneShot::Cluster(Cluster {
        client: connection.client,
        url: connection.cluster_url,
        page: args.chunk_size,
    });
    let listed = Sources::list_once(readers, &from).await?;
    let OneShot::Cluster(cluster) = from else {
        unreachable!("made as a cluster above")
    };
    let context = match global.context.last() {
        Some(context) => format!("context {context}: "),
        None => String::new(),
    };
    for note in listed.notes {
        super::output::stdout::say(&format!(
            "warning: {}",
            crate::runtime::terminal_text::visible(&format!("{context}{note}"))
        ));
    }
    Ok((
        listed.objects,
        DumpGaps::default(),
        ReadFrom::Cluster(cluster),
    ))
}

/// The dump at `path` (`-`: stdin), read within `limit` bytes (`--max-input-bytes`), and its name; the objects
/// skipped in it are said on stderr.
fn read_dump(path: &str, limit: u64) -> Result<(Dump, String)> {
    let dump_error = |e: crate::sources::dump::NodeDumpError| Error::InvalidFlag(e.to_string());
    let (bytes, source) = read_dump_bytes(path, limit).map_err(dump_error)?;
    let dump = parse_dump_within(&bytes, &source, limit).map_err(dump_error)?;
    // The text is not needed once read: the scan's memory is the objects'.
    drop(bytes);
    // Objects skipped (an apiVersion not read, a field that does not decode) are said; the rest is scanned.
    for warning in &dump.warnings {
        super::output::stdout::say(&format!(
            "warning: {}",
            crate::runtime::terminal_text::visible(warning)
        ));
    }
    Ok((dump, source))
}

/// The status the operator would write for `inventory`, with every node and each node's DRA devices (the
/// operator's status keeps a budget of entries and no devices: they would not fit a cluster's object),
/// planned against `previous` (`None`: the first one, times stamped now); `None` when it equals `previous`
/// but for its times (the kubectl plugin's `--watch`).
pub(crate) fn status_of(
    inventory: &Inventory,
    previous: Option<&GpuInventoryStatus>,
    namespace: Option<&str>,
) -> Option<GpuInventoryStatus> {
    listed_status(inventory, None, previous, namespace)
}

/// As [`status_of`], listing with `status_nodes_budget` only the GPU nodes the operator's status lists with
/// that budget (`NodeList::WithinShown`: the operator's own cut), each still with its devices; with
/// `namespace` (`-n`), only that namespace's objects.
fn listed_status(
    inventory: &Inventory,
    status_nodes_budget: Option<usize>,
    previous: Option<&GpuInventoryStatus>,
    namespace: Option<&str>,
) -> Option<GpuInventoryStatus> {
    let list = match status_nodes_budget {
        Some(budget) => NodeList::WithinShown(budget, Detail::Devices),
        None => NodeList::All(Detail::Devices),
    };
    let mut desired = desired_status(inventory, None, list);
    if let Some(namespace) = namespace {
        super::namespace_filter::limit_to_namespace(&mut desired, namespace);
    }
    plan_status(desired, previous, Timestamp::now())
}

/// How a scan is shown: `-o`, `--group-by` and `--no-headers`.
pub(crate) struct ScanShown<'a> {
    /// `-o`.
    pub(crate) format: &'a OutputFormat,
    /// `--group-by`: the table's rows.
    pub(crate) group_by: &'a GroupBy,
    /// Not `--no-headers`.
    pub(crate) headers: bool,
}

/// The scan as `scan -o <format> --group-by <grouping>` prints it: JSON and YAML are `status` whole (and
/// jsonpath reads it); `name` is each GPU node's GpuNode; a table groups its rows, a topology level's domains
/// counted on `inventory`'s nodes (every GPU node, also those a status budget leaves out of `status`).
pub(crate) fn format_scan(
    inventory: &Inventory,
    status: &GpuInventoryStatus,
    shown: &ScanShown<'_>,
) -> Result<String> {
    let table = |wide: bool| {
        let table = |table: Table<'_>| render::render(status, table, shown.headers);
        match shown.group_by {
            GroupBy::Node => table(Table::Nodes { wide }),
            GroupBy::Product => table(Table::Products),
            GroupBy::Namespace => table(Table::Namespaces),
            GroupBy::Vendor => table(Table::Vendors),
            GroupBy::Level(level) => table(Table::Domains(&level_domains(&inventory.nodes, level))),
        }
    };
    formatted(shown.format, status, || gpunode_names(status), table)
}

/// `-o name` of a scan: each GPU node listed as its GpuNode, as `kubectl get gpunodes -o name` prints it.
pub(crate) fn gpunode_names(status: &GpuInventoryStatus) -> Vec<String> {
    status
        .nodes
        .iter()
        .map(|n| object_name("gpunode", "homelab.youngju.dev", &n.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::IssueReason;
    use crate::inventory::test_support::{entry, inventory};
    use crate::publish::content::size_budget::json_size;

    /// 300 GPU nodes, every 7th NotReady and every 11th overcommitted: problem nodes spread through the name
    /// order, so the status's cut (problem nodes first) is not a prefix of the names.
    fn fleet() -> Inventory {
        let nodes = (0..300)
            .map(|i| {
                let mut reasons = Vec::new();
                if i % 7 == 3 {
                    reasons.push(IssueReason::NotReady);
                }
                if i % 11 == 5 {
                    reasons.push(IssueReason::Overcommitted);
                }
                let mut node = entry(&format!("gpu-{i:04}"), i % 7 != 3, 8, &reasons);
                node.product = Some("NVIDIA-H100-80GB-HBM3".into());
                node
            })
            .collect();
        inventory(nodes)
    }

    fn names(status: &GpuInventoryStatus) -> Vec<&str> {
        status.nodes.iter().map(|n| n.name.as_str()).collect()
    }

    #[test]
    fn a_scan_with_the_status_budget_lists_the_nodes_the_status_lists() {
        let inventory = fleet();
        // Room for about 40 of the 300 entries: the cut happens, and not every problem node fits.
        let budget = 40
            * json_size(&crate::publish::content::wire::node_entry(
                &inventory.nodes[0],
                &[],
                Detail::Counts,
            ));
        let operator = desired_status(&inventory, None, NodeList::Within(budget));
        let scan = listed_status(&inventory, Some(budget), None, None).expect("a first status");
        assert!(
            operator.omitted_nodes.is_some_and(|n| n > 200),
            "the fleet is cut: {:?}",
            operator.omitted_nodes
        );
        assert_eq!(names(&scan), names(&operator));
        assert_eq!(scan.nodes, operator.nodes, "no devices here: equal entries");
        assert_eq!(
            (scan.omitted_nodes, &scan.nodes_message),
            (operator.omitted_nodes, &operator.nodes_message)
        );
    }

    #[test]
    fn a_scan_without_a_budget_lists_every_node() {
        let inventory = fleet();
        let scan = status_of(&inventory, None, None).expect("a first status");
        assert_eq!(scan.nodes.len(), 300);
        assert_eq!((scan.omitted_nodes, scan.nodes_message), (None, None));
    }

    #[test]
    fn the_exit_code_counts_nodes_a_budget_leaves_out() {
        let inventory = inventory(vec![
            entry("gpu-a", true, 8, &[]),
            entry("gpu-b", false, 8, &[IssueReason::NotReady]),
        ]);
        let listed = listed_status(&inventory, Some(0), None, None).expect("a first status");
        assert!(listed.nodes.is_empty(), "a budget of 0 lists nothing");
        assert_eq!(inventory_exit_code(&inventory), EXIT_ISSUES);
    }
}
