//! The other AI accelerators: Habana Gaudi, AWS Neuron (Trainium, Inferentia) and Google TPUs, and
//! resources that name no vendor (`microsoft.com/directx`). Each is a device count, a product where a
//! label names one, and nothing more the node says.

use super::vendor_table::{NodeResources, Reading, Unit, VendorRules};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::Vendor;

pub(super) const HABANA: VendorRules = VendorRules {
    vendor: Vendor::Habana,
    unit_of: habana_unit,
    labelled: habana_labelled,
    read: read_habana,
};

pub(super) const AWS: VendorRules = VendorRules {
    vendor: Vendor::Aws,
    unit_of: aws_unit,
    labelled: aws_labelled,
    read: read_aws,
};

/// Resources that name no vendor (`microsoft.com/directx`) on a node no vendor's table claims.
pub(super) const NEUTRAL: VendorRules = VendorRules {
    vendor: Vendor::Unknown,
    unit_of: neutral_unit,
    labelled: no_labels,
    read: read_neutral_node,
};

pub(super) const GOOGLE: VendorRules = VendorRules {
    vendor: Vendor::Google,
    unit_of: google_unit,
    labelled: google_labelled,
    read: read_google,
};

/// Habana's device plugin: `habana.ai/gaudi` (and `habana.ai/gaudi2`, ... in some releases).
const GAUDI: &str = "habana.ai/gaudi";
/// AWS's Neuron device plugin: devices (`neuron`, and `neurondevice` in newer releases) and cores.
const NEURON_DEVICES: [&str; 2] = ["aws.amazon.com/neuron", "aws.amazon.com/neurondevice"];
const NEURON_CORES: &str = "aws.amazon.com/neuroncore";
/// The instance-type label, and the Neuron instance families with their chips.
const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
const NEURON_FAMILIES: [(&str, &str); 5] = [
    ("trn2", "AWS Trainium2"),
    ("trn1n", "AWS Trainium"),
    ("trn1", "AWS Trainium"),
    ("inf2", "AWS Inferentia2"),
    ("inf1", "AWS Inferentia"),
];
/// GKE's TPU device plugin: chips.
const TPU: &str = "google.com/tpu";
const TPU_ACCELERATOR: &str = "cloud.google.com/gke-tpu-accelerator";
const TPU_TOPOLOGY: &str = "cloud.google.com/gke-tpu-topology";
/// Windows' DirectX device plugin: one GPU of any vendor (AKS labels the vendor).
const DIRECTX: &str = "microsoft.com/directx";

fn habana_unit(name: &str) -> Option<Unit> {
    name.starts_with(GAUDI).then_some(Unit::Device)
}

fn habana_labelled(labels: &LabelReader<'_>) -> bool {
    labels.iter().any(|(k, _)| k.starts_with("habana.ai/"))
}

fn read_habana(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    devices_only(habana_labelled(labels), resources, habana_unit)
}

fn aws_unit(name: &str) -> Option<Unit> {
    if NEURON_DEVICES.contains(&name) {
        Some(Unit::Device)
    } else {
        (name == NEURON_CORES).then_some(Unit::Core)
    }
}

/// The Neuron chip of an instance type (`trn2.48xlarge` -> Trainium2).
fn neuron_chip(instance_type: &str) -> Option<&'static str> {
    let family = instance_type.split('.').next()?;
    NEURON_FAMILIES
        .iter()
        .find(|(f, _)| *f == family)
        .map(|(_, chip)| *chip)
}

fn aws_labelled(labels: &LabelReader<'_>) -> bool {
    labels
        .get(INSTANCE_TYPE)
        .and_then(|t| neuron_chip(t.trim()))
        .is_some()
}

fn read_aws(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    let mut reading = devices_only(aws_labelled(labels), resources, aws_unit);
    reading.product = labels
        .text(INSTANCE_TYPE)
        .and_then(neuron_chip)
        .map(|chip| (chip.to_owned(), Some(INSTANCE_TYPE.to_owned())));
    reading
}

fn google_unit(name: &str) -> Option<Unit> {
    (name == TPU).then_some(Unit::Device)
}

fn google_labelled(labels: &LabelReader<'_>) -> bool {
    labels
        .get(TPU_ACCELERATOR)
        .is_some_and(|v| !v.trim().is_empty())
}

fn read_google(labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    let mut reading = devices_only(google_labelled(labels), resources, google_unit);
    reading.product = labels
        .text(TPU_ACCELERATOR)
        .map(|p| (p.to_owned(), Some(TPU_ACCELERATOR.to_owned())));
    if reading.count.is_none()
        && let Some((chips, machine)) = labels
            .text(INSTANCE_TYPE)
            .and_then(|t| Some((tpu_chips(t)?, t)))
    {
        reading.count = Some((
            chips,
            format!("{INSTANCE_TYPE}={machine} (TPU chips per VM: the -{chips}t suffix)"),
        ));
    }
    if let Some(topology) = labels.text(TPU_TOPOLOGY) {
        labels.note(format!(
            "TPU slice topology {topology} ({TPU_TOPOLOGY}): count is this node's chips, not the slice's"
        ));
    }
    reading
}

/// The TPU chips of one VM of a TPU machine type: Google names them `<family>-<shape>-<N>t` (`ct5lp-hightpu-4t`,
/// `ct6e-standard-8t`, `tpu7x-standard-4t`: N chips). `None` for any other type.
fn tpu_chips(machine_type: &str) -> Option<u64> {
    let machine_type = machine_type.trim();
    if !(machine_type.starts_with("ct") || machine_type.starts_with("tpu")) {
        return None;
    }
    let suffix = machine_type.rsplit('-').next()?.strip_suffix('t')?;
    suffix.parse().ok().filter(|n| *n > 0)
}

/// Resources that are one device of a vendor other labels name.
pub(super) fn neutral_unit(name: &str) -> Option<Unit> {
    (name == DIRECTX).then_some(Unit::Device)
}

/// No label names vendor-neutral devices.
fn no_labels(_labels: &LabelReader<'_>) -> bool {
    false
}

/// [`read_neutral`], as a table's reading.
fn read_neutral_node(_labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Reading {
    read_neutral(resources)
}

/// A node no vendor's rules claim: what its vendor-neutral resources count.
pub(super) fn read_neutral(resources: &NodeResources<'_>) -> Reading {
    devices_only(false, resources, neutral_unit)
}

/// The count is the device resources' (cores and shares are listed in the resources, never counted as
/// devices), each resource's unit being one device.
fn devices_only(
    labelled: bool,
    resources: &NodeResources<'_>,
    unit_of: fn(&str) -> Option<Unit>,
) -> Reading {
    let devices: Vec<(&str, Unit, u64)> = resources
        .with_units(unit_of)
        .into_iter()
        .filter(|(_, unit, _)| *unit == Unit::Device)
        .collect();
    // Two names for one set of devices (`neuron` and `neurondevice`) are not added up: the larger is read.
    let largest = devices.iter().max_by_key(|(_, _, n)| *n);
    Reading {
        count: largest.map(|(name, _, n)| (*n, format!("capacity {name}"))),
        device_resources: largest
            .map(|(name, _, _)| (*name).to_owned())
            .into_iter()
            .collect(),
        labelled,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpu_chips_come_from_the_machine_type_s_suffix() {
        assert_eq!(tpu_chips("ct6e-standard-4t"), Some(4));
        assert_eq!(tpu_chips("ct5lp-hightpu-8t"), Some(8));
        assert_eq!(tpu_chips("tpu7x-standard-4t"), Some(4));
        assert_eq!(tpu_chips("ct6e-standard-1t"), Some(1));
        for other in [
            "n2-standard-4",
            "ct6e-standard",
            "a3-highgpu-8g",
            "ct6e-standard-0t",
            "",
        ] {
            assert_eq!(tpu_chips(other), None, "{other}");
        }
    }

    #[test]
    fn neuron_chips_come_from_the_instance_family() {
        assert_eq!(neuron_chip("trn2.48xlarge"), Some("AWS Trainium2"));
        assert_eq!(neuron_chip("trn1n.32xlarge"), Some("AWS Trainium"));
        assert_eq!(neuron_chip("inf2.xlarge"), Some("AWS Inferentia2"));
        assert_eq!(neuron_chip("p5.48xlarge"), None);
        assert_eq!(aws_unit(NEURON_CORES), Some(Unit::Core));
        assert_eq!(aws_unit("aws.amazon.com/efa"), None);
    }
}
