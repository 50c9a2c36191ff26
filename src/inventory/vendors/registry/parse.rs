//! The registry's TSV files into rows: tab-separated columns (each file's header says which), `#` comments,
//! `-` for an empty cell, and a source (a URL) at the end of every row.

use std::collections::HashMap;
use std::fmt;

use crate::inventory::star_pattern::{StarPattern, split_star};

use super::{
    HealthConditionRow, LabelRole, LabelRow, NotAcceleratorRow, PciRow, Registry, ResourceRow,
    RowUnit, SharingLayerRow, VendorRow,
};

/// A row that does not parse: which file, which line, what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RegistryError {
    pub(crate) file: &'static str,
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The cells of a data line, or `None` for a comment or a blank line.
fn cells(line: &'static str) -> Option<Vec<&'static str>> {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    Some(line.split('\t').map(str::trim).collect())
}

fn optional(cell: &'static str) -> Option<&'static str> {
    (cell != "-" && !cell.is_empty()).then_some(cell)
}

fn list(cell: &'static str) -> Vec<&'static str> {
    optional(cell)
        .map(|c| {
            c.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn hex_id(cell: &str, digits: usize) -> Result<(), String> {
    if cell.len() == digits
        && cell
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        Ok(())
    } else {
        Err(format!(
            "{cell:?} is not a {digits}-digit lower-case hex ID"
        ))
    }
}

fn source(cell: &'static str) -> Result<&'static str, String> {
    if cell.starts_with("https://") {
        Ok(cell)
    } else {
        Err(format!(
            "the source {cell:?} is not an https:// URL: every row says where it comes from"
        ))
    }
}

fn unit(cell: &str) -> Result<RowUnit, String> {
    Ok(match cell {
        "device" => RowUnit::Device,
        "partition" => RowUnit::Partition,
        "share" => RowUnit::Share,
        "core" => RowUnit::Core,
        "capacity" => RowUnit::Capacity,
        "count" => RowUnit::Count,
        other => {
            return Err(format!(
                "unit {other:?}: use device, partition, share, core or capacity"
            ));
        }
    })
}

fn role(cell: &str) -> Result<LabelRole, String> {
    Ok(match cell {
        "product" => LabelRole::Product,
        "family" => LabelRole::Family,
        "count" => LabelRole::Count,
        "memory-mib" => LabelRole::MemoryMib,
        "memory-gib" => LabelRole::MemoryGib,
        "present" => LabelRole::Present,
        other => {
            return Err(format!(
                "role {other:?}: use product, family, count, memory-mib, memory-gib or present"
            ));
        }
    })
}

/// A `domain/name` cell, exactly or with one `*` after the `/`.
fn pattern(cell: &'static str, what: &str) -> Result<StarPattern<&'static str>, String> {
    let (prefix, suffix) = split_star(cell);
    if !prefix.contains('/') || suffix.is_some_and(|s| s.contains('*')) {
        return Err(format!(
            "{cell:?} is not {what} (`domain/name`, or a pattern with one `*` after the `/`)"
        ));
    }
    Ok(StarPattern::new(prefix, suffix))
}

/// The cells of `line` when it has `n` of them.
fn exactly(cells: Vec<&'static str>, n: usize) -> Result<Vec<&'static str>, String> {
    if cells.len() == n {
        Ok(cells)
    } else {
        Err(format!("{} columns, expected {n}", cells.len()))
    }
}

fn vendor_row(c: Vec<&'static str>) -> Result<VendorRow, String> {
    let c = exactly(c, 7)?;
    let builtin = match c[3] {
        "builtin" => true,
        "registry" => false,
        other => return Err(format!("reader {other:?}: use builtin or registry")),
    };
    let pci_vendors = list(c[5]);
    for id in &pci_vendors {
        hex_id(id, 4)?;
    }
    Ok(VendorRow {
        name: c[0],
        display: c[1],
        devices_word: c[2],
        builtin,
        domains: list(c[4]),
        pci_vendors,
        source: source(c[6])?,
    })
}

fn resource_row(c: Vec<&'static str>) -> Result<ResourceRow, String> {
    let c = exactly(c, 5)?;
    Ok(ResourceRow {
        name: pattern(c[0], "a resource name")?,
        vendor: c[1],
        unit: unit(c[2])?,
        product: optional(c[3]),
        source: source(c[4])?,
    })
}

fn label_row(c: Vec<&'static str>) -> Result<LabelRow, String> {
    let c = exactly(c, 4)?;
    let (key, value_prefix) = match c[0].split_once('=') {
        Some((key, value)) => (
            key,
            Some(value.strip_suffix('*').ok_or_else(|| {
                format!("{:?}: a value condition is a prefix ending in `*`", c[0])
            })?),
        ),
        None => (c[0], None),
    };
    Ok(LabelRow {
        key,
        value_prefix,
        vendor: c[1],
        role: role(c[2])?,
        source: source(c[3])?,
    })
}

fn pci_row(c: Vec<&'static str>) -> Result<PciRow, String> {
    let c = exactly(c, 4)?;
    hex_id(c[0], 4)?;
    hex_id(c[1], 4)?;
    Ok(PciRow {
        vendor_id: c[0],
        device_id: c[1],
        product: c[2],
        source: source(c[3])?,
    })
}

fn not_accelerator_row(c: Vec<&'static str>) -> Result<NotAcceleratorRow, String> {
    let c = exactly(c, 3)?;
    Ok(NotAcceleratorRow {
        prefix: c[0],
        what: c[1],
        source: source(c[2])?,
    })
}

fn health_condition_row(c: Vec<&'static str>) -> Result<HealthConditionRow, String> {
    let c = exactly(c, 6)?;
    let problem_when_true = match c[3] {
        "True" => true,
        "False" => false,
        other => return Err(format!("problem status {other:?}: use True or False")),
    };
    let reason_vendors = list(c[4])
        .into_iter()
        .map(|rule| {
            rule.split_once("*=")
                .filter(|(prefix, vendor)| !prefix.is_empty() && !vendor.is_empty())
                .ok_or_else(|| format!("{rule:?}: a reason rule is `ReasonPrefix*=vendor`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(HealthConditionRow {
        type_: c[0],
        reporter: c[1],
        vendor: optional(c[2]),
        problem_when_true,
        reason_vendors,
        source: source(c[5])?,
    })
}

fn sharing_layer_row(c: Vec<&'static str>) -> Result<SharingLayerRow, String> {
    let c = exactly(c, 4)?;
    Ok(SharingLayerRow {
        key: pattern(c[0], "an annotation key")?,
        layer: c[1],
        vendor: optional(c[2]),
        source: source(c[3])?,
    })
}

/// What the registered tables' lookups rely on: no two vendors share a domain, every resource row of a
/// vendor the registry reads is in one of its domains, and no row of a built-in vendor is in another
/// vendor's.
fn domain_errors(vendors: &[VendorRow], resources: &[ResourceRow]) -> Vec<RegistryError> {
    let error = |file, message| RegistryError {
        file,
        line: 0,
        message,
    };
    let mut errors = Vec::new();
    for (i, vendor) in vendors.iter().enumerate() {
        for domain in &vendor.domains {
            if let Some(other) = vendors[..i].iter().find(|v| v.domains.contains(domain)) {
                errors.push(error(
                    "vendors.tsv",
                    format!(
                        "domain {domain} is both {}'s and {}'s",
                        other.name, vendor.name
                    ),
                ));
            }
        }
    }
    for row in resources {
        let Some(vendor) = vendors.iter().find(|v| v.name == row.vendor) else {
            continue;
        };
        let domain = row.name.prefix().split_once('/').map_or("", |(d, _)| d);
        // A built-in vendor's row may be a sharing layer's name for its devices (`volcano.sh/vgpu-number`),
        // under a domain that is no vendor's.
        if vendor.builtin {
            if let Some(other) = vendors
                .iter()
                .find(|v| v.name != vendor.name && v.domains.contains(&domain))
            {
                errors.push(error(
                    "resources.tsv",
                    format!(
                        "{} is {}'s, in {}'s domain {domain}",
                        row.name.prefix(),
                        vendor.name,
                        other.name
                    ),
                ));
            }
        } else if !vendor.domains.contains(&domain) {
            errors.push(error(
                "resources.tsv",
                format!(
                    "{} is outside {}'s domains ({}): add the domain to vendors.tsv",
                    row.name.prefix(),
                    vendor.name,
                    vendor.domains.join(", ")
                ),
            ));
        }
    }
    errors
}

/// Every row of `text` read by `row`, and the errors of those that do not parse.
fn rows<T>(
    file: &'static str,
    text: &'static str,
    row: fn(Vec<&'static str>) -> Result<T, String>,
    errors: &mut Vec<RegistryError>,
) -> Vec<T> {
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| Some((i + 1, cells(line)?)))
        .filter_map(|(line, c)| {
            row(c)
                .map_err(|message| {
                    errors.push(RegistryError {
                        file,
                        line,
                        message,
                    })
                })
                .ok()
        })
        .collect()
}

impl Registry {
    /// The registry of these files (name, text), with the rows that do not parse or name an unknown vendor
    /// left out and reported.
    pub(crate) fn parse(files: &[(&'static str, &'static str)]) -> (Registry, Vec<RegistryError>) {
        let mut errors = Vec::new();
        let file = |name: &str| {
            files
                .iter()
                .find(|(n, _)| *n == name)
                .map_or(("(missing)", ""), |(n, t)| (*n, *t))
        };
        let (f, t) = file("vendors.tsv");
        let vendors = rows(f, t, vendor_row, &mut errors);
        // Rows naming a vendor vendors.tsv lacks are reported after their file's own errors.
        let mut unknown = Vec::new();
        let mut known = |file: &'static str, vendor: &str| {
            let ok = vendors.iter().any(|v| v.name == vendor);
            if !ok {
                unknown.push(RegistryError {
                    file,
                    line: 0,
                    message: format!("vendor {vendor:?} is not in vendors.tsv"),
                });
            }
            ok
        };
        let (f, t) = file("resources.tsv");
        let resources: Vec<ResourceRow> = rows(f, t, resource_row, &mut errors)
            .into_iter()
            .filter(|r| known(f, r.vendor))
            .collect();
        let (f, t) = file("labels.tsv");
        let labels: Vec<LabelRow> = rows(f, t, label_row, &mut errors)
            .into_iter()
            .filter(|r| known(f, r.vendor))
            .collect();
        let (f, t) = file("sharing_layers.tsv");
        let sharing_layers: Vec<SharingLayerRow> = rows(f, t, sharing_layer_row, &mut errors)
            .into_iter()
            .filter(|r| r.vendor.is_none_or(|v| known(f, v)))
            .collect();
        let (f, t) = file("health_conditions.tsv");
        let health_conditions: Vec<HealthConditionRow> =
            rows(f, t, health_condition_row, &mut errors)
                .into_iter()
                .filter(|r| {
                    let mut vendors = r
                        .vendor
                        .into_iter()
                        .chain(r.reason_vendors.iter().map(|(_, v)| *v));
                    vendors.all(|v| known(f, v))
                })
                .collect();
        let (f, t) = file("pci_devices.tsv");
        let pci_devices = rows(f, t, pci_row, &mut errors);
        let (f, t) = file("not_accelerators.tsv");
        let not_accelerators = rows(f, t, not_accelerator_row, &mut errors);
        errors.extend(unknown);
        errors.extend(domain_errors(&vendors, &resources));
        let exact = exact_names(&resources);
        let layer_domains = layer_domains(&vendors, &resources);
        (
            Registry {
                vendors,
                resources,
                labels,
                pci_devices,
                not_accelerators,
                sharing_layers,
                health_conditions,
                exact,
                layer_domains,
            },
            errors,
        )
    }
}

/// The resources named exactly (no `*`), by name: their index in `resources`.
fn exact_names(resources: &[ResourceRow]) -> HashMap<&'static str, usize> {
    resources
        .iter()
        .enumerate()
        .filter(|(_, r)| r.name.suffix().is_none())
        .map(|(i, r)| (r.name.borrowed_prefix(), i))
        .collect()
}

/// The domains a built-in vendor's resources are named under besides its own (a sharing layer's, as
/// `volcano.sh`), sorted, each once.
fn layer_domains(vendors: &[VendorRow], resources: &[ResourceRow]) -> Vec<&'static str> {
    let mut layer_domains: Vec<&'static str> = resources
        .iter()
        .filter_map(|r| {
            let vendor = vendors.iter().find(|v| v.name == r.vendor)?;
            let (domain, _) = r.name.borrowed_prefix().split_once('/')?;
            (vendor.builtin && !vendor.domains.contains(&domain)).then_some(domain)
        })
        .collect();
    layer_domains.sort_unstable();
    layer_domains.dedup();
    layer_domains
}
