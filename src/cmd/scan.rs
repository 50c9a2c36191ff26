//! `scan`: one read-only pass, from the cluster or from a node dump, printed for humans or scripts.

use std::io::Read;
use std::process::ExitCode;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::core::Selector;

use super::cli::{GlobalArgs, OutputFormat, ScanArgs};
use crate::crd::{GpuInventoryStatus, GpuNodeEntry};
use crate::error::{Error, Result};
use crate::inventory::plan::plan_status;
use crate::inventory::scanner::scan;
use crate::inventory::selector::parse_selector;
use crate::inventory::status::desired_status;
use crate::runtime::client::connect;
use crate::sources::dump::parse_node_dump;

/// Exit code: every GPU node healthy.
pub const EXIT_HEALTHY: u8 = 0;
/// Exit code: at least one GPU node has an issue.
pub const EXIT_ISSUES: u8 = 1;
/// Exit code: the scan itself failed (unreadable input, unreachable cluster, bad flag).
pub const EXIT_ERROR: u8 = 2;

/// Runs the scan and prints it; the exit code says whether any issue was found.
pub async fn run(global: &GlobalArgs, args: &ScanArgs) -> ExitCode {
    let scanned = scan_status(global, args).await;
    if let Ok(status) = &scanned {
        print(status, args.output);
    }
    match scanned {
        Ok(status) if status.nodes.iter().any(|n| !n.issues.is_empty()) => {
            ExitCode::from(EXIT_ISSUES)
        }
        Ok(_) => ExitCode::from(EXIT_HEALTHY),
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

async fn scan_status(global: &GlobalArgs, args: &ScanArgs) -> Result<GpuInventoryStatus> {
    let selector = match &args.selector {
        Some(text) => {
            parse_selector(text).map_err(|e| Error::InvalidFlag(format!("--selector: {e}")))?
        }
        None => Selector::default(),
    };
    let nodes = match args.from_file.as_deref() {
        Some(path) => read_dump(path)?,
        None => list_nodes(global, args.selector.as_deref()).await?,
    };
    let desired = desired_status(&scan(&nodes, &selector), None);
    // Planned against nothing on a server: the status the operator would write first, times stamped now.
    let plan = plan_status(desired, None, Timestamp::now());
    Ok(plan
        .write
        .expect("a status planned against nothing is always written"))
}

fn read_dump(path: &str) -> Result<Vec<Node>> {
    let (bytes, source) = if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Error::InvalidFlag(format!("reading stdin: {e}")))?;
        (bytes, "<stdin>".to_owned())
    } else {
        let bytes =
            std::fs::read(path).map_err(|e| Error::InvalidFlag(format!("reading {path}: {e}")))?;
        (bytes, path.to_owned())
    };
    parse_node_dump(&bytes, &source).map_err(|e| Error::InvalidFlag(e.to_string()))
}

async fn list_nodes(global: &GlobalArgs, selector: Option<&str>) -> Result<Vec<Node>> {
    let connection = connect(&global.client_config()).await?;
    let api: Api<Node> = Api::all(connection.client);
    let mut params = ListParams::default();
    if let Some(selector) = selector {
        params = params.labels(selector);
    }
    let list = api.list(&params).await.map_err(Error::kube(format!(
        "listing nodes on {}",
        connection.cluster_url
    )))?;
    Ok(list.items)
}

fn print(status: &GpuInventoryStatus, format: OutputFormat) {
    let text = match format {
        OutputFormat::Json => {
            serde_json::to_string_pretty(status).expect("status serializes") + "\n"
        }
        OutputFormat::Yaml => serde_saphyr::to_string(status).expect("status serializes"),
        OutputFormat::Table => table(status),
        OutputFormat::Wide => wide(status),
    };
    print!("{text}");
}

/// Marks a product named by a cloud-provider label rather than by GPU Feature Discovery.
const CLOUD_MARK: &str = "*";

/// The article's table, plus an ISSUES column and one line per issue below it.
pub fn table(status: &GpuInventoryStatus) -> String {
    render(status, false)
}

/// The table with SOURCES and MIG/SHARING columns, and each node's notes below it.
pub fn wide(status: &GpuInventoryStatus) -> String {
    render(status, true)
}

/// Whether the node's product came from a cloud-provider label.
fn cloud_product(node: &GpuNodeEntry) -> bool {
    node.product.is_some()
        && node
            .derived_from
            .get("product")
            .is_some_and(|from| !from.starts_with("nvidia.com/"))
}

fn product_cell(node: &GpuNodeEntry) -> String {
    match &node.product {
        Some(product) if cloud_product(node) => format!("{product}{CLOUD_MARK}"),
        Some(product) => product.clone(),
        None => "<unlabeled>".to_owned(),
    }
}

/// How the GPUs are offered: MIG devices per profile, or sharing replicas; `-` for whole GPUs.
fn layout_cell(node: &GpuNodeEntry) -> String {
    if let Some(mig) = node.mig.as_ref().filter(|m| !m.devices.is_empty()) {
        let devices: Vec<String> = mig
            .devices
            .iter()
            .map(|d| format!("{}x{}", d.count, d.profile))
            .collect();
        return format!("mig:{}", devices.join("+"));
    }
    if let Some(sharing) = &node.sharing {
        let strategy = sharing.strategy.as_deref().unwrap_or("shared");
        return match sharing.replicas {
            Some(replicas) => format!("{strategy}:{replicas}"),
            None => strategy.to_owned(),
        };
    }
    "-".to_owned()
}

fn render(status: &GpuInventoryStatus, wide: bool) -> String {
    let mut header = vec!["NAME", "READY", "PRODUCT", "GPUS", "MEMORY", "WORKLOAD"];
    if wide {
        header.extend(["MIG/SHARING", "SOURCES"]);
    }
    header.push("ISSUES");
    let rows: Vec<Vec<String>> = status
        .nodes
        .iter()
        .map(|n| {
            let mut reasons: Vec<&str> = n.issues.iter().map(|i| i.reason.as_str()).collect();
            reasons.dedup();
            let mut row = vec![
                n.name.clone(),
                n.ready.to_string(),
                product_cell(n),
                n.count.to_string(),
                n.memory_mib
                    .map(|m| format!("{m}MiB"))
                    .unwrap_or_else(|| "-".to_owned()),
                n.workload_config.clone().unwrap_or_else(|| "-".to_owned()),
            ];
            if wide {
                row.push(layout_cell(n));
                row.push(if n.sources.is_empty() {
                    "-".to_owned()
                } else {
                    n.sources.join(",")
                });
            }
            row.push(if reasons.is_empty() {
                "-".to_owned()
            } else {
                reasons.join(",")
            });
            row
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = format!(
        "total_gpu_nodes: {}  ready_gpu_nodes: {}  total_gpus: {}\n",
        status.total_gpu_nodes, status.ready_gpu_nodes, status.total_gpus
    );
    out += &line(&header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>());
    for row in &rows {
        out += &line(row);
    }
    out += &legend(status);
    if wide {
        let notes: Vec<String> = status
            .nodes
            .iter()
            .flat_map(|n| {
                n.notes
                    .iter()
                    .map(move |note| format!("  {}: {note}\n", n.name))
            })
            .collect();
        if !notes.is_empty() {
            out += "\nnotes:\n";
            out += &notes.concat();
        }
    }
    let issues: Vec<String> = status
        .nodes
        .iter()
        .flat_map(|n| {
            n.issues
                .iter()
                .map(move |i| format!("  {}: {}: {}\n", n.name, i.reason, i.message))
        })
        .collect();
    if !issues.is_empty() {
        out += "\nissues:\n";
        out += &issues.concat();
    }
    out
}

/// Lines under the table explaining a `*` product and `<unlabeled>`, only when one is shown.
fn legend(status: &GpuInventoryStatus) -> String {
    let mut out = String::new();
    if status.nodes.iter().any(cloud_product) {
        out += &format!(
            "{CLOUD_MARK} product named by a cloud-provider label (GKE, EKS/Karpenter), not by GPU Feature Discovery\n"
        );
    }
    if status.nodes.iter().any(|n| n.product.is_none()) {
        out += "<unlabeled> no source names the GPU model: no GPU Feature Discovery product label and no cloud GPU \
                label (VM-workload nodes run no GFD by design)\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::scanner::scan;
    use crate::inventory::status::desired_status;
    use crate::sources::dump::parse_node_dump;

    fn real_nodes_status() -> GpuInventoryStatus {
        let path = format!(
            "{}/tests/fixtures/real-nodes.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let nodes = parse_node_dump(&std::fs::read(&path).unwrap(), &path).unwrap();
        desired_status(&scan(&nodes, &Selector::default()), None)
    }

    #[test]
    fn the_table_marks_cloud_products_and_explains_unlabeled() {
        let text = table(&real_nodes_status());
        assert!(text.contains("nvidia-tesla-k80*"), "{text}");
        assert!(
            text.contains("* product named by a cloud-provider label"),
            "{text}"
        );
        assert!(
            text.contains("<unlabeled> no source names the GPU model"),
            "{text}"
        );
        assert!(
            !text.contains("SOURCES") && !text.contains("notes:"),
            "{text}"
        );
    }

    #[test]
    fn wide_shows_sources_layout_and_notes() {
        let text = wide(&real_nodes_status());
        let header = text.lines().nth(1).unwrap();
        assert!(
            header.contains("MIG/SHARING") && header.contains("SOURCES"),
            "{header}"
        );
        let k8s_node1 = text
            .lines()
            .find(|l| l.starts_with("k8s-device-plugin-issue-165-k8s-node1 "))
            .unwrap();
        assert!(k8s_node1.contains(" device-plugin "), "{k8s_node1}");
        assert!(
            text.contains("mig:16x1g.10gb+8x2g.20gb+8x3g.40gb"),
            "{text}"
        );
        assert!(
            text.contains("\nnotes:\n") && text.contains("read as 15360 MiB"),
            "{text}"
        );
    }

    #[test]
    fn no_legend_when_nothing_needs_one() {
        let mut status = real_nodes_status();
        status.nodes.retain(|n| n.name.contains("xe9680"));
        let text = table(&status);
        assert!(
            !text.contains("<unlabeled>") && !text.contains('*'),
            "{text}"
        );
    }
}
