//! Intel GPUs: the GPU device plugin's `gpu.intel.com/i915` and `gpu.intel.com/xe`, and the labels of
//! NFD's Intel GPU rules and the plugin (`gpu.intel.com/product`, `family`, `device.count`,
//! `device-id.<class>-<id>.count`, `memory.max`). DRA (`gpu.intel.com`, `gaudi.intel.com`) is in `dra.rs`.

use super::vendor_table::{NodeResources, Reading, Unit, VendorRules};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Sharing, Vendor};

pub(super) const RULES: VendorRules = VendorRules {
    vendor: Vendor::Intel,
    unit_of,
    labelled,
    read,
};

const PREFIX: &str = "gpu.intel.com/";
/// One per GPU (times the plugin's `-shared-dev-num` when it shares them).
const DEVICES: [&str; 2] = ["gpu.intel.com/i915", "gpu.intel.com/xe"];
const PRODUCT: &str = "gpu.intel.com/product";
const FAMILY: &str = "gpu.intel.com/family";
const DEVICE_COUNT: &str = "gpu.intel.com/device.count";
/// `gpu.intel.com/device-id.0300-56c0.count`: GPUs of one PCI id.
const DEVICE_ID: (&str, &str) = ("gpu.intel.com/device-id.", ".count");
/// `gpu.intel.com/device-id.0300-46a6.present`: one label per distinct PCI device ID (NFD's Intel rules).
const PRESENT: &str = ".present";
/// Models by PCI device ID (see the file's header).
const DEVICE_IDS: &str = include_str!("intel_device_ids.tsv");
/// Bytes of every GPU of the node together.
const MEMORY_MAX: &str = "gpu.intel.com/memory.max";

/// The device resources only: `gpu.intel.com/monitoring`, `*_monitoring`, `millicores`, `memory.max` and
/// `tiles` are accounting and monitoring resources, never devices, and are not read.
fn unit_of(name: &str) -> Option<Unit> {
    DEVICES.contains(&name).then_some(Unit::Device)
}

fn labelled(labels: &LabelReader<'_>) -> bool {
    labels
        .iter()
        .any(|(key, value)| key.starts_with(PREFIX) && !value.trim().is_empty())
}

/// The model a PCI device ID names: the table's, else "Intel GPU <id>" (an ID is a model even unnamed).
fn model_of_id(id: &str) -> String {
    static BY_ID: std::sync::LazyLock<std::collections::HashMap<&'static str, &'static str>> =
        std::sync::LazyLock::new(|| {
            DEVICE_IDS
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| {
                    let mut fields = l.split('\t');
                    Some((fields.next()?, fields.next()?))
                })
                .collect()
        });
    BY_ID
        .get(id)
        .map_or_else(|| format!("Intel GPU {id}"), |model| (*model).to_owned())
}

/// The model from the device-ID labels (`.present`, else `.count`), with the label it came from; the first
/// by ID when the node has several models, the others noted.
fn model_by_id(labels: &mut LabelReader<'_>) -> Option<(String, Option<String>)> {
    let mut ids: Vec<(String, String)> = labels
        .iter()
        .filter_map(|(key, _)| {
            let rest = key.strip_prefix(DEVICE_ID.0)?;
            let class_id = rest
                .strip_suffix(PRESENT)
                .or_else(|| rest.strip_suffix(DEVICE_ID.1))?;
            let (_, id) = class_id.split_once('-')?;
            let id = id.trim().to_ascii_lowercase();
            (!id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit()))
                .then(|| (id, key.to_owned()))
        })
        .collect();
    ids.sort();
    ids.dedup_by(|a, b| a.0 == b.0);
    let (id, key) = ids.first()?.clone();
    if ids.len() > 1 {
        let others: Vec<String> = ids[1..].iter().map(|(id, _)| model_of_id(id)).collect();
        labels.note(format!(
            "the node has several Intel GPU models by their device IDs; the product names the first, {} is also \
             there",
            others.join(", ")
        ));
    }
    Some((
        model_of_id(&id),
        Some(format!("{key} (PCI device ID table)")),
    ))
}

fn read(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    let mut reading = Reading {
        labelled: labelled(labels),
        ..Default::default()
    };
    reading.product = labels
        .text(PRODUCT)
        .map(|p| (p.to_owned(), None))
        .or_else(|| model_by_id(labels))
        .or_else(|| {
            labels
                .text(FAMILY)
                .map(|f| (f.to_owned(), Some(FAMILY.to_owned())))
        });
    let keys: Vec<&str> = labels
        .iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(DEVICE_ID.0) && k.ends_with(DEVICE_ID.1))
        .collect();
    let by_id: Option<u64> = keys
        .into_iter()
        .map(|k| labels.count(k))
        .reduce(|a, b| Some(a?.saturating_add(b?)))
        .flatten();
    let plugin = DEVICES
        .iter()
        .find_map(|r| Some((*r, resources.count(r).filter(|n| *n > 0)?)));
    reading.count = labels
        .count(DEVICE_COUNT)
        .map(|n| (n, DEVICE_COUNT.to_owned()))
        .or_else(|| by_id.map(|n| (n, "labels gpu.intel.com/device-id.*.count".to_owned())))
        .or_else(|| plugin.map(|(r, n)| (n, format!("capacity {r}"))));
    if let (Some((count, _)), Some((resource, advertised))) = (&reading.count, plugin) {
        if *count > 0 && advertised > *count && advertised.is_multiple_of(*count) {
            // The plugin's -shared-dev-num: each GPU advertised that many times.
            reading.sharing = Some(Sharing {
                strategy: Some("shared-dev-num".to_owned()),
                replicas: Some(advertised / count),
                renamed_resource: false,
            });
        } else if advertised == *count {
            reading.device_resources.push(resource.to_owned());
        }
    } else if let Some((resource, _)) = plugin {
        reading.device_resources.push(resource.to_owned());
    }
    if let (Some(total), Some((count, _))) = (labels.size(MEMORY_MAX), &reading.count)
        && *count > 0
        && total > 0
    {
        reading.memory_mib = Some((
            total / count / crate::inventory::label_reader::MIB,
            format!("{MEMORY_MAX} (bytes, every GPU) / count"),
        ));
    }
    reading
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::text_map::TextMap;

    fn product_of(pairs: &[(&str, &str)]) -> Option<(String, Option<String>)> {
        let map: TextMap = pairs.iter().map(|(k, v)| (*k, *v)).collect();
        let mut labels = LabelReader::new(Some(&map));
        model_by_id(&mut labels)
    }

    #[test]
    fn the_pci_device_id_in_nfd_s_labels_names_the_model() {
        // intel/intel-device-plugins-for-kubernetes#1826: an Alder Lake-P NUC.
        let (model, from) = product_of(&[
            ("gpu.intel.com/device-id.0300-46a6.count", "1"),
            ("gpu.intel.com/device-id.0300-46a6.present", "true"),
        ])
        .unwrap();
        assert_eq!(model, "Intel Iris Xe Graphics");
        assert_eq!(
            from.as_deref(),
            Some("gpu.intel.com/device-id.0300-46a6.count (PCI device ID table)")
        );
        assert_eq!(
            product_of(&[("gpu.intel.com/device-id.0380-0bd5.present", "true")])
                .unwrap()
                .0,
            "Intel Data Center GPU Max 1550"
        );
        // An ID the table lacks is still a model.
        assert_eq!(
            product_of(&[("gpu.intel.com/device-id.0300-ffff.present", "true")])
                .unwrap()
                .0,
            "Intel GPU ffff"
        );
        assert_eq!(
            product_of(&[("gpu.intel.com/device-id.0300-.present", "true")]),
            None
        );
        assert_eq!(product_of(&[("gpu.intel.com/family", "A_Series")]), None);
    }

    #[test]
    fn every_row_of_the_id_table_has_an_id_a_model_and_a_source() {
        for row in DEVICE_IDS.lines().filter(|l| !l.starts_with('#')) {
            let fields: Vec<&str> = row.split('\t').collect();
            assert_eq!(fields.len(), 3, "{row}");
            assert!(
                fields[0].len() == 4 && fields[0].chars().all(|c| c.is_ascii_hexdigit()),
                "{row}"
            );
            assert!(
                fields[1].starts_with("Intel ") && fields[2].starts_with("https://"),
                "{row}"
            );
        }
    }
}
