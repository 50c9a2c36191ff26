//! The flags of `fit` (`gpu-inventory-operator fit`, `kubectl gpu-inventory fit`), in a file of their own:
//! the command lines name them, and `fit` names the command line's shared flags, so they cannot live in
//! either without an import circle (tests/layers.rs).

use clap::Args;

use super::output::{OutputFormat, parse_output};

use crate::inventory::topology::Toleration;

/// Flags of `fit`: a job of whole GPUs (`--gpus`), or one pod's share of a GPU (`--gpu-memory`,
/// `--fraction`, `--mig-profile`): exactly one of the four.
#[derive(Debug, Args, Clone)]
#[command(group(clap::ArgGroup::new("ask").required(true).multiple(false)
    .args(["gpus", "gpu_memory", "fraction", "mig_profile"])))]
pub struct FitArgs {
    /// The job's GPUs (G). It fits in a domain whose nodes offer at least G GPUs to its pods.
    #[arg(long, env = "GPUINV_FIT_GPUS", value_name = "G")]
    pub gpus: Option<u64>,
    /// A share of one GPU's memory (`20Gi`, `20480Mi`; a bare number is MiB, as HAMi's `nvidia.com/gpumem`
    /// and KAI's `gpu-memory` count). It fits a sharing layer's card (HAMi, Volcano vGPU) or a KAI-shared GPU
    /// with that much memory free and a share left, or a whole free GPU with that much memory; the answer
    /// names each node and card.
    #[arg(long, env = "GPUINV_FIT_GPU_MEMORY", value_name = "QUANTITY",
          conflicts_with_all = ["gpus_per_pod", "level"])]
    pub gpu_memory: Option<String>,
    /// A fraction of one GPU, above 0 and at most 1 (`0.25`, as KAI's `gpu-fraction`). It fits a shared GPU
    /// with that much of it left (and that much of its memory), or a whole free GPU.
    #[arg(long, env = "GPUINV_FIT_FRACTION", value_name = "F",
          conflicts_with_all = ["gpus_per_pod", "level"])]
    pub fraction: Option<String>,
    /// A MIG device of this profile (`1g.10gb`; `nvidia.com/mig-1g.10gb` reads the same). It fits a free MIG
    /// device of the profile: the device plugin's, a free DRA partition, or room on a partitionable GPU.
    #[arg(long, env = "GPUINV_FIT_MIG_PROFILE", value_name = "PROFILE",
          conflicts_with_all = ["gpus_per_pod", "level"])]
    pub mig_profile: Option<String>,
    /// The GPU model, as `scan --group-by product` names it (spaces, dashes and case do not matter).
    /// Default: every product, and the answer for the one that fits at the narrowest level.
    #[arg(long, env = "GPUINV_FIT_PRODUCT", value_name = "PRODUCT")]
    pub product: Option<String>,
    /// GPUs per pod (K): a node offers `floor(free / K) * K` of its free whole GPUs. Default: the product's
    /// most common GPUs per node (whole nodes).
    #[arg(long, env = "GPUINV_FIT_GPUS_PER_POD", value_name = "K")]
    pub gpus_per_pod: Option<u64>,
    /// The level the job must fit in: `nvlink` (one NVLink partition), `kubernetes.io/hostname` (one node), or
    /// any node label key (`cloud.google.com/gce-topology-block`, a rack label, ...). Default: the narrowest
    /// level where it fits: one node, then the NVLink partition, then the network levels from the narrowest.
    #[arg(long, env = "GPUINV_FIT_LEVEL", value_name = "LEVEL")]
    pub level: Option<String>,
    /// A taint the job's pods tolerate, `KEY[=VALUE][:EFFECT]` as `kubectl taint` writes it (`*`: every taint).
    /// Without one, a node with a `NoSchedule`/`NoExecute` taint offers nothing, as Kueue leaves it out, except
    /// a taint keyed by the GPU resource itself (`nvidia.com/gpu=present:NoSchedule`), which every pod asking
    /// for that resource tolerates (ExtendedResourceToleration). Repeatable.
    #[arg(long = "toleration", env = "GPUINV_FIT_TOLERATIONS", value_name = "KEY[=VALUE][:EFFECT]",
          value_delimiter = ',', value_parser = Toleration::parse)]
    pub tolerations: Vec<Toleration>,
    /// Read nodes and pods (and Kueue Topologies; for `--plan`, PodDisruptionBudgets) from a
    /// `kubectl get nodes,pods,poddisruptionbudgets -A -o yaml|json` dump instead of the cluster; `-` reads
    /// stdin.
    #[arg(long, short = 'f', env = "GPUINV_FIT_FROM_FILE", value_name = "FILE")]
    pub from_file: Option<String>,
    /// The cap on a `-f` dump.
    #[command(flatten)]
    pub input: super::input_args::InputArgs,
    /// Only consider nodes matching this label selector.
    #[arg(
        long,
        short = 'l',
        env = "GPUINV_FIT_SELECTOR",
        value_name = "SELECTOR"
    )]
    pub selector: Option<String>,
    /// Output format: `table` (`wide` is the same), `json`/`yaml` (the answer as one object), `name`
    /// (`node/NAME` for each node where it fits) or `jsonpath=TEMPLATE` (over the `-o json` object).
    #[arg(long, short = 'o', env = "GPUINV_FIT_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// When it does not fit: the running pods to move, each to where it fits afterwards, so that the job
    /// starts on one node (a job of one pod: G at most a node's GPUs). The fewest GPUs move, lower
    /// priorities first; never a DaemonSet's or static pod, nor more of a PodDisruptionBudget's pods than it
    /// allows; gangs (Job, JobSet, LeaderWorkerSet group, Kueue pod group) move whole. Reads the pods and
    /// PodDisruptionBudgets (list on poddisruptionbudgets.policy; with `-n`, only that namespace's pods
    /// move); when the budgets cannot be read, no plan and exit 2 (docs/fragmentation.md). Printed under
    /// the answer, and as `plan` in `-o json|yaml`.
    #[arg(long, env = "GPUINV_FIT_PLAN")]
    pub plan: bool,
    /// Print only the table's rows (the domains, or the places of a share): no header or answer lines.
    #[arg(long, env = "GPUINV_FIT_NO_HEADERS")]
    pub no_headers: bool,
}
