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

fn read(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    let mut reading = Reading {
        labelled: labelled(labels),
        ..Default::default()
    };
    reading.product = labels
        .text(PRODUCT)
        .map(|p| (p.to_owned(), None))
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
