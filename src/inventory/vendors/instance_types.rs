//! Cloud instance types and shapes that name their accelerators: EC2, GCE, OCI and Azure publish how many of
//! which accelerator each type has. A node often says nothing else about them: no vendor label (no feature
//! discovery), no resource yet (the device plugin not up, or not installed). Its
//! `node.kubernetes.io/instance-type` still does. The table is `instance_types.tsv`, one row per type with its
//! source; only exact types are read (sizes are not monotonic: a g5.16xlarge has 1 GPU, a g5.12xlarge 4).

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::Vendor;

/// The label every kubelet and cloud provider sets (and its deprecated beta spelling, still on old nodes).
pub(crate) const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
const INSTANCE_TYPE_BETA: &str = "beta.kubernetes.io/instance-type";

/// The table, as published: see the file's header for the columns.
const TABLE: &str = include_str!("instance_types.tsv");

/// What an instance type's accelerators are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InstanceAccelerators {
    /// The instance type, as the label spells it.
    pub(crate) instance_type: &'static str,
    /// Who makes them.
    pub(crate) vendor: Vendor,
    /// The model, when the source names it.
    pub(crate) product: Option<&'static str>,
    /// How many an instance has.
    pub(crate) count: u64,
    /// Memory of one, in MiB, when published.
    pub(crate) memory_mib: Option<u64>,
}

impl InstanceAccelerators {
    /// Where a value read from the table came from, for `derivedFrom`.
    pub(crate) fn derived_from(&self) -> String {
        format!(
            "{INSTANCE_TYPE}={} (the provider's published table)",
            self.instance_type
        )
    }
}

/// One row of [`TABLE`]; `None` for a comment, a blank line or a row that does not parse (the unit test
/// rejects those).
fn parse_row(line: &'static str) -> Option<InstanceAccelerators> {
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    let mut fields = line.split('\t');
    let instance_type = fields.next()?;
    let vendor = Vendor::from_name(fields.next()?)?;
    let product = fields.next().filter(|p| *p != "-");
    let count = fields.next()?.parse().ok().filter(|n| *n > 0)?;
    let memory_mib = fields.next()?.parse().ok();
    // The source column is for readers of the file.
    fields.next()?;
    Some(InstanceAccelerators {
        instance_type,
        vendor,
        product,
        count,
        memory_mib,
    })
}

fn table() -> &'static HashMap<&'static str, InstanceAccelerators> {
    static BY_TYPE: LazyLock<HashMap<&'static str, InstanceAccelerators>> = LazyLock::new(|| {
        TABLE
            .lines()
            .filter_map(parse_row)
            .map(|row| (row.instance_type, row))
            .collect()
    });
    &BY_TYPE
}

/// The accelerators of an instance type, if the table knows it.
pub(crate) fn lookup(instance_type: &str) -> Option<&'static InstanceAccelerators> {
    table().get(instance_type.trim())
}

/// The accelerators a node's instance-type label names, if any.
pub(crate) fn of_node(labels: &LabelReader<'_>) -> Option<&'static InstanceAccelerators> {
    [INSTANCE_TYPE, INSTANCE_TYPE_BETA]
        .iter()
        .find_map(|key| lookup(labels.get(key)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_table_parses_and_names_a_type_once() {
        let rows: Vec<&str> = TABLE
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .collect();
        for row in &rows {
            assert!(parse_row(row).is_some(), "row does not parse: {row}");
            assert!(
                row.split('\t')
                    .next_back()
                    .is_some_and(|s| s.starts_with("https://")),
                "row without its source: {row}"
            );
        }
        assert_eq!(table().len(), rows.len(), "a type listed twice");
        assert!(rows.len() > 100);
    }

    #[test]
    fn types_name_vendor_model_and_count_as_their_providers_publish() {
        let p5 = lookup("p5.48xlarge").unwrap();
        assert_eq!(
            (p5.vendor, p5.product, p5.count),
            (Vendor::Nvidia, Some("NVIDIA-H100"), 8)
        );
        // Not monotonic by size: read exactly.
        assert_eq!(lookup("g5.16xlarge").unwrap().count, 1);
        assert_eq!(lookup("g5.12xlarge").unwrap().count, 4);
        assert_eq!(lookup("inf1.xlarge").unwrap().vendor, Vendor::Aws);
        assert_eq!(lookup("ct6e-standard-4t").unwrap().count, 4);
        assert_eq!(lookup("BM.GPU.MI300X.8").unwrap().vendor, Vendor::Amd);
        assert_eq!(
            lookup("BM.GPU4.8").unwrap().product,
            None,
            "the source names no model"
        );
        assert_eq!(lookup("a3-highgpu-8g").unwrap().memory_mib, Some(81920));
        // Unknown, hand-made or CPU types name nothing.
        for other in ["k3s", "m5.xlarge", "", "p5"] {
            assert_eq!(lookup(other), None, "{other}");
        }
        // A fraction of a GPU is no count: the row is left out of the table.
        assert_eq!(lookup("Standard_NV6ads_A10_v5"), None);
    }
}
