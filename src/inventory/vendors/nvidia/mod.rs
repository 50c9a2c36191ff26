//! NVIDIA: the device plugin's `nvidia.com/*` resources, GPU Feature Discovery's labels ([`gfd_labels`]), sharing
//! and MIG ([`features`]), the clouds' NVIDIA labels ([`cloud`]), and GPUs handed to VMs and Windows
//! ([`vm_gpus`]), read into the scanner's [`Reading`] by `gpu_reading` behind [`VendorTable`], as every
//! vendor's table is. Its findings are worded as the first editions worded them.

pub(crate) mod cloud;
pub(crate) mod features;
pub(crate) mod gfd_labels;
mod gpu_reading;
pub(crate) mod resource_names;
pub(crate) mod vm_gpus;

use super::vendor_table::{NodeResources, Reading, Sensed, Unit, VendorTable};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Issue, IssueReason, NodeInventory, Vendor};
use resource_names::{GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX as RESOURCE_PREFIX};
use vm_gpus::{passthrough_product, vgpu_type};

/// NVIDIA's table.
pub(crate) struct Nvidia;

/// NVIDIA's table, as `vendors::TABLES` lists it.
pub(crate) const NVIDIA: Nvidia = Nvidia;

impl VendorTable for Nvidia {
    fn vendor(&self) -> Vendor {
        Vendor::Nvidia
    }

    fn unit_of(&self, resource: &str) -> Option<Unit> {
        unit_of(resource)
    }

    fn labelled(&self, labels: &LabelReader<'_>) -> bool {
        labelled(labels)
    }

    /// GPU Feature Discovery runs: some node carries one of its labels.
    fn labeller_seen(&self, labels: &LabelReader<'_>) -> bool {
        labels.iter().any(|(k, v)| gfd_labels::is_gfd_label(k, v))
    }

    fn sense(&self, labels: &mut LabelReader<'_>, resources: &NodeResources<'_>) -> Option<Sensed> {
        Some(gpu_reading::sense(labels, resources))
    }

    fn read(
        &self,
        labels: &mut LabelReader<'_>,
        resources: &NodeResources<'_>,
        sensed: Option<Sensed>,
    ) -> Reading {
        gpu_reading::read(labels, resources, sensed)
    }

    fn own_label(&self, field: &str) -> Option<&'static str> {
        match field {
            "count" => Some(gfd_labels::GPU_COUNT),
            "memoryMiB" => Some(gfd_labels::GPU_MEMORY),
            _ => None,
        }
    }

    fn workload_label(&self) -> Option<&'static str> {
        Some(gfd_labels::GPU_WORKLOAD_CONFIG)
    }

    fn devices_word(&self) -> &'static str {
        "GPUs"
    }

    fn has_devices(&self, entry: &NodeInventory, capacity_gpus: f64, cloud: bool) -> bool {
        entry.count > 0 || capacity_gpus > 0.0 || cloud
    }

    fn labels_missing(&self) -> String {
        "GPU node without an nvidia.com/gpu.product label, and no cloud-provider label names its GPU: \
         GPU Feature Discovery runs in this inventory's scope (other nodes carry its labels) but has not \
         labelled this node (check the gpu-feature-discovery and nvidia-driver pods on this node)"
            .to_owned()
    }

    fn own_issues(&self, entry: &NodeInventory) -> Vec<Issue> {
        mig_issues(entry)
    }

    fn not_allocatable(&self, entry: &NodeInventory, capacity_gpus: f64) -> String {
        // Nothing allocatable at all on a Ready node: the device plugin is not serving (or the node moved
        // to DRA and kept its old capacity). One issue, not also GpusUnhealthy for every resource.
        format!(
            "{} but nvidia.com/gpu, nvidia.com/gpu.shared and nvidia.com/mig-* allocatable sum to 0: \
             the NVIDIA device plugin is not advertising them (not running or not registered, every \
             device unhealthy, or the node moved to DRA and kept its old capacity)",
            if entry.count > 0 {
                format!("the node has {} GPU(s)", entry.count)
            } else if capacity_gpus > 0.0 {
                format!("capacity shows {capacity_gpus} GPU resource(s)")
            } else {
                "a cloud-provider label says the node has an NVIDIA GPU".to_owned()
            }
        )
    }

    fn missing_resource(&self, _entry: &NodeInventory) -> String {
        GPU_RESOURCE.to_owned()
    }

    fn unhealthy(&self, listed: &str) -> String {
        format!(
            "{listed}: the device plugin withdrew unhealthy devices (check dmesg for Xid errors and DCGM health)"
        )
    }

    /// As the first editions did: an NVIDIA node's entry says nothing of other vendors' resources.
    fn notes_other_vendors(&self) -> bool {
        false
    }

    /// As the first editions did: the issues in the order the diagnosis finds them.
    fn orders_issues_by_reason(&self) -> bool {
        false
    }
}

/// What GPU Feature Discovery and the MIG manager say of MIG: an invalid layout, a failed or a running
/// re-partitioning.
fn mig_issues(entry: &NodeInventory) -> Vec<Issue> {
    let mut issues = Vec::new();
    if entry
        .product
        .as_deref()
        .is_some_and(|p| p.ends_with("-MIG-INVALID"))
    {
        issues.push(Issue::new(
            IssueReason::MigInvalid,
            "GPU Feature Discovery reports an invalid MIG configuration (product ends in -MIG-INVALID): \
             the GPUs' MIG layout does not fit the MIG strategy; fix nvidia.com/mig.config"
                .to_owned(),
        ));
    }
    let config = entry
        .mig
        .as_ref()
        .and_then(|m| m.config.as_deref())
        .unwrap_or("<unset>");
    let state = entry.mig.as_ref().and_then(|m| m.config_state.as_deref());
    if state == Some("failed") {
        issues.push(Issue::new(
            IssueReason::MigConfigFailed,
            format!(
                "the MIG manager failed to apply nvidia.com/mig.config={config} \
                 (nvidia.com/mig.config.state=failed); see the nvidia-mig-manager pod's log"
            ),
        ));
    }
    if let Some(state) = state.filter(|s| matches!(*s, "pending" | "rebooting")) {
        issues.push(Issue::new(
            IssueReason::MigConfigPending,
            format!(
                "the GPUs are being re-partitioned: the MIG manager is applying nvidia.com/mig.config={config} \
                 (nvidia.com/mig.config.state={state}); GPU pods are evicted and allocatable GPUs may read 0 \
                 until the state is success"
            ),
        ));
    }
    issues
}

/// `nvidia.com/gpu` is a device (a share under time-slicing, which the scanner's NVIDIA path works out),
/// `gpu.shared` a share, `mig-*` a partition; KubeVirt's `nvidia.com/<PCI device name>` a passthrough device
/// and `nvidia.com/<vGPU type>` a share. Other `nvidia.com/*` resources (the network operator's RDMA and
/// SR-IOV ones) are read as before but are no devices. Sharing layers' names for NVIDIA's GPUs under their own
/// domains (`volcano.sh/vgpu-number`) are the registry's rows.
fn unit_of(name: &str) -> Option<Unit> {
    let Some(rest) = name.strip_prefix(RESOURCE_PREFIX) else {
        return super::registered::layer_unit(Vendor::Nvidia, name);
    };
    match rest {
        "gpu" => Some(Unit::Device),
        "gpu.shared" => Some(Unit::Share),
        _ if rest.starts_with("mig-") && rest.len() > 4 => Some(Unit::Partition),
        _ if vgpu_type(name).is_some() => Some(Unit::Share),
        _ if passthrough_product(name).is_some() => Some(Unit::Device),
        _ => None,
    }
}

/// Labels GPU Feature Discovery and the GPU Operator write are judged by [`VendorTable::sense`], on every
/// node; no extra rule here.
fn labelled(_labels: &LabelReader<'_>) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubevirt_resources_are_read_by_their_shape() {
        assert_eq!(
            passthrough_product("nvidia.com/GA102GL_A10").as_deref(),
            Some("NVIDIA-A10")
        );
        assert_eq!(
            passthrough_product("nvidia.com/TU104GL_TESLA_T4").as_deref(),
            Some("NVIDIA-TESLA-T4")
        );
        // pci.ids' own case, as KubeVirt's plugin keeps it (kubevirt/kubevirt#6718).
        assert_eq!(
            passthrough_product("nvidia.com/GM107M_GeForce_GTX_860M").as_deref(),
            Some("NVIDIA-GeForce-GTX-860M")
        );
        assert_eq!(
            vgpu_type("nvidia.com/NVIDIA_A10-4Q"),
            Some(("NVIDIA-A10".to_owned(), 4))
        );
        assert_eq!(
            vgpu_type("nvidia.com/GRID_T4-16Q"),
            Some(("NVIDIA-T4".to_owned(), 16))
        );
        for not_a_gpu in [
            "nvidia.com/rdma_shared_device_a",
            "nvidia.com/hostdev",
            "nvidia.com/mlnx_sriov_rdma",
            "nvidia.com/gpu",
            "nvidia.com/NVIDIA_A10",
        ] {
            assert_eq!(passthrough_product(not_a_gpu), None, "{not_a_gpu}");
            assert_eq!(vgpu_type(not_a_gpu), None, "{not_a_gpu}");
        }
        assert_eq!(unit_of("nvidia.com/rdma_shared_device_a"), None);
        assert_eq!(unit_of("nvidia.com/mig-1g.10gb"), Some(Unit::Partition));
        assert_eq!(unit_of("nvidia.com/NVIDIA_A10-4Q"), Some(Unit::Share));
        assert_eq!(unit_of("nvidia.com/GA102GL_A10"), Some(Unit::Device));
    }
}
