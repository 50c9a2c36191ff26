//! The tables `scan` prints: one row per GPU node (the article's table plus FREE), per GPU model, per
//! namespace, per vendor, or per domain of a topology level (`topology`). Pure: a status (and, for the
//! domains, the core's `LevelDomains`) in, text out. Everything that came from the cluster passes through
//! [`visible`] (cells, notes, issue messages), so no control character or escape sequence reaches the terminal.

mod columns;
mod devices;
mod fleet;
mod fragmentation;
mod quotas;
mod summaries;
mod topology;
mod utilization;

use columns::columns;
pub(crate) use columns::{aligned, columns as fleet_columns};
pub(crate) use fleet::{ClusterRow, fleet};
pub(crate) use quotas::quotas;
use summaries::{namespace_table, product_table, vendor_table};
use topology::PlaceColumns;
pub(crate) use utilization::utilization;

use std::collections::BTreeMap;

use crate::crd::{GpuInventoryStatus, GpuNodeEntry};
use crate::inventory::resources::{GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX};
use crate::inventory::scanner::PRODUCT_FROM_DRA;
use crate::inventory::topology::by_domain::LevelDomains;
use crate::runtime::terminal_text::visible;

/// Marks a product named by a cloud-provider label rather than by GPU Feature Discovery.
const CLOUD_MARK: &str = "*";

/// What the table's rows are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Table<'a> {
    /// One per GPU node; `wide` adds columns (ALLOCATED, MIG/SHARING, SOURCES, NVLINK and NETWORK, and
    /// notes).
    Nodes {
        /// Whether to add them.
        wide: bool,
    },
    /// One per GPU model.
    Products,
    /// One per namespace and resource.
    Namespaces,
    /// One per vendor.
    Vendors,
    /// One per domain of a topology level and product (`--group-by nvlink|<label>`).
    Domains(&'a LevelDomains),
}

/// The totals line and the table; with `headers` false (`--no-headers`) only the table's rows, as kubectl
/// prints them for scripts (no totals, header, legend, notes or issue lines).
pub(crate) fn render(status: &GpuInventoryStatus, table: Table<'_>, headers: bool) -> String {
    if !headers {
        return match table {
            Table::Nodes { wide } => node_table(status, wide, false),
            Table::Products => product_table(status, false),
            Table::Namespaces => namespace_table(status, false),
            Table::Vendors => vendor_table(status, false),
            Table::Domains(domains) => topology::domain_table(domains, false),
        };
    }
    let mut out = format!(
        "total_gpu_nodes: {}  ready_gpu_nodes: {}  total_gpus: {}  free_gpus: {}  pending_gpu_pods: {}\n",
        status.total_gpu_nodes,
        status.ready_gpu_nodes,
        status.total_gpus,
        status.free_gpus,
        status.pending_gpu_pods
    );
    match table {
        Table::Nodes { wide } => out += &node_table(status, wide, true),
        Table::Products => out += &product_table(status, true),
        Table::Namespaces => out += &namespace_table(status, true),
        Table::Vendors => out += &vendor_table(status, true),
        Table::Domains(domains) => out += &topology::domain_table(domains, true),
    }
    out
}

/// The article's table, plus FREE and ISSUES columns and one line per issue below it.
#[cfg(test)]
pub(crate) fn table(status: &GpuInventoryStatus) -> String {
    render(status, Table::Nodes { wide: false }, true)
}

/// The node table with SOURCES, MIG/SHARING and ALLOCATED columns, each node's notes and DRA devices below it.
#[cfg(test)]
pub(crate) fn wide(status: &GpuInventoryStatus) -> String {
    render(status, Table::Nodes { wide: true }, true)
}

/// Per resource the node offers or pods hold (leftover zero resources such as `nvidia.com/gpu: 0` on a MIG
/// node are left out): `n` for `nvidia.com/gpu`, `n short-name` for the others (`5 mig-1g.10gb`). `0` when
/// nothing is offered, `-` when the node lists no resource at all.
fn per_resource_cell(node: &GpuNodeEntry, values: &BTreeMap<String, u64>) -> String {
    let offered = |name: &String| {
        node.allocated.get(name).copied().unwrap_or(0) + node.free.get(name).copied().unwrap_or(0)
            > 0
    };
    let cells: Vec<String> = values
        .iter()
        .filter(|(name, _)| offered(name))
        .map(|(name, n)| match name.as_str() {
            GPU_RESOURCE => n.to_string(),
            other => format!(
                "{n} {}",
                other.strip_prefix(NVIDIA_RESOURCE_PREFIX).unwrap_or(other)
            ),
        })
        .collect();
    match (cells.is_empty(), values.is_empty()) {
        (false, _) => cells.join(","),
        (true, false) => "0".to_owned(),
        (true, true) => "-".to_owned(),
    }
}

/// Whether the node's product came from a cloud-provider label (not GPU Feature Discovery, not DRA).
fn cloud_product(node: &GpuNodeEntry) -> bool {
    node.product.is_some()
        && node
            .derived_from
            .get("product")
            .is_some_and(|from| from != PRODUCT_FROM_DRA && !from.starts_with("nvidia.com/"))
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

fn or_dash(cells: Vec<String>) -> String {
    if cells.is_empty() {
        "-".to_owned()
    } else {
        cells.join(",")
    }
}

/// Whether the VENDOR column is shown: always with `wide`, and whenever the nodes have more than one vendor
/// (a single-vendor fleet keeps the article's table).
fn shows_vendor(status: &GpuInventoryStatus, wide: bool) -> bool {
    wide || {
        let mut vendors = status.nodes.iter().map(|n| n.vendor.as_deref());
        vendors
            .next()
            .is_some_and(|first| vendors.any(|v| v != first))
    }
}

/// The IDLE cell: idle units per resource as FREE spells them (`0` when none), `?` while the activity is
/// unknown.
fn idle_cell(node: &GpuNodeEntry, known: bool) -> String {
    if !known {
        return "?".to_owned();
    }
    let mut idle: BTreeMap<String, u64> = BTreeMap::new();
    for entry in &node.idle {
        *idle.entry(entry.resource.clone()).or_default() += entry.amount;
    }
    match per_resource_cell(node, &idle) {
        dash if dash == "-" => "0".to_owned(),
        cell => cell,
    }
}

fn node_row(
    n: &GpuNodeEntry,
    wide: bool,
    vendor: bool,
    places: Option<&PlaceColumns>,
    idle: Option<bool>,
) -> Vec<String> {
    let mut reasons: Vec<String> = n.issues.iter().map(|i| i.reason.clone()).collect();
    reasons.dedup();
    let mut row = vec![n.name.clone(), n.ready.to_string()];
    if vendor {
        row.push(n.vendor.clone().unwrap_or_else(|| "-".to_owned()));
    }
    row.extend([
        product_cell(n),
        n.count.to_string(),
        per_resource_cell(n, &n.free),
        n.memory_mib
            .map(|m| format!("{m}MiB"))
            .unwrap_or_else(|| "-".to_owned()),
        n.workload_config.clone().unwrap_or_else(|| "-".to_owned()),
    ]);
    if wide {
        row.push(per_resource_cell(n, &n.allocated));
        row.push(layout_cell(n));
        row.push(or_dash(n.sources.clone()));
    }
    if let Some(places) = places {
        row.extend(places.cells(n));
    }
    if let Some(known) = idle {
        row.push(idle_cell(n, known));
    }
    row.push(or_dash(reasons));
    row
}

/// One row per GPU node of every cluster read, the cluster first (`-o wide` across contexts); the header
/// unless `headers` is false.
pub(crate) fn fleet_nodes(clusters: &[(&str, &GpuInventoryStatus)], headers: bool) -> String {
    let rows: Vec<Vec<String>> = clusters
        .iter()
        .flat_map(|(cluster, status)| {
            status.nodes.iter().map(move |node| {
                let mut row = vec![(*cluster).to_owned()];
                row.extend(node_row(node, false, true, None, None));
                row
            })
        })
        .collect();
    aligned(
        &[
            "CLUSTER", "NAME", "READY", "VENDOR", "PRODUCT", "GPUS", "FREE", "MEMORY", "WORKLOAD",
            "ISSUES",
        ],
        &rows,
        headers,
    )
}

fn node_table(status: &GpuInventoryStatus, wide: bool, headers: bool) -> String {
    let vendor = shows_vendor(status, wide);
    let mut header = vec!["NAME", "READY"];
    if vendor {
        header.push("VENDOR");
    }
    header.extend(["PRODUCT", "GPUS", "FREE", "MEMORY", "WORKLOAD"]);
    if wide {
        header.extend(["ALLOCATED", "MIG/SHARING", "SOURCES"]);
    }
    let places = PlaceColumns::of(status).filter(|_| wide);
    if let Some(places) = &places {
        header.extend(places.header());
    }
    // With `--prometheus-url`: the held units that sat idle through the window (docs/utilization.md).
    let idle = status.utilization.as_ref().map(|u| u.state == "Current");
    if idle.is_some() {
        header.push("IDLE");
    }
    header.push("ISSUES");
    let rows: Vec<Vec<String>> = status
        .nodes
        .iter()
        .map(|n| node_row(n, wide, vendor, places.as_ref(), idle))
        .collect();
    if !headers {
        return aligned(&header, &rows, false);
    }
    let mut out = columns(&header, &rows);
    out += &legend(status);
    if let Some(places) = &places {
        out += &places.legend();
    }
    if wide {
        let notes: Vec<String> = status
            .nodes
            .iter()
            .flat_map(|n| {
                n.notes
                    .iter()
                    .map(move |note| format!("  {}: {}\n", visible(&n.name), visible(note)))
            })
            .collect();
        if !notes.is_empty() {
            out += "\nnotes:\n";
            out += &notes.concat();
        }
        out += &devices::device_table(status);
    }
    let issues: Vec<String> = status
        .nodes
        .iter()
        .flat_map(|n| {
            n.issues.iter().map(move |i| {
                let (name, reason) = (visible(&n.name), visible(&i.reason));
                format!("  {name}: {reason}: {}\n", visible(&i.message))
            })
        })
        .collect();
    if !issues.is_empty() {
        out += "\nissues:\n";
        out += &issues.concat();
    }
    out += &fragmentation::lines(status, wide);
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
mod tests;
