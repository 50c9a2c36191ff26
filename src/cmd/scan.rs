//! `scan`: one read-only pass, from the cluster or from a node dump, printed for humans or scripts.

use std::io::Read;
use std::process::ExitCode;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};
use kube::core::Selector;

use super::cli::{GlobalArgs, OutputFormat, ScanArgs};
use crate::crd::GpuInventoryStatus;
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
    };
    print!("{text}");
}

/// The article's table, plus an ISSUES column and one line per issue below it.
pub fn table(status: &GpuInventoryStatus) -> String {
    let header = [
        "NAME", "READY", "PRODUCT", "GPUS", "MEMORY", "WORKLOAD", "ISSUES",
    ];
    let rows: Vec<[String; 7]> = status
        .nodes
        .iter()
        .map(|n| {
            let mut reasons: Vec<&str> = n.issues.iter().map(|i| i.reason.as_str()).collect();
            reasons.dedup();
            [
                n.name.clone(),
                n.ready.to_string(),
                n.product
                    .clone()
                    .unwrap_or_else(|| "<unlabeled>".to_owned()),
                n.count.to_string(),
                n.memory_mib
                    .map(|m| format!("{m}MiB"))
                    .unwrap_or_else(|| "-".to_owned()),
                n.workload_config.clone().unwrap_or_else(|| "-".to_owned()),
                if reasons.is_empty() {
                    "-".to_owned()
                } else {
                    reasons.join(",")
                },
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_owned() + "\n"
    };
    let mut out = format!(
        "total_gpu_nodes: {}  ready_gpu_nodes: {}  total_gpus: {}\n",
        status.total_gpu_nodes, status.ready_gpu_nodes, status.total_gpus
    );
    out += &line(&header.map(str::to_owned));
    for row in &rows {
        out += &line(row);
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
