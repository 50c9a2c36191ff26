//! The table of every vendor the registry reads itself (Huawei Ascend, Cambricon, Hygon, MetaX, Iluvatar,
//! Moore Threads, Enflame, Kunlunxin, ...): one [`RegisteredTable`] per row of `registry/vendors.tsv` whose
//! reader is `registry`, reading that vendor's rows of the other files. No vendor here has Rust of its own.

// NFD's PCI labels: `feature.node.kubernetes.io/pci-<class>_<vendor>[_<device>].present`.
use super::nvidia::gfd_labels::NFD_PCI_PREFIX;
use super::registry::{LabelRole, REGISTRY, RowUnit, VendorRow};
use super::vendor_table::{NodeResources, Reading, Unit, VendorTable};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::Vendor;

/// The PCI classes of accelerators: VGA, 3D and other display controllers, processing accelerators,
/// co-processors. A vendor's NICs (class 02xx) are not its accelerators.
const ACCELERATOR_CLASSES: [&str; 5] = ["0300", "0302", "0380", "1200", "0b40"];

/// One registered vendor's table, by its row in `vendors.tsv`.
pub(crate) struct RegisteredTable {
    row: u8,
}

impl RegisteredTable {
    /// The table of the registry's vendor row `row`.
    pub(crate) const fn new(row: u8) -> RegisteredTable {
        RegisteredTable { row }
    }

    fn row(&self) -> Option<&'static VendorRow> {
        REGISTRY.vendors.get(usize::from(self.row))
    }

    fn name(&self) -> &'static str {
        self.row().map_or("", |v| v.name)
    }

    /// NFD's PCI labels of this vendor's accelerators on the node: (label, device ID if the label has one).
    fn pci_labels<'a>(&self, labels: &LabelReader<'a>) -> Vec<(&'a str, Option<&'a str>)> {
        let Some(row) = self.row() else {
            return Vec::new();
        };
        labels
            .iter()
            .filter_map(|(key, _)| {
                let rest = key.strip_prefix(NFD_PCI_PREFIX)?.strip_suffix(".present")?;
                let mut parts = rest.split('_');
                let (class, vendor) = (parts.next()?, parts.next()?);
                let device = parts.next();
                (ACCELERATOR_CLASSES.contains(&class) && row.pci_vendors.contains(&vendor))
                    .then_some((key, device))
            })
            .collect()
    }

    /// The values of this vendor's label rows of `role` on the node, after each row's value prefix.
    fn label_values<'a>(
        &self,
        labels: &LabelReader<'a>,
        role: LabelRole,
    ) -> Vec<(&'static str, &'a str)> {
        let name = self.name();
        REGISTRY
            .labels
            .iter()
            .filter(|row| row.vendor == name && row.role == role)
            .filter_map(|row| {
                let value = labels.get(row.key)?.trim();
                let value = match row.value_prefix {
                    Some(prefix) => value.strip_prefix(prefix)?,
                    None => value,
                };
                Some((row.key, value))
            })
            .collect()
    }
}

/// A number of GiB as labels write it: `64`, `64G`, `64Gi`, `64GB`.
fn gib(value: &str) -> Option<u64> {
    let value = value.trim();
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &value[digits.len()..];
    matches!(unit, "" | "G" | "Gi" | "GB" | "GiB")
        .then(|| digits.parse().ok())
        .flatten()
}

/// The vendor tables' unit of a registry row's.
pub(crate) fn unit(row: RowUnit) -> Unit {
    match row {
        RowUnit::Device => Unit::Device,
        RowUnit::Partition => Unit::Partition,
        RowUnit::Share => Unit::Share,
        RowUnit::Core => Unit::Core,
        RowUnit::Capacity => Unit::Capacity,
        RowUnit::Count => Unit::Count,
    }
}

/// Whether `name` is `<domain>/...` for one of `domains`: a prefix comparison, no search for the `/` (this
/// runs for every resource of every node under each registered table).
pub(crate) fn in_domains(name: &str, domains: &[&str]) -> bool {
    domains.iter().any(|domain| {
        name.len() > domain.len()
            && name.as_bytes()[domain.len()] == b'/'
            && name.starts_with(domain)
    })
}

/// The unit of a resource a sharing layer advertises for a built-in vendor's devices under its own domain
/// (`volcano.sh/vgpu-number`, `aliyun.com/gpu-count` for NVIDIA's; `resources.tsv`), for the vendor's module
/// to read beside its own names.
pub(crate) fn layer_unit(vendor: Vendor, name: &str) -> Option<Unit> {
    REGISTRY
        .layer_resource(vendor.name()?, name)
        .map(|row| unit(row.unit))
}

/// The physical devices a sharing layer counts for a built-in vendor under its own domain
/// (`aliyun.com/gpu-count`), and where the number came from; `None` where no such resource is above 0.
pub(crate) fn layer_count(vendor: Vendor, resources: &NodeResources<'_>) -> Option<(u64, String)> {
    count_resource(resources, |name| layer_unit(vendor, name))
}

/// The largest resource of unit [`Unit::Count`] above 0 (two layers counting the same devices agree, and
/// are never added), and its name.
fn count_resource(
    resources: &NodeResources<'_>,
    unit_of: impl Fn(&str) -> Option<Unit>,
) -> Option<(u64, String)> {
    resources
        .with_units(unit_of)
        .into_iter()
        .filter(|(_, unit, _)| *unit == Unit::Count)
        .max_by_key(|(_, _, n)| *n)
        .map(|(name, _, n)| (n, format!("capacity {name}")))
}

/// The steps of [`RegisteredTable`]'s reading.
impl RegisteredTable {
    /// The device resources, and the devices they count unless a sharing layer's capacity resource beside
    /// them makes them its shares, or the vendor's labeller counts them (`label_count`).
    fn read_device_resources(
        &self,
        labels: &mut LabelReader<'_>,
        units: &[(&str, Unit, u64)],
        label_count: bool,
        reading: &mut Reading,
    ) {
        // A sharing layer's capacity resource (HAMi's `huawei.com/Ascend310P-memory`) beside a device
        // resource makes that resource the layer's shares (HAMi advertises slots under the chip's name).
        let shared = units.iter().any(|(_, unit, _)| *unit == Unit::Capacity);
        // Each registered resource names its own devices (`Ascend310P-IPro` and `-VPro` are two cards):
        // they add up.
        let devices: Vec<(&str, u64)> = units
            .iter()
            .filter(|(_, unit, _)| *unit == Unit::Device)
            .map(|(name, _, n)| (*name, *n))
            .collect();
        reading.device_resources = devices.iter().map(|(name, _)| (*name).to_owned()).collect();
        let named = devices
            .iter()
            .map(|(name, _)| *name)
            .collect::<Vec<_>>()
            .join(" + ");
        if shared && !devices.is_empty() {
            labels.note(format!(
                "{named}: a sharing layer's shares (its capacity resources are advertised beside), not {}: \
                 the number of physical devices is in the layer's node annotation",
                self.devices_word()
            ));
        } else if !devices.is_empty() && !label_count {
            let n = devices
                .iter()
                .fold(0u64, |sum, (_, n)| sum.saturating_add(*n));
            reading.count = Some((n, format!("capacity {named}")));
            for (name, _) in devices
                .iter()
                .filter(|(name, _)| REGISTRY.resource(name).is_none())
            {
                labels.note(format!(
                    "{name} is not in the accelerator registry: read as whole {} of {}; if it is not, add \
                     its row to resources.tsv",
                    self.devices_word(),
                    self.name()
                ));
            }
        }
    }

    /// The model: the vendor's product label, else the one a resource's row names (devices first, then
    /// shares, partitions, capacity), else the family label, else the PCI device labels' model.
    fn product(
        &self,
        labels: &LabelReader<'_>,
        units: &[(&str, Unit, u64)],
    ) -> Option<(String, Option<String>)> {
        if let Some((key, value)) = self.label_values(labels, LabelRole::Product).first()
            && !value.is_empty()
        {
            return Some(((*value).to_owned(), Some((*key).to_owned())));
        }
        let from_resource = [Unit::Device, Unit::Share, Unit::Partition, Unit::Capacity]
            .iter()
            .flat_map(|want| units.iter().filter(move |(_, unit, _)| unit == want))
            .find_map(|(name, _, _)| {
                let product = REGISTRY.resource(name)?.product?;
                Some((product.to_owned(), Some(format!("resource {name}"))))
            });
        if from_resource.is_some() {
            return from_resource;
        }
        if let Some((key, value)) = self.label_values(labels, LabelRole::Family).first()
            && !value.is_empty()
        {
            return Some(((*value).to_owned(), Some((*key).to_owned())));
        }
        let row = self.row()?;
        self.pci_labels(labels).iter().find_map(|(key, device)| {
            let product = row
                .pci_vendors
                .iter()
                .find_map(|v| REGISTRY.pci_product(v, (*device)?))?;
            Some((product.to_owned(), Some((*key).to_owned())))
        })
    }
}

impl VendorTable for RegisteredTable {
    fn vendor(&self) -> Vendor {
        Vendor::Registered(self.row)
    }

    fn unit_of(&self, resource: &str) -> Option<Unit> {
        // Every row of a vendor the registry reads is in the vendor's domains, and no two vendors share a
        // domain (the parser holds both): a name outside them is not this vendor's, without a lookup. This
        // runs for every resource of every node under each registered table.
        let vendor = self.row()?;
        if !in_domains(resource, &vendor.domains) {
            return None;
        }
        match REGISTRY.resource(resource) {
            Some(row) => (row.vendor == vendor.name).then(|| unit(row.unit)),
            // A resource of the vendor's domain that no row names: a device plugin newer than the
            // registry. Seen, not dropped: read as whole devices (most plugins name whole devices), and
            // noted.
            None => REGISTRY
                .not_accelerator(resource)
                .is_none()
                .then_some(Unit::Device),
        }
    }

    fn labelled(&self, labels: &LabelReader<'_>) -> bool {
        let name = self.name();
        REGISTRY.labels.iter().any(|row| {
            row.vendor == name
                && labels.get(row.key).is_some_and(|value| {
                    row.value_prefix
                        .is_none_or(|prefix| value.trim().starts_with(prefix))
                })
        }) || !self.pci_labels(labels).is_empty()
    }

    fn read(
        &self,
        labels: &mut LabelReader<'_>,
        resources: &NodeResources<'_>,
        _sensed: Option<super::vendor_table::Sensed>,
    ) -> Reading {
        let mut reading = Reading {
            labelled: self.labelled(labels),
            ..Default::default()
        };
        let units = resources.with_units(|r| self.unit_of(r));
        let label_count = self
            .label_values(labels, LabelRole::Count)
            .iter()
            .find_map(|(key, v)| Some((*key, v.parse::<u64>().ok()?)));
        self.read_device_resources(labels, &units, label_count.is_some(), &mut reading);
        // The vendor's labeller counts physical devices; a resource may count shares.
        if let Some((key, n)) = label_count {
            reading.count = Some((n, key.to_owned()));
        }
        if reading.count.is_none() {
            reading.count = count_resource(resources, |r| self.unit_of(r));
        }
        reading.memory_mib = self
            .label_values(labels, LabelRole::MemoryMib)
            .iter()
            .find_map(|(key, v)| Some((v.parse::<u64>().ok()?, (*key).to_owned())))
            .or_else(|| {
                self.label_values(labels, LabelRole::MemoryGib)
                    .iter()
                    .find_map(|(key, v)| Some((gib(v)?.checked_mul(1024)?, (*key).to_owned())))
            });
        reading.product = self.product(labels, &units);
        reading
    }

    fn devices_word(&self) -> &'static str {
        self.row().map_or("devices", |v| v.devices_word)
    }
}
