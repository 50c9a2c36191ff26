//! Cloud providers' node labels that describe GPUs: GKE, EKS (managed node groups, Karpenter, Auto Mode)
//! and AKS. Clusters there often run no GPU Feature Discovery; these labels are what names their GPUs.

use crate::inventory::label_reader::{LabelReader, MemoryMib};

/// GKE: the accelerator type of the node pool, e.g. `nvidia-tesla-t4`, `nvidia-l4`, `nvidia-h100-80gb`.
pub(crate) const GKE_ACCELERATOR: &str = "cloud.google.com/gke-accelerator";
/// EKS (eksctl node groups, Cluster Autoscaler convention): e.g. `nvidia-tesla-t4`.
pub(crate) const EKS_ACCELERATOR: &str = "k8s.amazonaws.com/accelerator";
/// GKE GPU sharing: `time-sharing` or `mps`.
pub(crate) const GKE_SHARING_STRATEGY: &str = "cloud.google.com/gke-gpu-sharing-strategy";
/// GKE GPU sharing: how many containers share one GPU (the device plugin advertises that many per GPU).
pub(crate) const GKE_MAX_SHARED_CLIENTS: &str = "cloud.google.com/gke-max-shared-clients-per-gpu";
/// GKE MIG: the partition size (`1g.5gb`); the partitions are advertised as `nvidia.com/gpu`.
pub(crate) const GKE_PARTITION_SIZE: &str = "cloud.google.com/gke-gpu-partition-size";
/// AKS GPU node pools: the vendor (`nvidia`), not the model.
pub(crate) const AKS_ACCELERATOR: &str = "kubernetes.azure.com/accelerator";
/// Karpenter on AWS: `<prefix>name` (`t4`, `a10g`, `h100`), `count`, `memory` (MiB per GPU), `manufacturer`.
pub(crate) const KARPENTER_GPU_PREFIX: &str = "karpenter.k8s.aws/instance-gpu-";
/// EKS Auto Mode: the same four labels as Karpenter under its own prefix.
pub(crate) const EKS_AUTO_GPU_PREFIX: &str = "eks.amazonaws.com/instance-gpu-";

/// The accelerator labels whose value names the model, in precedence order.
const ACCELERATOR_LABELS: [&str; 3] = [GKE_ACCELERATOR, EKS_ACCELERATOR, AKS_ACCELERATOR];
/// The instance-type label families, in precedence order.
const INSTANCE_GPU_PREFIXES: [&str; 2] = [KARPENTER_GPU_PREFIX, EKS_AUTO_GPU_PREFIX];

/// Values that name a vendor or say "yes", not a model (AKS writes `nvidia`).
const NOT_A_MODEL: [&str; 4] = ["nvidia", "true", "gpu", "yes"];
/// Words that name accelerators of other vendors: such a label is not about an NVIDIA GPU.
const OTHER_VENDORS: [&str; 10] = [
    "amd",
    "radeon",
    "instinct",
    "intel",
    "habana",
    "gaudi",
    "inferentia",
    "trainium",
    "tpu",
    "xilinx",
];

/// What a node's cloud labels say about its NVIDIA GPUs.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct CloudGpu {
    /// A cloud label says the node has an NVIDIA GPU.
    pub(crate) present: bool,
    /// The model and the label that named it.
    pub(crate) product: Option<(String, String)>,
    /// The GPU count and its label.
    pub(crate) count: Option<(u64, String)>,
    /// Memory per GPU and its label.
    pub(crate) memory: Option<(MemoryMib, String)>,
    /// GKE GPU sharing: (strategy, clients per GPU).
    pub(crate) sharing: Option<(Option<String>, Option<u64>)>,
    /// GKE MIG partition size (`1g.5gb`).
    pub(crate) partition_size: Option<String>,
}

/// Whether a cloud label value names a non-NVIDIA accelerator (`amd-radeon-pro-v520`, `tpu-v4-podslice`).
fn names_other_vendor(value: &str) -> bool {
    value
        .to_ascii_lowercase()
        .split(['-', '_', '.', ' '])
        .any(|word| OTHER_VENDORS.contains(&word))
}

/// Reads the cloud GPU labels. Unusable values (empty, another vendor) are noted and ignored.
pub(crate) fn read(labels: &mut LabelReader<'_>) -> CloudGpu {
    let mut cloud = CloudGpu::default();
    for key in ACCELERATOR_LABELS {
        let Some(value) = labels.text(key) else {
            continue;
        };
        if names_other_vendor(value) {
            labels.note(format!(
                "label {key}={value} names a non-NVIDIA accelerator and was ignored"
            ));
            continue;
        }
        cloud.present = true;
        if cloud.product.is_none() && !NOT_A_MODEL.contains(&value.to_ascii_lowercase().as_str()) {
            cloud.product = Some((value.to_owned(), key.to_owned()));
        }
    }
    for prefix in INSTANCE_GPU_PREFIXES {
        // Most nodes carry none of these: look for the prefix once before making its four keys.
        if !labels.iter().any(|(k, _)| k.starts_with(prefix)) {
            continue;
        }
        let manufacturer_key = format!("{prefix}manufacturer");
        if let Some(manufacturer) = labels.text(&manufacturer_key) {
            if !manufacturer.eq_ignore_ascii_case("nvidia") {
                labels.note(format!(
                    "label {manufacturer_key}={manufacturer}: the {prefix}* labels describe a non-NVIDIA GPU and were ignored"
                ));
                continue;
            }
            cloud.present = true;
        }
        let name_key = format!("{prefix}name");
        if let Some(name) = labels.text(&name_key) {
            if names_other_vendor(name) {
                labels.note(format!(
                    "label {name_key}={name} names a non-NVIDIA GPU; the {prefix}* labels were ignored"
                ));
                continue;
            }
            cloud.present = true;
            if cloud.product.is_none() {
                cloud.product = Some((name.to_owned(), name_key));
            }
        }
        let count_key = format!("{prefix}count");
        if let Some(count) = labels.count(&count_key) {
            cloud.present |= count > 0;
            if cloud.count.is_none() {
                cloud.count = Some((count, count_key));
            }
        }
        let memory_key = format!("{prefix}memory");
        if let Some(memory) = labels.memory_mib(&memory_key)
            && cloud.memory.is_none()
        {
            cloud.memory = Some((memory, memory_key));
        }
    }
    if cloud.present {
        let strategy = labels.text(GKE_SHARING_STRATEGY).map(str::to_owned);
        let clients = labels.count(GKE_MAX_SHARED_CLIENTS).filter(|c| *c > 1);
        if strategy.is_some() || clients.is_some() {
            cloud.sharing = Some((strategy, clients));
        }
        cloud.partition_size = labels.text(GKE_PARTITION_SIZE).map(str::to_owned);
    } else {
        // Count or memory without anything saying it is an NVIDIA GPU describes nothing we report.
        cloud.count = None;
        cloud.memory = None;
    }
    cloud
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn read_labels(pairs: &[(&str, &str)]) -> (CloudGpu, Vec<String>) {
        let map: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let map: crate::inventory::text_map::TextMap = map.iter().collect();
        let mut reader = LabelReader::new(Some(&map));
        let cloud = read(&mut reader);
        (cloud, reader.finish().1)
    }

    #[test]
    fn gke_names_the_model() {
        let (cloud, _) = read_labels(&[(GKE_ACCELERATOR, "nvidia-tesla-k80")]);
        assert!(cloud.present);
        assert_eq!(
            cloud.product,
            Some(("nvidia-tesla-k80".into(), GKE_ACCELERATOR.into()))
        );
        assert_eq!((cloud.count, cloud.memory), (None, None));
    }

    #[test]
    fn karpenter_gives_model_count_and_memory() {
        let (cloud, notes) = read_labels(&[
            ("karpenter.k8s.aws/instance-gpu-name", "a10g"),
            ("karpenter.k8s.aws/instance-gpu-count", "4"),
            ("karpenter.k8s.aws/instance-gpu-memory", "24576"),
            ("karpenter.k8s.aws/instance-gpu-manufacturer", "nvidia"),
        ]);
        assert!(cloud.present);
        assert_eq!(cloud.product.unwrap().0, "a10g");
        assert_eq!(cloud.count.unwrap().0, 4);
        assert_eq!(cloud.memory.unwrap().0.mib, 24576);
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn aks_says_nvidia_but_not_which_model() {
        let (cloud, _) = read_labels(&[(AKS_ACCELERATOR, "nvidia")]);
        assert!(cloud.present);
        assert_eq!(cloud.product, None);
    }

    #[test]
    fn other_vendors_and_empty_values_are_not_nvidia_gpus() {
        for pairs in [
            &[
                ("karpenter.k8s.aws/instance-gpu-name", "radeon-pro-v520"),
                ("karpenter.k8s.aws/instance-gpu-manufacturer", "amd"),
                ("karpenter.k8s.aws/instance-gpu-count", "1"),
            ][..],
            &[(GKE_ACCELERATOR, "")],
            &[(EKS_ACCELERATOR, "amd-instinct-mi300x")],
            &[("karpenter.k8s.aws/instance-gpu-memory", "16384")],
        ] {
            let (cloud, _) = read_labels(pairs);
            assert_eq!(cloud, CloudGpu::default(), "{pairs:?}");
        }
    }
}
