//! The `GpuNode` custom resource (`homelab.youngju.dev/v1`): one per GPU or accelerator node, named after it.
//!
//! A `GpuInventory` is the aggregate over many nodes and stays small at any cluster size; each node's full
//! detail (devices included) lives here, one object per node, as Node Feature Discovery keeps one `NodeFeature`
//! per node and EndpointSlices replaced the one `Endpoints` object.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::gpu_node_entry::GpuNodeEntry;

/// Label on every GpuNode: the vendor of its GPUs (`nvidia`, ...).
pub const LABEL_VENDOR: &str = "homelab.youngju.dev/vendor";
/// Label on a GpuNode whose product is known: the product, made a valid label value (see [`label_value`]).
pub const LABEL_PRODUCT: &str = "homelab.youngju.dev/product";
/// Label on every GpuNode: `true` when the node is Ready, else `false`.
pub const LABEL_READY: &str = "homelab.youngju.dev/ready";
/// Label on every GpuNode: `true` when the node has at least one issue, else `false`.
pub const LABEL_HAS_ISSUES: &str = "homelab.youngju.dev/has-issues";

/// Which node this GpuNode describes. The operator writes it; it is never read back.
#[derive(
    CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema,
)]
#[kube(
    group = "homelab.youngju.dev",
    version = "v1",
    kind = "GpuNode",
    plural = "gpunodes",
    shortname = "gpunode",
    status = "GpuNodeStatus",
    printcolumn = r#"{"name":"VENDOR","type":"string","jsonPath":".status.vendor"}"#,
    printcolumn = r#"{"name":"PRODUCT","type":"string","jsonPath":".status.product"}"#,
    printcolumn = r#"{"name":"GPUS","type":"integer","jsonPath":".status.count"}"#,
    printcolumn = r#"{"name":"FREE","type":"integer","jsonPath":".status.freeGpus"}"#,
    printcolumn = r#"{"name":"READY","type":"boolean","jsonPath":".status.ready"}"#,
    printcolumn = r#"{"name":"ISSUES","type":"string","jsonPath":".status.issueReasons"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GpuNodeSpec {
    /// The Node this object describes (also its name and its owner).
    pub node_name: String,
}

/// One GPU node's full detail: its inventory entry (devices included), its vendor and free whole GPUs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuNodeStatus {
    /// When the current content was first observed. Unchanged while the content is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_time: Option<Time>,
    /// Who makes the node's GPUs (`nvidia`, ...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Whole GPUs a pod could get on this node now (as `GpuInventory.status.freeGpus` counts them).
    #[serde(default)]
    pub free_gpus: u64,
    /// The issues' reasons, comma-separated, for the ISSUES column; absent when the node is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue_reasons: Option<String>,
    /// Everything the inventory knows about the node (the fields of a `GpuInventory.status.nodes[]` entry,
    /// plus `devices`).
    #[serde(flatten)]
    pub node: GpuNodeEntry,
}

/// `text` as a label value: at most 63 characters of `[A-Za-z0-9._-]`, starting and ending with an
/// alphanumeric; other characters (the spaces DRA drivers write in product names) become `-`. `None` when
/// nothing usable is left.
pub fn label_value(text: &str) -> Option<String> {
    let mapped: String = text
        .trim()
        .chars()
        .map(|c| match c {
            'A'..='Z' | 'a'..='z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .take(63)
        .collect();
    let trimmed = mapped.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_valid() {
        assert_eq!(
            label_value("NVIDIA-H100-80GB-HBM3").as_deref(),
            Some("NVIDIA-H100-80GB-HBM3")
        );
        assert_eq!(
            label_value("NVIDIA A100-SXM4-80GB").as_deref(),
            Some("NVIDIA-A100-SXM4-80GB")
        );
        assert_eq!(label_value("  (x) ").as_deref(), Some("x"));
        assert_eq!(label_value("###"), None);
        let long = "a".repeat(100);
        assert_eq!(label_value(&long).map(|v| v.len()), Some(63));
        assert_eq!(
            label_value(&format!("{}-b", "a".repeat(62))).as_deref(),
            Some(&*"a".repeat(62))
        );
    }
}
