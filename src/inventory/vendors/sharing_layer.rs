//! The physical devices a GPU-sharing layer lists in a node annotation (HAMi's `hami.io/node-*-register`,
//! Volcano's `volcano.sh/node-vgpu-register`): the node advertises shares under the device resource
//! (`nvidia.com/gpu: 80` for 8 GPUs split 10 ways), the annotation says which devices there are, how many
//! shares each has and whether each is healthy.
//!
//! Three encodings are in use on real nodes (HAMi's `pkg/device/devices.go`): records separated by `:`, of
//! 7 fields (`uuid,shares,memMiB,cores,type,numa,healthy`, HAMi to 2.4) or 9 (`…,index,mode`, 2.5-2.7),
//! Volcano's 6 (`uuid,shares,memMiB,type,healthy,mode`), and a JSON array (HAMi 2.8 and later: `id`, `count`,
//! `devmem`, `devcore`, `type`, `health`, every field omitted when empty).

use serde::Deserialize;

use super::registry::REGISTRY;
use crate::inventory::model::Vendor;

/// One physical device a sharing layer lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LayerDevice {
    /// Its ID (a GPU UUID, an NPU's ID).
    pub(crate) id: String,
    /// How many shares it is split into.
    pub(crate) shares: u64,
    /// The model, as the layer names it (`NVIDIA-Tesla V100-PCIE-32GB`).
    pub(crate) model: Option<String>,
    /// Its memory in MiB, as the layer counts it (what its shares' memory limits are out of).
    pub(crate) memory_mib: Option<u64>,
    /// The layer's health flag.
    pub(crate) healthy: bool,
}

/// One of a node's sharing-layer annotations, read once per scan of the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LayerList {
    /// The annotation.
    pub(crate) key: String,
    /// The layer's name (`HAMi`).
    pub(crate) layer: &'static str,
    /// Whose devices it lists, as the registry says; `None`: the node's vendor's.
    pub(crate) vendor: Option<&'static str>,
    /// The devices, in order: all of them, or those before the record that could not be read.
    pub(crate) devices: Vec<LayerDevice>,
    /// Why the value could not be read whole (cut short by `kubectl describe`, another encoding).
    pub(crate) error: Option<String>,
}

#[derive(Deserialize)]
struct JsonDevice {
    #[serde(default)]
    id: String,
    #[serde(default)]
    count: i64,
    #[serde(default, rename = "type")]
    type_: String,
    #[serde(default)]
    devmem: i64,
    // Omitted when false (Go's omitempty): absent is unhealthy.
    #[serde(default)]
    health: bool,
}

/// The devices an annotation value lists, or why it cannot be read (cut short by `kubectl describe`,
/// another encoding) with the whole records before the one that could not be.
pub(crate) fn parse(value: &str) -> Result<Vec<LayerDevice>, (Vec<LayerDevice>, String)> {
    let value = value.trim();
    if value.starts_with('[') {
        let devices: Vec<JsonDevice> = serde_json::from_str(value)
            .map_err(|e| (Vec::new(), format!("not the layer's JSON list: {e}")))?;
        return Ok(devices
            .into_iter()
            .map(|d| LayerDevice {
                id: d.id,
                shares: u64::try_from(d.count).unwrap_or(0),
                model: Some(d.type_).filter(|t| !t.is_empty()),
                memory_mib: u64::try_from(d.devmem).ok().filter(|m| *m > 0),
                healthy: d.health,
            })
            .collect());
    }
    if !value.contains(':') {
        return Err((Vec::new(), "no `:` after a device record".to_owned()));
    }
    let mut devices = Vec::new();
    for text in value.split(':').filter(|record| !record.is_empty()) {
        match record(text) {
            Ok(device) => devices.push(device),
            Err(why) => return Err((devices, why)),
        }
    }
    Ok(devices)
}

/// One `:`-separated record.
fn record(text: &str) -> Result<LayerDevice, String> {
    let fields: Vec<&str> = text.split(',').map(str::trim).collect();
    // (type, healthy) positions by the encoding's field count.
    let (model, health) = match fields.len() {
        7 | 9 => (4, 6),
        6 => (3, 4),
        n => {
            return Err(format!(
                "a device record of {n} fields ({:?}): expected 6, 7 or 9",
                text.chars().take(80).collect::<String>()
            ));
        }
    };
    let shares = fields[1]
        .parse()
        .map_err(|_| format!("share count {:?} is not a number", fields[1]))?;
    let healthy = fields[health]
        .parse()
        .map_err(|_| format!("health {:?} is not true or false", fields[health]))?;
    Ok(LayerDevice {
        id: fields[0].to_owned(),
        shares,
        model: Some(fields[model].to_owned()).filter(|m| !m.is_empty()),
        // The third field in every encoding (`uuid,shares,memMiB,...`).
        memory_mib: fields[2].parse().ok().filter(|m| *m > 0),
        healthy,
    })
}

/// The pod annotations in which a sharing layer records the devices it gave each container: HAMi's after
/// binding, else its scheduler's decision (`hami.io/vgpu-devices-allocated`, `…-to-allocate`: HAMi
/// `docs/develop/protocol.md`), and Volcano vGPU's (`volcano.sh/vgpu-ids-new`, HAMi's encoding).
pub const POD_DEVICE_ANNOTATIONS: [&str; 3] = [
    "hami.io/vgpu-devices-allocated",
    "hami.io/vgpu-devices-to-allocate",
    "volcano.sh/vgpu-ids-new",
];

/// One device a sharing layer gave a pod's container: its ID, MiB and percent of cores.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodDevice {
    /// The device's ID (a GPU UUID).
    pub id: String,
    /// MiB of its memory the container may use.
    pub memory_mib: u64,
    /// Percent of its cores (0: not limited).
    pub cores: u64,
}

/// The devices a pod-side annotation value names, every container's (`;` between containers, `:` after
/// each device record `uuid,type,MiB,cores`); a record that cannot be read is left out.
pub fn pod_devices(value: &str) -> Vec<PodDevice> {
    value
        .split([';', ':'])
        .filter_map(|record| {
            let mut fields = record.split(',').map(str::trim);
            let id = fields.next().filter(|id| !id.is_empty())?;
            let _type = fields.next()?;
            let memory_mib = fields.next()?.parse().ok()?;
            let cores = fields.next()?.parse().ok()?;
            Some(PodDevice {
                id: id.to_owned(),
                memory_mib,
                cores,
            })
        })
        .collect()
}

/// A node's annotations that the registry names as sharing layers' device lists, each read once.
pub(crate) fn lists<'a>(registers: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<LayerList> {
    registers
        .into_iter()
        .filter_map(|(key, value)| {
            let row = REGISTRY.sharing_layer(key)?;
            let (devices, error) = match parse(value) {
                Ok(devices) => (devices, None),
                Err((devices, why)) => (devices, Some(why)),
            };
            Some(LayerList {
                key: key.to_owned(),
                layer: row.layer,
                vendor: row.vendor,
                devices,
                error,
            })
        })
        .collect()
}

/// Whose devices a node's sharing-layer lists are (a layer that names no vendor: unknown), if it has any:
/// the list of the most devices read whole (two vendors' lists on one node: the larger is the node's).
pub(crate) fn vendor_of(lists: &[LayerList]) -> Option<Vendor> {
    // The first of the largest (max_by_key keeps the last of equals).
    lists
        .iter()
        .rev()
        .map(|list| {
            let vendor = list
                .vendor
                .and_then(Vendor::from_name)
                .unwrap_or(Vendor::Unknown);
            let whole = if list.error.is_some() {
                0
            } else {
                list.devices.len()
            };
            (vendor, whole)
        })
        .max_by_key(|(vendor, n)| (*n, *vendor != Vendor::Unknown))
        .map(|(vendor, _)| vendor)
}

/// The list of the node's own devices, `vendor`'s (or a layer's that names no vendor): the first.
pub(crate) fn own<'l>(lists: &'l [LayerList], vendor: Option<&str>) -> Option<&'l LayerList> {
    lists
        .iter()
        .find(|list| list.vendor.is_none_or(|v| Some(v) == vendor))
}

/// The devices other vendors' lists on the node flag unhealthy, in words (one vendor per node: they are its
/// problem too, named by the list they are in). A list cut short still names the devices before the cut.
pub(crate) fn others_unhealthy(lists: &[LayerList], vendor: Option<&str>) -> Vec<String> {
    lists
        .iter()
        .filter(|list| list.vendor.is_some_and(|v| Some(v) != vendor))
        .flat_map(|list| {
            list.devices
                .iter()
                .filter(|d| !d.healthy)
                .map(move |d| format!("{} ({}: unhealthy)", d.id, list.key))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hami_s_three_encodings_and_volcano_s_read_alike() {
        // HAMi's protocol document's example (7 fields).
        let seven = "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:\
                     GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:";
        let d = parse(seven).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].shares, d[0].healthy), (10, true));
        assert_eq!(d[0].model.as_deref(), Some("NVIDIA-Tesla V100-PCIE-32GB"));
        let nine = "GPU-a,10,81559,100,NVIDIA-NVIDIA H100 80GB HBM3,0,false,0,hami-core:";
        assert!(!parse(nine).unwrap()[0].healthy);
        let volcano = "GPU-b,10,32768,NVIDIA-Tesla V100,true,hami-core:";
        assert_eq!(parse(volcano).unwrap()[0].shares, 10);
        let json = r#"[{"id":"xpu-0","index":0,"count":1,"devmem":98304,"devcore":100,"type":"XPU","health":true},{"id":"xpu-1","count":4,"type":"XPU"}]"#;
        let d = parse(json).unwrap();
        assert_eq!(d.len(), 2);
        assert!(d[0].healthy && !d[1].healthy, "an omitted health is false");
    }

    #[test]
    fn a_pod_s_devices_are_read_per_container_and_device() {
        // HAMi's protocol doc: two containers, one V100 each, the same card.
        let value = "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,3000,0:;GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,NVIDIA,5000,0:;";
        let devices = pod_devices(value);
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0].memory_mib, 3000);
        assert_eq!(devices[1].memory_mib, 5000);
        assert!(devices.iter().all(|d| d.id.starts_with("GPU-0fc3eda5")));
        assert_eq!(pod_devices(""), Vec::new());
        assert_eq!(pod_devices("GPU-1,NVIDIA,lots,0:"), Vec::new());
    }

    #[test]
    fn a_value_cut_short_is_an_error_not_fewer_devices() {
        // `kubectl describe node` cuts long annotations with "...".
        let cut = "GPU-6d2f3f7c-2a1b-4b5e-9c3d-0e1f2a3b4c5d,10,40960,100,NVIDIA-NVIDIA A100-PCIE-40GB,0,true:GPU-...";
        assert!(parse(cut).is_err());
        assert!(parse("").is_err());
        assert!(parse("[{").is_err());
        assert!(parse("a,b,c,d,e,f,g:").is_err());
    }
}
