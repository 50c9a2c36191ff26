//! `idle`: which held GPUs sat idle through the window, per namespace and per holder, as the operator would
//! publish them (`GpuInventory.status.namespaces[].idle`, `GpuNode.status.node.idle[]`), read live from the
//! cluster and Prometheus. Exit code: 0 none idle, 1 some, 2 error (Prometheus's answer unknown included).

use std::process::ExitCode;

use super::cli::{GlobalArgs, ScanArgs};
use super::output::stdout::emit;
use super::output::{formatted, object_name};
use super::render;
use super::scan::{EXIT_ERROR, failed, scan_inventory};
use super::utilization_args::{NamespaceIdle, NodeIdle, UtilizationArgs, UtilizationJson};
use crate::error::{Error, Result};
use crate::inventory::model::UtilizationState;
use crate::publish::content::wire;

/// Prints the idle GPUs; the exit code says whether any sat idle.
pub async fn run(global: &GlobalArgs, args: &UtilizationArgs) -> ExitCode {
    match report(global, args).await {
        Ok((text, code)) => emit(&text, ExitCode::from(code)),
        Err(e) => failed(&e),
    }
}

/// The text to print and the exit code.
async fn report(global: &GlobalArgs, args: &UtilizationArgs) -> Result<(String, u8)> {
    if args.utilization.prometheus_url.is_none() {
        return Err(Error::InvalidFlag(
            "--prometheus-url is required: the Prometheus holding dcgm-exporter's series (or set \
             GPUINV_PROMETHEUS_URL)"
                .into(),
        ));
    }
    let scan_args = ScanArgs {
        utilization: args.utilization.clone(),
        ..ScanArgs::of_query(None, args.selector.clone())
    };
    // `idle` reads no dump: nothing can be missing from it.
    let (inventory, _no_dump) = scan_inventory(global, &scan_args, &[]).await?;
    let Some(report) = &inventory.utilization else {
        return Err(Error::InvalidFlag("the activity was not read".into()));
    };
    let json = UtilizationJson {
        utilization: wire::utilization_status(report),
        namespaces: report
            .namespaces
            .iter()
            .map(|(name, idle)| NamespaceIdle {
                name: name.clone(),
                idle: idle.clone(),
            })
            .collect(),
        nodes: inventory
            .idle
            .iter()
            .map(|(name, list)| NodeIdle {
                name: name.clone(),
                idle: list.iter().map(wire::idle_entry).collect(),
            })
            .collect(),
    };
    let mut json = json;
    if let Some(namespace) = global.listed_namespace() {
        super::namespace_filter::limit_utilization(&mut json, namespace);
    }
    let code = match report.state {
        UtilizationState::Unknown => EXIT_ERROR,
        UtilizationState::Current => u8::from(!json.nodes.is_empty()),
    };
    let names = || {
        json.nodes
            .iter()
            .map(|n| object_name("node", "", &n.name))
            .collect()
    };
    let table = |_wide: bool| render::utilization(&json, !args.no_headers);
    let text = formatted(&args.output, &json, names, table)?;
    Ok((text, code))
}
