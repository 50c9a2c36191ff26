//! Keeping a GpuInventory's status under the API server's object size limit (etcd stores at most 1.5 MiB
//! per object by default). Totals and conditions always cover every node; past the budget, `nodes[]` keeps
//! the first entries by name and `omittedNodes` says how many were left out.

use std::io;

use crate::crd::GpuInventoryStatus;

/// Room for `nodes[]`: 1 MiB, leaving half a MiB of the 1.5 MiB object limit for metadata and the rest.
pub const STATUS_NODES_BUDGET_BYTES: usize = 1024 * 1024;

/// Counts serialized bytes without keeping them.
struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Drops trailing `nodes[]` entries until the rest fits `budget` bytes of JSON; sets `omitted_nodes`.
/// Returns how many were dropped.
pub fn fit_nodes(status: &mut GpuInventoryStatus, budget: usize) -> usize {
    let mut used = 0usize;
    let mut keep = status.nodes.len();
    for (i, entry) in status.nodes.iter().enumerate() {
        let mut counter = ByteCounter(0);
        serde_json::to_writer(&mut counter, entry).expect("a node entry always serializes");
        used += counter.0 + 1;
        if used > budget {
            keep = i;
            break;
        }
    }
    let omitted = status.nodes.len() - keep;
    status.nodes.truncate(keep);
    status.omitted_nodes = (omitted > 0).then(|| u32::try_from(omitted).unwrap_or(u32::MAX));
    omitted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::GpuNodeEntry;

    fn status(n: usize) -> GpuInventoryStatus {
        GpuInventoryStatus {
            total_gpu_nodes: n as u32,
            nodes: (0..n)
                .map(|i| GpuNodeEntry {
                    name: format!("gpu-{i:04}"),
                    product: Some("NVIDIA-H100-80GB-HBM3".into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn small_statuses_are_untouched() {
        let mut s = status(10);
        assert_eq!(fit_nodes(&mut s, STATUS_NODES_BUDGET_BYTES), 0);
        assert_eq!((s.nodes.len(), s.omitted_nodes), (10, None));
    }

    #[test]
    fn large_statuses_keep_the_first_entries_and_say_how_many_are_left_out() {
        let mut s = status(100);
        let omitted = fit_nodes(&mut s, 1000);
        assert!(omitted > 0 && !s.nodes.is_empty());
        assert_eq!(s.nodes.len() + omitted, 100);
        assert_eq!(s.omitted_nodes, Some(omitted as u32));
        assert_eq!(s.total_gpu_nodes, 100, "totals still cover every node");
        assert!(serde_json::to_vec(&s.nodes).unwrap().len() <= 1000);
    }
}
