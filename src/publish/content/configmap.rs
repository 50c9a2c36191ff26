//! The content of the `gpu-node-status` ConfigMap (pure): one key per GPU node, plus a summary.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::size_budget::{json_size, select_within};
use super::wire::{self, Detail};
use crate::inventory::model::{Inventory, NodeInventory};

/// Default name of the ConfigMap.
pub const CONFIGMAP_NAME: &str = "gpu-node-status";
/// The summary key. Node names are lowercase DNS subdomains, so a leading `_` can never collide with one.
pub const SUMMARY_KEY: &str = "_summary";
/// The API server rejects a ConfigMap whose data exceeds 1 MiB; this leaves room for the summary.
pub const DATA_BUDGET_BYTES: usize = 1024 * 1024 - 4 * 1024;

/// The value of the summary key.
#[derive(Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatusSummary {
    /// GPU nodes seen.
    pub(crate) total_gpu_nodes: u32,
    /// GPU nodes Ready.
    pub(crate) ready_gpu_nodes: u32,
    /// GPUs counted.
    pub(crate) total_gpus: u64,
    /// Whole GPUs free now (as `status.freeGpus`).
    pub(crate) free_gpus: u64,
    /// GPU pods the scheduler could not place.
    pub(crate) pending_gpu_pods: u32,
    /// GPU nodes with at least one issue.
    pub(crate) nodes_with_issues: usize,
    /// Whether some node entries were left out to stay under the size limit.
    pub(crate) truncated: bool,
    /// How many node entries were left out.
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) omitted_nodes: usize,
    /// Says what was left out and why, when something was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Each node entry's ConfigMap text and size, kept from one pass to the next (the ConfigMap publisher holds
/// one). A scan keeps the entry of a node that did not change (the same `Arc`), so after a pod change only
/// the changed entries are measured and serialized again: measuring all 13,000 and serializing the ~2,700
/// that fit was 10.8 % of the operator's CPU at 20,000 nodes under churn. It holds the last pass's entries
/// (one `Arc` each) and the texts of those that fit (under 1 MiB).
#[derive(Debug, Default)]
pub struct EntryTexts(Mutex<Vec<EntryText>>);

#[derive(Debug)]
struct EntryText {
    entry: Arc<NodeInventory>,
    /// The key's and the value's bytes.
    size: usize,
    text: Option<String>,
}

impl EntryText {
    fn of(entry: &Arc<NodeInventory>) -> EntryText {
        EntryText {
            entry: entry.clone(),
            size: entry.name.len() + json_size(&wire::node_entry(entry, &[], Detail::Counts)),
            text: None,
        }
    }

    fn text(&mut self) -> &str {
        // Devices one by one are the GpuNode's (like the status, the ConfigMap keeps the counts).
        self.text.get_or_insert_with(|| {
            serde_json::to_string(&wire::node_entry(&self.entry, &[], Detail::Counts))
                .expect("a node entry always serializes")
        })
    }
}

impl EntryTexts {
    /// The entries of `inventory` measured, taking the last pass's measure (and text) of every entry that
    /// is the very same one. Both lists are sorted by name, as scans give them; were they not, fewer would
    /// be taken, and none wrongly.
    fn measure(&self, inventory: &Inventory) -> std::sync::MutexGuard<'_, Vec<EntryText>> {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut before = std::mem::take(&mut *held).into_iter().peekable();
        *held = inventory
            .nodes
            .iter()
            .map(|entry| {
                while before.next_if(|b| b.entry.name < entry.name).is_some() {}
                before
                    .next_if(|b| Arc::ptr_eq(&b.entry, entry))
                    .unwrap_or_else(|| EntryText::of(entry))
            })
            .collect();
        held
    }
}

/// The ConfigMap data for an inventory, within `budget` bytes: one key per GPU node while they all fit. Past
/// it, nodes with issues get their keys first, then healthy ones by name, and the summary counts the rest and
/// points at the GpuNodes, where every node's entry is. Nothing is left out without the summary saying so.
pub fn configmap_data(
    inventory: &Inventory,
    budget: usize,
) -> (BTreeMap<String, String>, NodeStatusSummary) {
    configmap_data_kept(inventory, budget, &EntryTexts::default())
}

/// [`configmap_data`], with `texts` keeping each entry's text from one call to the next.
pub fn configmap_data_kept(
    inventory: &Inventory,
    budget: usize,
    texts: &EntryTexts,
) -> (BTreeMap<String, String>, NodeStatusSummary) {
    // Each entry's size is counted without keeping its text, and only the entries kept are serialized: at
    // 65,000 nodes the ConfigMap holds about 1,000 of 13,000 GPU nodes, and holding every entry's JSON at once
    // was ~15 MiB of garbage per pass.
    let mut measured = texts.measure(inventory);
    let sizes: Vec<usize> = measured.iter().map(|m| m.size).collect();
    let kept = select_within(&sizes, |i| inventory.nodes[i].has_issues(), budget);
    let omitted = inventory.nodes.len() - kept.len();
    let mut data: BTreeMap<String, String> = kept
        .into_iter()
        .map(|i| {
            let name = inventory.nodes[i].name.clone();
            (name, measured[i].text().to_owned())
        })
        .collect();
    drop(measured);
    let summary = NodeStatusSummary {
        total_gpu_nodes: inventory.total_gpu_nodes,
        ready_gpu_nodes: inventory.ready_gpu_nodes,
        total_gpus: inventory.total_gpus,
        free_gpus: inventory.free_gpus,
        pending_gpu_pods: inventory.pending_gpu_pods,
        nodes_with_issues: inventory.problem_nodes().count(),
        truncated: omitted > 0,
        omitted_nodes: omitted,
        message: (omitted > 0).then(|| {
            format!(
                "{omitted} of {} GPU node entries left out: the ConfigMap would exceed the API server's 1 MiB \
                 limit (nodes with issues are kept first); every GPU node has its own GpuNode: \
                 kubectl get gpunodes",
                inventory.nodes.len()
            )
        }),
    };
    data.insert(
        SUMMARY_KEY.to_owned(),
        serde_json::to_string(&summary).expect("the summary always serializes"),
    );
    (data, summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{IssueReason, NodeInventory};

    fn inventory(n: usize) -> Inventory {
        Inventory {
            total_gpu_nodes: n as u32,
            ready_gpu_nodes: 0,
            total_gpus: n as u64,
            nodes: (0..n)
                .map(|i| NodeInventory {
                    name: format!("gpu-{i:05}"),
                    count: 1,
                    product: Some("NVIDIA-H100-80GB-HBM3".into()),
                    ..Default::default()
                })
                .map(std::sync::Arc::new)
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn one_key_per_node_plus_summary() {
        let (data, summary) = configmap_data(&inventory(3), DATA_BUDGET_BYTES);
        assert_eq!(data.len(), 4);
        assert!(!summary.truncated);
        let entry: serde_json::Value = serde_json::from_str(&data["gpu-00001"]).unwrap();
        assert_eq!(entry["name"], "gpu-00001");
        assert_eq!(entry["memoryMiB"], serde_json::Value::Null);
        assert!(!data[SUMMARY_KEY].contains("message"));
    }

    #[test]
    fn past_the_budget_problem_nodes_go_first_and_the_summary_points_at_the_gpu_nodes() {
        let mut inv = inventory(10);
        std::sync::Arc::make_mut(&mut inv.nodes[9]).issues =
            crate::inventory::test_support::entry("x", false, 0, &[IssueReason::NotReady]).issues;
        let one = inv.nodes[0].name.len()
            + serde_json::to_string(&wire::node_entry(&inv.nodes[0], &[], Detail::Counts))
                .unwrap()
                .len();
        let (data, summary) = configmap_data(&inv, one * 3);
        assert!(
            data.contains_key("gpu-00009"),
            "the problem node is kept: {:?}",
            data.keys()
        );
        assert!(data.contains_key("gpu-00000"), "then healthy ones by name");
        assert_eq!(summary.omitted_nodes + data.len() - 1, 10);
        assert!(summary.message.unwrap().contains("kubectl get gpunodes"));
    }

    #[test]
    fn stays_within_budget_and_says_so() {
        let (data, summary) = configmap_data(&inventory(10), 400);
        let used: usize = data
            .iter()
            .filter(|(k, _)| *k != SUMMARY_KEY)
            .map(|(k, v)| k.len() + v.len())
            .sum();
        assert!(used <= 400);
        assert!(summary.truncated);
        assert_eq!(summary.omitted_nodes + data.len() - 1, 10);
        assert!(data[SUMMARY_KEY].contains("\"truncated\":true"));
    }

    /// Kept texts are taken only for the very same entry: a changed node's key says its new content, a node
    /// gone loses its key, and the rest equal a pass with nothing kept.
    #[test]
    fn kept_texts_serve_only_unchanged_entries() {
        let texts = EntryTexts::default();
        let mut inv = inventory(5);
        let (first, _) = configmap_data_kept(&inv, DATA_BUDGET_BYTES, &texts);
        std::sync::Arc::make_mut(&mut inv.nodes[2]).count = 8;
        inv.nodes.remove(4);
        let (second, _) = configmap_data_kept(&inv, DATA_BUDGET_BYTES, &texts);
        let fresh = configmap_data(&inv, DATA_BUDGET_BYTES).0;
        assert_eq!(second, fresh);
        assert_ne!(first["gpu-00002"], second["gpu-00002"]);
        assert!(
            second["gpu-00002"].contains("\"count\":8"),
            "{}",
            second["gpu-00002"]
        );
        assert!(!second.contains_key("gpu-00004"));
        assert_eq!(first["gpu-00001"], second["gpu-00001"]);
    }
}
