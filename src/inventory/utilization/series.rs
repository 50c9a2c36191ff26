//! One idle series' labels, read the ways dcgm-exporter and Prometheus spell them.
//!
//! dcgm-exporter names the holder of a GPU with `pod`, `namespace` (`pod_name`, `pod_namespace` before 2.x),
//! and for a DRA-allocated GPU `dra_claim_name`, `dra_claim_namespace`, `dra_pool_name`, `dra_device_name`;
//! the node with `Hostname` (`hostname` in some releases); a MIG instance with `GPU_I_PROFILE` and `GPU_I_ID`.
//! A Prometheus job without `honor_labels` renames the pod labels it would overwrite to `exported_pod`,
//! `exported_namespace`. Empty values are absent (PromQL drops empty labels). The query's own label
//! [`BUSY_LABEL`] marks a shared GPU's series that was not idle ([`IdleSeries::busy`]).

use crate::inventory::model::ClaimRef;

/// Who a series says holds its GPU.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SeriesHolder {
    /// A ResourceClaim (DRA).
    Claim(ClaimRef),
    /// A pod, by namespace and name.
    Pod {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// No holder labels: the exporter runs without the pod mapping, or the GPU is not held.
    Unnamed,
}

/// One GPU or MIG instance that stayed idle through the window.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdleSeries {
    /// Who the labels say holds it.
    pub holder: SeriesHolder,
    /// The node (`Hostname`), when labelled.
    pub node: Option<String>,
    /// The GPU: its UUID, else its index (`gpu`), else its device file (`device`).
    pub gpu: Option<String>,
    /// The MIG profile (`1g.10gb`) of a MIG instance.
    pub mig_profile: Option<String>,
    /// The MIG instance's id on its GPU (`GPU_I_ID`).
    pub mig_instance: Option<String>,
    /// The DRA device's name in its pool (`dra_device_name`).
    pub dra_device: Option<String>,
    /// Since when it has been idle at the latest (kept by the source while it stays idle).
    pub since: jiff::Timestamp,
    /// Not idle: a series of a node that shares its GPUs, which the query asks for busy as well, so that a
    /// busy shared GPU is known as busy rather than as unmeasured (docs/utilization.md, "Shared GPUs").
    pub busy: bool,
}

/// The label the query puts on the busy series it returns beside the idle ones (`label_replace`), and its value.
pub const BUSY_LABEL: (&str, &str) = ("gpu_inventory_activity", "busy");

/// The labels the source asks Prometheus to keep (`max by (...)`), every spelling this module reads.
pub const LABELS: [&str; 18] = [
    "Hostname",
    "hostname",
    "gpu",
    "UUID",
    "uuid",
    "device",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "namespace",
    "pod",
    "exported_namespace",
    "exported_pod",
    "pod_namespace",
    "pod_name",
    "dra_claim_namespace",
    "dra_claim_name",
    "dra_pool_name",
    "dra_device_name",
];

impl IdleSeries {
    /// Reads a series' labels through `label` (a label's value by name); `since` is when the source first
    /// found it idle.
    pub fn of_labels<'l>(
        label: impl Fn(&str) -> Option<&'l str>,
        since: jiff::Timestamp,
    ) -> IdleSeries {
        let get = |names: &[&str]| {
            names
                .iter()
                .find_map(|n| label(n).filter(|v| !v.is_empty()))
                .map(str::to_owned)
        };
        let claim = get(&["dra_claim_namespace"]).zip(get(&["dra_claim_name"]));
        // The pod's own labels first: `exported_*` are the exporter's when the scrape's target labels (the
        // exporter pod's own `pod`, `namespace`) took the plain names.
        let pod = get(&["exported_namespace"])
            .zip(get(&["exported_pod"]))
            .or_else(|| get(&["namespace"]).zip(get(&["pod"])))
            .or_else(|| get(&["pod_namespace"]).zip(get(&["pod_name"])));
        let holder = match (claim, pod) {
            (Some((namespace, name)), _) => SeriesHolder::Claim(ClaimRef { namespace, name }),
            (None, Some((namespace, name))) => SeriesHolder::Pod { namespace, name },
            (None, None) => SeriesHolder::Unnamed,
        };
        IdleSeries {
            holder,
            node: get(&["Hostname", "hostname"]),
            gpu: get(&["UUID", "uuid", "gpu", "device"]),
            mig_profile: get(&["GPU_I_PROFILE"]),
            mig_instance: get(&["GPU_I_ID"]),
            dra_device: get(&["dra_device_name"]),
            since,
            busy: label(BUSY_LABEL.0) == Some(BUSY_LABEL.1),
        }
    }
}
