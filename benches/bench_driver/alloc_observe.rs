//! The allocation scenario's truth and its watches: what the driver's pods should make of each GPU node
//! (allocated, free), and what the inventory status and the ConfigMap say, read as plain JSON (the fields
//! the operator's allocation accounting writes: `nodes[].allocated|free`, `resources[]`, `pendingGpuPods`,
//! `freeGpus`, `products[]`, the `GpusAvailable` condition; per-node `allocated|free` in the ConfigMap and,
//! for a program that writes them, in each node's GpuNode `status`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject};
use kube::{Api, Client};
use serde_json::Value;
use testkit::lib_api::GpuInventory;
use tokio::sync::watch;

use crate::alloc_fleet::GPU;
use crate::alloc_truth::Expected;
use crate::gpunode_watch;
use crate::object_watch::watch_into;
use crate::observe::Watched;

const CONFIGMAP: &str = "gpu-node-status";

/// A node's nvidia.com/gpu numbers as the operator wrote them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeenNode {
    pub allocatable: Option<u64>,
    pub allocated: Option<u64>,
    pub free: Option<u64>,
}

/// A JSON number, or a string holding one (quantities).
pub fn int(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
}

/// A node entry's nvidia.com/gpu numbers (a status `nodes[]` entry, a ConfigMap value, a GpuNode's status).
pub fn seen_node(entry: &Value) -> SeenNode {
    SeenNode {
        allocatable: int(&entry["allocatable"][GPU]),
        allocated: int(&entry["allocated"][GPU]),
        free: int(&entry["free"][GPU]),
    }
}

/// Three numbers as the operator wrote them (absent: None), e.g. allocatable, allocated, free.
pub type Numbers = (Option<u64>, Option<u64>, Option<u64>);

/// The allocation part of an inventory status.
#[derive(Clone, Debug, Default)]
pub struct SeenStatus {
    /// The node entries the status lists (a budget may leave some out: `omitted`).
    pub nodes: HashMap<String, SeenNode>,
    /// `omittedNodes`: entries left out of `nodes[]` (their detail is in their GpuNodes); 0 when absent.
    pub omitted: u64,
    /// The nvidia.com/gpu row of `resources`: allocatable, allocated, free.
    pub resource: Option<Numbers>,
    pub pending: Option<u64>,
    pub free_gpus: Option<u64>,
    /// Per product: nodes, gpus, freeGpus.
    pub products: BTreeMap<String, Numbers>,
    /// The GpusAvailable condition: status, reason.
    pub gpus_available: Option<(String, String)>,
}

impl SeenStatus {
    pub fn parse(status: &Value) -> Self {
        let list = |k: &str| status[k].as_array().cloned().unwrap_or_default();
        let nodes = list("nodes")
            .iter()
            .filter_map(|e| Some((e["name"].as_str()?.to_owned(), seen_node(e))))
            .collect();
        let resource = list("resources")
            .iter()
            .find(|r| r["name"] == GPU)
            .map(|r| {
                (
                    int(&r["allocatable"]),
                    int(&r["allocated"]),
                    int(&r["free"]),
                )
            });
        let products = list("products")
            .iter()
            .filter_map(|p| {
                let numbers = (int(&p["nodes"]), int(&p["gpus"]), int(&p["freeGpus"]));
                Some((p["name"].as_str()?.to_owned(), numbers))
            })
            .collect();
        let gpus_available = list("conditions")
            .iter()
            .find(|c| c["type"] == "GpusAvailable")
            .map(|c| {
                let s = |k: &str| c[k].as_str().unwrap_or("").to_owned();
                (s("status"), s("reason"))
            });
        SeenStatus {
            nodes,
            omitted: int(&status["omittedNodes"]).unwrap_or(0),
            resource,
            pending: int(&status["pendingGpuPods"]),
            free_gpus: int(&status["freeGpus"]),
            products,
            gpus_available,
        }
    }
}

/// The first way `seen` differs from `exp` for `node`, if any.
fn node_mismatch(exp: &Expected, node: &str, seen: Option<&SeenNode>) -> Option<String> {
    let want = SeenNode {
        allocatable: exp.nodes.get(node).map(|n| n.allocatable),
        allocated: Some(exp.allocated(node)),
        free: Some(exp.free(node)),
    };
    match seen {
        Some(s) if *s == want => None,
        Some(s) => Some(format!("{node}: {s:?}, want {want:?}")),
        None => Some(format!("{node}: missing")),
    }
}

/// The first way the status differs from `exp`, if any (None: it shows the expected allocation).
pub fn status_mismatch(exp: &Expected, seen: &SeenStatus) -> Option<String> {
    let (allocatable, allocated, free) = exp.totals();
    let want = Some((Some(allocatable), Some(allocated), Some(free)));
    if seen.resource != want {
        return Some(format!(
            "resources {GPU}: {:?}, want {want:?}",
            seen.resource
        ));
    }
    if seen.pending != Some(exp.pending) {
        return Some(format!(
            "pendingGpuPods {:?}, want {}",
            seen.pending, exp.pending
        ));
    }
    // Every node is listed or counted as omitted (a status within its byte budget lists some of them).
    if seen.nodes.len() as u64 + seen.omitted != exp.nodes.len() as u64 {
        return Some(format!(
            "{} nodes listed + {} omitted, want {}",
            seen.nodes.len(),
            seen.omitted,
            exp.nodes.len()
        ));
    }
    if let Some(stray) = seen.nodes.keys().find(|n| !exp.nodes.contains_key(*n)) {
        return Some(format!("{stray}: listed, but no GPU node of the fleet"));
    }
    seen.nodes
        .keys()
        .find_map(|n| node_mismatch(exp, n, seen.nodes.get(n)))
}

/// Whether the status shows the fleet's totals (the `nvidia.com/gpu` row and the pending pods) and, when it
/// lists `node`, that node's numbers: a change to a node the status does not list shows in its totals. Under
/// `load` (churn elsewhere moves the totals all the time) a listed node's entry alone decides.
fn status_shows(exp: &Expected, seen: &SeenStatus, node: &str, load: bool) -> bool {
    if load && seen.nodes.contains_key(node) {
        return node_mismatch(exp, node, seen.nodes.get(node)).is_none();
    }
    let (allocatable, allocated, free) = exp.totals();
    seen.resource == Some((Some(allocatable), Some(allocated), Some(free)))
        && seen.pending == Some(exp.pending)
        && (!seen.nodes.contains_key(node) && seen.omitted > 0
            || node_mismatch(exp, node, seen.nodes.get(node)).is_none())
}

/// The first way the ConfigMap's entries differ from `exp`, if any.
pub fn cm_mismatch(exp: &Expected, cm: &HashMap<String, SeenNode>) -> Option<String> {
    if cm.len() != exp.nodes.len() {
        return Some(format!("{} entries, want {}", cm.len(), exp.nodes.len()));
    }
    exp.nodes
        .keys()
        .find_map(|n| node_mismatch(exp, n, cm.get(n)))
}

/// A timed change in flight: the node it touched, when it was written, when each output showed it.
#[derive(Debug, Default)]
pub struct Change {
    pub node: String,
    pub written: Option<Instant>,
    status_at: Option<Instant>,
    cm_at: Option<Instant>,
    gpunode_at: Option<Instant>,
}

impl Change {
    /// A change to `node`, not written yet.
    pub fn on(node: String) -> Self {
        Change {
            node,
            ..Default::default()
        }
    }
}

/// Latencies of one change, from the write's response: to the status (None: under churn, to a node the status
/// does not list, whose change shows only in totals the churn moves too), to the ConfigMap (None: not
/// watched), to the node's GpuNode (None: the program writes none).
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub status: Option<Duration>,
    pub cm: Option<Duration>,
    pub gpunode: Option<Duration>,
}

#[derive(Default)]
pub struct AllocObs {
    pub expected: Expected,
    pub status: Option<SeenStatus>,
    pub cm: Option<HashMap<String, SeenNode>>,
    /// The GpuNodes' numbers by node; None when the program writes no GpuNodes (not waited for).
    pub gpunodes: Option<HashMap<String, SeenNode>>,
    pub change: Option<Change>,
    pub timings: Vec<Timing>,
    /// The ConfigMap is not watched (the scale scenario): neither convergence nor a change waits for it.
    pub skip_configmap: bool,
    /// Churn runs beside the timed changes: the status shows a change to a node it lists by that node's entry
    /// (the totals move with the churn).
    pub load: bool,
    /// GPU nodes kept for the timed changes (empty: none kept): only they take the timed changes' pods, and
    /// churn leaves them alone.
    pub reserved: HashSet<String>,
}

impl AllocObs {
    pub fn status_ok(&self) -> bool {
        self.status
            .as_ref()
            .is_some_and(|s| status_mismatch(&self.expected, s).is_none())
    }

    pub fn cm_ok(&self) -> bool {
        self.cm
            .as_ref()
            .is_some_and(|c| cm_mismatch(&self.expected, c).is_none())
    }

    /// Every GpuNode shows the expected allocation (true when the program writes none).
    pub fn gpunodes_ok(&self) -> bool {
        self.gpunodes
            .as_ref()
            .is_none_or(|g| cm_mismatch(&self.expected, g).is_none())
    }

    /// The status, the ConfigMap (when watched) and the GpuNodes (when the program writes them) show the
    /// expected allocation.
    pub fn converged(&self) -> bool {
        self.status_ok() && (self.skip_configmap || self.cm_ok()) && self.gpunodes_ok()
    }

    /// Why not converged, in words.
    pub fn why_not(&self) -> String {
        let status = match &self.status {
            None => Some("no status yet".to_owned()),
            Some(s) => status_mismatch(&self.expected, s),
        };
        let cm = match &self.cm {
            _ if self.skip_configmap => Some("not watched".to_owned()),
            None => Some("no ConfigMap yet".to_owned()),
            Some(c) => cm_mismatch(&self.expected, c),
        };
        let gpunodes = match &self.gpunodes {
            None => "not written by this program".to_owned(),
            Some(g) => cm_mismatch(&self.expected, g)
                .map(|m| m.replace("entries", "GpuNodes"))
                .unwrap_or_else(|| "ok".into()),
        };
        format!(
            "status: {}; ConfigMap: {}; GpuNodes: {gpunodes}",
            status.unwrap_or_else(|| "ok".into()),
            cm.unwrap_or_else(|| "ok".into())
        )
    }

    /// Marks, at `now`, what the outputs show of the change in flight; finishes it when all show it.
    pub fn settle(&mut self, now: Instant) {
        let Some(c) = self.change.as_mut() else {
            return;
        };
        let exp = &self.expected;
        if c.status_at.is_none()
            && let Some(s) = &self.status
            && status_shows(exp, s, &c.node, self.load)
        {
            c.status_at = Some(now);
        }
        if c.cm_at.is_none()
            && let Some(cm) = &self.cm
            && node_mismatch(exp, &c.node, cm.get(&c.node)).is_none()
        {
            c.cm_at = Some(now);
        }
        if c.gpunode_at.is_none()
            && let Some(g) = &self.gpunodes
            && node_mismatch(exp, &c.node, g.get(&c.node)).is_none()
        {
            c.gpunode_at = Some(now);
        }
        let gpunode_seen = self.gpunodes.is_none() || c.gpunode_at.is_some();
        let cm_seen = self.skip_configmap || c.cm_at.is_some();
        // Under churn a node the status does not list cannot be timed to the status (its totals move with
        // every churn change): such a change is timed to its GpuNode alone.
        let listed = self
            .status
            .as_ref()
            .is_some_and(|s| s.nodes.contains_key(&c.node));
        let status_timed = !(self.load && self.gpunodes.is_some() && !listed);
        let status_seen = !status_timed || c.status_at.is_some();
        if let (Some(w), true, true, true) = (c.written, status_seen, cm_seen, gpunode_seen) {
            self.timings.push(Timing {
                status: c
                    .status_at
                    .filter(|_| status_timed)
                    .map(|s| s.saturating_duration_since(w)),
                cm: c.cm_at.map(|m| m.saturating_duration_since(w)),
                gpunode: c.gpunode_at.map(|g| g.saturating_duration_since(w)),
            });
            self.change = None;
        }
    }

    /// The change in flight was written at `at`.
    pub fn written(&mut self, at: Instant) {
        if let Some(c) = self.change.as_mut() {
            c.written = Some(at);
        }
        self.settle(at);
    }
}

/// The allocation scenario's inventory status and ConfigMap, against what the driver expects.
pub type AllocObserver = Watched<AllocObs>;

impl Watched<AllocObs> {
    /// Watches the inventory, the ConfigMap in `namespace` and, with `gpunodes`, every GpuNode.
    pub fn start(
        client: &Client,
        inventory: &str,
        namespace: &str,
        expected: Expected,
        gpunodes: bool,
    ) -> Self {
        let obs = Arc::new(Mutex::new(AllocObs {
            expected,
            gpunodes: gpunodes.then(HashMap::new),
            ..Default::default()
        }));
        let (tx, rx) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let resource = ApiResource::erase::<GpuInventory>(&());
        let inventories: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let (o, t) = (obs.clone(), tx.clone());
        let inv = watch_into(inventories, inventory, "inventory", o, t, |obs, i, now| {
            obs.status = Some(SeenStatus::parse(&i.data["status"]));
            obs.settle(now);
        });
        let (o, t) = (obs.clone(), tx.clone());
        let cm = watch_into(configmaps, CONFIGMAP, "configmap", o, t, |obs, c, now| {
            obs.cm = Some(configmap_entries(c));
            obs.settle(now);
        });
        let mut tasks = vec![inv, cm];
        if gpunodes {
            tasks.push(gpunode_watch::spawn_views(
                client,
                obs.clone(),
                tx,
                seen_node,
            ));
        }
        Watched::new(obs, rx, tasks)
    }
}

/// The per-node entries of the ConfigMap (keys starting with `_` are summaries).
fn configmap_entries(cm: ConfigMap) -> HashMap<String, SeenNode> {
    cm.data
        .unwrap_or_default()
        .into_iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .filter_map(|(k, v)| {
            let entry: Value = serde_json::from_str(&v).ok()?;
            Some((k, seen_node(&entry)))
        })
        .collect()
}

impl gpunode_watch::GpuNodeViews for AllocObs {
    type View = SeenNode;

    fn views(&mut self) -> Option<&mut HashMap<String, Self::View>> {
        self.gpunodes.as_mut()
    }

    fn settle(&mut self, now: Instant) {
        AllocObs::settle(self, now);
    }
}

impl AsRef<AllocObs> for AllocObs {
    fn as_ref(&self) -> &AllocObs {
        self
    }
}

impl AsMut<AllocObs> for AllocObs {
    fn as_mut(&mut self) -> &mut AllocObs {
        self
    }
}

impl crate::observe::Converging for AllocObs {
    fn converged(&self) -> bool {
        AllocObs::converged(self)
    }

    fn why_not(&self) -> String {
        AllocObs::why_not(self)
    }
}
