//! The DRA scenario's truth: which claim holds which device of which node, kept current as the driver
//! allocates and deallocates claims, and what that makes of each node's `gpu.nvidia.com/gpu` (allocatable,
//! allocated, free) and of the whole fleet.

use std::collections::HashMap;

/// Namespaces the claims are spread over.
pub const NAMESPACES: usize = 4;

pub fn namespace_of(k: usize) -> String {
    format!("bench-dra-{}", k % NAMESPACES)
}

pub fn node_name(i: usize) -> String {
    format!("bench-dra-{i:05}")
}

/// A claim the driver made, and the device (node index, device index) its allocation names, if any.
#[derive(Clone, Debug)]
pub struct ClaimRec {
    pub namespace: String,
    pub name: String,
    pub at: Option<(usize, usize)>,
}

/// A node's `gpu.nvidia.com/gpu` numbers: allocatable, allocated, free.
pub type NodeNumbers = (u64, u64, u64);

#[derive(Clone, Debug, Default)]
pub struct DraTruth {
    /// Node names by index.
    pub nodes: Vec<String>,
    /// Node index by name.
    pub index: HashMap<String, usize>,
    /// Per node, per device: the claim (index into `claims`) whose allocation names it.
    pub holder: Vec<Vec<Option<usize>>>,
    pub claims: Vec<ClaimRec>,
    /// Where the search for a free device starts next.
    next_free: usize,
}

impl DraTruth {
    /// `claims` claims over `nodes` nodes of `gpus` devices: claim k holds device k / nodes of node
    /// k % nodes (round robin, so the allocated devices spread evenly: with the defaults 2 of 8 per node).
    pub fn new(nodes: usize, gpus: usize, claims: usize) -> Self {
        let names: Vec<String> = (0..nodes).map(node_name).collect();
        let mut truth = DraTruth {
            index: names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i))
                .collect(),
            nodes: names,
            holder: vec![vec![None; gpus]; nodes],
            ..Default::default()
        };
        for k in 0..claims.min(nodes * gpus) {
            let at = (k % nodes, k / nodes);
            truth.holder[at.0][at.1] = Some(k);
            truth.claims.push(ClaimRec {
                namespace: namespace_of(k),
                name: format!("gpu-{k:05}"),
                at: Some(at),
            });
        }
        truth
    }

    pub fn numbers(&self, node: usize) -> NodeNumbers {
        let devices = &self.holder[node];
        let allocated = devices.iter().filter(|h| h.is_some()).count() as u64;
        (
            devices.len() as u64,
            allocated,
            devices.len() as u64 - allocated,
        )
    }

    /// The numbers of the node called `name` (None: not a bench node).
    pub fn numbers_of(&self, name: &str) -> Option<NodeNumbers> {
        self.index.get(name).map(|&i| self.numbers(i))
    }

    /// The fleet's allocatable, allocated, free.
    pub fn totals(&self) -> NodeNumbers {
        (0..self.nodes.len())
            .map(|i| self.numbers(i))
            .fold((0, 0, 0), |t, n| (t.0 + n.0, t.1 + n.1, t.2 + n.2))
    }

    /// Clears claim `k`'s allocation; returns the node index it held a device of.
    pub fn deallocate(&mut self, k: usize) -> Option<usize> {
        let (node, device) = self.claims[k].at.take()?;
        self.holder[node][device] = None;
        Some(node)
    }

    /// Allocates the unallocated claim `k` a free device on a node `usable` accepts, searched from where
    /// the last search stopped; returns (node, device). The search steps 7 nodes at a time (1 when 7
    /// divides the fleet size, so every node is still visited), so that consecutive allocations land on
    /// different nodes, as the scheduler's would across a large fleet.
    pub fn allocate(&mut self, k: usize, usable: impl Fn(usize) -> bool) -> Option<(usize, usize)> {
        let n = self.nodes.len();
        let stride = if n.is_multiple_of(7) { 1 } else { 7 };
        for _ in 0..n {
            let node = self.next_free % n;
            self.next_free += stride;
            if !usable(node) {
                continue;
            }
            if let Some(device) = self.holder[node].iter().position(Option::is_none) {
                self.holder[node][device] = Some(k);
                self.claims[k].at = Some((node, device));
                return Some((node, device));
            }
        }
        None
    }
}
