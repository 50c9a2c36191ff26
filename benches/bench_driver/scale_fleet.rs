//! The scale scenario's fleet (issue #26): a 65,000-node cluster's make-up, scaled linearly to each node count of
//! BENCH_SCALE_NODES ([`Shape`]), built with the allocation scenario's plan (alloc_fleet.rs `plan_with`: nodes,
//! bound pods with their status) and the DRA scenario's (dra_fleet.rs: nodes, one ResourceSlice each, allocated
//! claims).
//!
//! At 65,000 nodes: every 5th node a GPU node (13,000), of which
//! - 1,000 DRA nodes: 8 whole GPUs each in one ResourceSlice, no device plugin; 2 of 8 devices allocated by
//!   ResourceClaims (2,000 claims);
//! - 1,200 MIG nodes: the DGX H100 of NVIDIA's GPU Operator docs (tests/fixtures/real-nodes.yaml,
//!   `...-mig-h100-s4124-0073-mig-disabled`, MIG strategy `single`) with MIG enabled as `all-1g.10gb`: GFD's
//!   single-strategy labels (product `NVIDIA-H100-80GB-HBM3-MIG-1g.10gb`, count and memory of the MIG devices)
//!   and 56 `nvidia.com/gpu` (7 per GPU), the way the operator reads MIG devices offered as `nvidia.com/gpu`;
//! - 1,200 time-sliced nodes: the g4dn.xlarge of NVIDIA's OpenShift docs (real-nodes.yaml,
//!   `...-time-slicing-t4-g4dn-xlarge`: one T4, `nvidia.com/gpu.replicas=8`, product `Tesla-T4-SHARED`) with
//!   the `nvidia.com/gpu.sharing-strategy=time-slicing` label current GFD adds, 8 `nvidia.com/gpu`;
//! - 9,600 plain 8-GPU device-plugin nodes, H100, H200 and A100 in turn (gfd-nodes.yaml's `dgx-h100-01`,
//!   relabelled for the other two);
//! - of the 12,000 device-plugin nodes 650 tainted `nvidia.com/gpu=present:NoSchedule` and 650 cordoned
//!   (`spec.unschedulable`): 10 % of the GPU nodes;
//!
//! every device-plugin GPU node with a GB200 fleet's topology labels (testkit::cluster::topology_labels: its
//! rack of 18's `nvidia.com/gpu.clique`, a GKE block and subblock, a zone; issue #42: the topology reader at
//! scale),
//!
//! and 100,000 pods, 20,000 of them requesting `nvidia.com/gpu`, 500 of those pending (alloc_fleet.rs says how
//! they spread). A smaller fleet has each count times N / 65,000, rounded, at least 1; the counts, and which
//! GPU slot holds which kind (strides: every count exact, the kinds scattered), are
//! `testkit::settings::bench::ScaleShape`'s, tested there.

use testkit::cluster::Templates;
use testkit::lib_api::parse_node_dump;
use testkit::settings::bench::{AllocSettings, DraSettings, ScaleShape as Shape, Settings};

use crate::Res;
use crate::alloc_fleet::{self, GpuKind, Plan, Slot};

/// The DRA nodes' whole GPUs (one slice each).
pub const DRA_GPUS_PER_NODE: usize = 8;
/// nvidia.com/gpu of a plain node; of a MIG node (8 H100 x 7 `1g.10gb`); of a time-sliced T4 (8 replicas).
const PLAIN_GPUS: u64 = 8;
const MIG_DEVICES: u64 = 56;
const TIME_SLICED_REPLICAS: u64 = 8;

/// The fixtures the MIG and the time-sliced nodes are cloned from (tests/fixtures/real-nodes.yaml).
const REAL_NODES: &str = "real-nodes.yaml";
const MIG_TEMPLATE: &str = "nvidia-docs-gpu-operator-mig-h100-s4124-0073-mig-disabled";
const TIME_SLICED_TEMPLATE: &str = "nvidia-docs-ocp-time-slicing-t4-g4dn-xlarge";

/// The allocation scenario's knobs for the fleet (its plan and pods), from the bench's.
pub fn alloc_settings(shape: &Shape, s: &Settings) -> AllocSettings {
    AllocSettings {
        nodes: shape.nodes,
        gpu_every: Shape::GPU_EVERY,
        gpus_per_node: PLAIN_GPUS,
        pods: shape.pods,
        gpu_pods: shape.gpu_pods,
        pending: shape.pending,
        taint_every: 0,
        // Every GPU node in a rack of 18 (its NVLink clique) and a GKE block and subblock (#42).
        topology: true,
        create_concurrency: s.scale.create_concurrency,
        ..s.alloc.clone()
    }
}

/// The DRA scenario's knobs for the fleet's DRA nodes.
pub fn dra_settings(shape: &Shape, s: &Settings) -> DraSettings {
    DraSettings {
        nodes: shape.dra_nodes,
        gpus_per_node: DRA_GPUS_PER_NODE,
        claims_asked: shape.claims,
        create_concurrency: s.scale.create_concurrency,
        ..s.dra.clone()
    }
}

/// The GPU node kinds of the fleet.
pub struct Kinds {
    plain: [GpuKind; 3],
    mig: GpuKind,
    time_sliced: GpuKind,
}

impl Kinds {
    /// The kinds, cloned from the fixtures in `dir` (`templates` holds gfd-nodes.yaml's).
    pub fn load(templates: &Templates, dir: &std::path::Path) -> Res<Self> {
        let path = dir.join(REAL_NODES);
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let real = parse_node_dump(&bytes, &path.to_string_lossy())?;
        let real_node = |name: &str| {
            real.iter()
                .find(|n| n.metadata.name.as_deref() == Some(name))
                .cloned()
                .ok_or(format!("no {name} in {}", path.display()))
        };
        let h200 = [
            ("nvidia.com/gpu.memory", "143771"),
            ("nvidia.com/gpu.family", "hopper"),
            ("nvidia.com/gpu.compute.major", "9"),
            ("nvidia.com/gpu.machine", "DGXH200"),
        ];
        let mig = GpuKind {
            template: real_node(MIG_TEMPLATE)?,
            product: "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb".into(),
            // GFD under MIG strategy single: the product, count and memory are the MIG devices'.
            labels: [
                (
                    "nvidia.com/gpu.product",
                    "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
                ),
                ("nvidia.com/gpu.memory", "9984"),
                ("nvidia.com/gpu.multiprocessors", "16"),
                ("nvidia.com/gpu.slices.gi", "1"),
                ("nvidia.com/gpu.slices.ci", "1"),
                ("nvidia.com/gpu.engines.copy", "1"),
                ("nvidia.com/gpu.engines.decoder", "1"),
                ("nvidia.com/gpu.engines.encoder", "0"),
                ("nvidia.com/gpu.engines.jpeg", "1"),
                ("nvidia.com/gpu.engines.ofa", "0"),
                ("nvidia.com/mig.config", "all-1g.10gb"),
            ]
            .map(|(k, v)| (k, v.to_owned()))
            .into(),
            remove: vec!["node-role.kubernetes.io/control-plane"],
            allocatable: MIG_DEVICES,
            mig_single: true,
        };
        let time_sliced = GpuKind {
            template: real_node(TIME_SLICED_TEMPLATE)?,
            product: "Tesla-T4-SHARED".into(),
            labels: vec![
                ("nvidia.com/gpu.count", "1".into()),
                ("nvidia.com/gpu.sharing-strategy", "time-slicing".into()),
            ],
            remove: Vec::new(),
            allocatable: TIME_SLICED_REPLICAS,
            mig_single: false,
        };
        Ok(Kinds {
            plain: [
                GpuKind::h100(templates, PLAIN_GPUS)?,
                GpuKind::relabelled(templates, PLAIN_GPUS, "NVIDIA-H200", &h200)?,
                GpuKind::a100(templates, PLAIN_GPUS)?,
            ],
            mig,
            time_sliced,
        })
    }
}

/// What GPU slot `j` of the fleet holds: None for a DRA node's slot (dra_fleet.rs makes those nodes).
fn slot<'k>(shape: &Shape, kinds: &'k Kinds, j: usize) -> Option<Slot<'k>> {
    if shape.is_dra_slot(j) {
        return None;
    }
    let k = shape.device_index(j);
    let kind_rank = shape.kind_rank(k);
    let kind = if kind_rank < shape.mig_nodes {
        &kinds.mig
    } else if kind_rank < shape.mig_nodes + shape.time_sliced_nodes {
        &kinds.time_sliced
    } else {
        &kinds.plain[k % kinds.plain.len()]
    };
    let taint_rank = shape.taint_rank(k);
    Some(Slot {
        kind,
        tainted: taint_rank < shape.tainted,
        cordoned: (shape.tainted..shape.tainted + shape.cordoned).contains(&taint_rank),
    })
}

/// The device-plugin part of the fleet: every node but the DRA nodes, and the pods.
pub fn plan(shape: &Shape, s: &Settings, templates: &Templates, kinds: &Kinds) -> Plan {
    let a = alloc_settings(shape, s);
    alloc_fleet::plan_with(&a, templates, s.node_images, |j| slot(shape, kinds, j))
}
