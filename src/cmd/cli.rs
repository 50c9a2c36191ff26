//! The command line. Every flag can also be set through the environment variable named in `--help`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

pub use super::duration_arg::parse_duration;
use super::group_by::{GroupBy, parse_group_by};
pub use super::output::OutputFormat;
use super::output::parse_output;
use crate::publish::content::size_budget::MAX_STATUS_NODES_BUDGET_BYTES;
use crate::runtime::client::ClientConfig;
pub use crate::runtime::logging::LogFormat;

/// Keeps an inventory of a Kubernetes cluster's GPU nodes and says what is wrong with them.
///
/// Runs out of cluster against your kubeconfig (or in cluster with its service account), installs the
/// GpuInventory CRD (homelab.youngju.dev/v1, short name gpuinv), writes each GpuInventory's status from the
/// nodes' NVIDIA feature-discovery labels and Ready condition, and keeps the ConfigMap gpu-node-status current.
#[derive(Debug, Parser)]
#[command(
    name = "gpu-inventory-operator",
    version,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    /// What to do; `run` when omitted.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Flags of `run`, accepted without the subcommand so that `cargo run` runs the operator.
    #[command(flatten)]
    pub run: RunArgs,
    /// Connection and logging flags shared by all subcommands.
    #[command(flatten)]
    pub global: GlobalArgs,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the operator (the default).
    Run(Box<RunArgs>),
    /// Print the GpuInventory CRD as YAML (for `kubectl apply -f -` or GitOps).
    Crd(super::crd_args::CrdArgs),
    /// Print a shell completion script: `source <(gpu-inventory-operator completion bash)`.
    Completion(super::crd_args::CompletionArgs),
    /// Scan once and print the inventory; read-only. Exit code: 0 all GPU nodes healthy, 1 some issue, 2 error.
    Scan(ScanArgs),
    /// Can a job of G GPUs start now, and where: in one node, one NVLink partition or one network domain.
    /// Exit code: 0 it fits, 1 it does not, 2 error.
    Fit(super::fit_args::FitArgs),
    /// Kueue's quotas against the GPUs: per ResourceFlavor and resource, the nominal quota beside the healthy
    /// units of the flavor's nodes, and the pending Workloads that can never be admitted as they are.
    /// Exit code: 0 every promise holds, 1 some issue, 2 error.
    Quotas(super::quotas_args::QuotasArgs),
    /// Which held GPUs sat idle through the window (dcgm-exporter's activity in Prometheus, joined with who
    /// holds each GPU): per namespace, then per pod or claim. Exit code: 0 none idle, 1 some, 2 error or
    /// Prometheus's answer unknown. (`idle` is the same command.)
    #[command(visible_alias = "idle")]
    Utilization(super::utilization_args::UtilizationArgs),
    /// The fleet as a multi-cluster hub sees it: the GPU summaries member clusters publish as ClusterProperties
    /// (about.k8s.io), read from the hub's ClusterProfiles (multicluster.x-k8s.io), with no credentials to the
    /// members (docs/fleet.md). Exit code: 0 read, 2 error or a summary that cannot be read.
    Fleet(super::fleet_args::FleetHubArgs),
}

/// Flags every subcommand understands.
#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Kubeconfig file to use instead of $KUBECONFIG or ~/.kube/config.
    #[arg(long, global = true, env = "GPUINV_KUBECONFIG", value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use instead of the current context. The kubectl plugin's table and `fit` take it
    /// more than once, one cluster per context, read side by side (docs/fleet.md); other commands take one.
    #[arg(long, global = true, env = "GPUINV_CONTEXT", value_name = "CONTEXT")]
    pub context: Vec<String>,
    /// The namespace, as kubectl's `-n`: for `run`, of the gpu-node-status ConfigMap and the
    /// leader-election Lease (default: the kubeconfig context's, or the pod's in cluster); for the commands
    /// that read, only this namespace's objects are listed (pods, claims, workloads, idle holdings,
    /// ClusterProfiles; docs/flags.md), while the GPUs are still counted over the whole cluster.
    #[arg(
        long,
        short = 'n',
        global = true,
        env = "GPUINV_NAMESPACE",
        value_name = "NAMESPACE"
    )]
    pub namespace: Option<String>,
    /// Every namespace's objects, as kubectl's `-A` (the default of the commands that read).
    #[arg(long, short = 'A', global = true, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// kubectl's connection flags: `--request-timeout`, `--server`, `--token`, `--as`, `--as-group`.
    #[command(flatten)]
    pub connection: super::connection_args::ConnectionArgs,
    /// Log format; the filter comes from RUST_LOG (default: info).
    #[arg(long, global = true, env = "GPUINV_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// A DRA driver whose devices are GPUs or accelerators: its ResourceSlices are read, and claims on its
    /// devices counted (repeat the flag, or separate with commas in the variable). Default: every driver this
    /// version knows (NVIDIA, AMD, Intel GPU and Gaudi, AWS Neuron, the DRA example driver). `--dra-driver=`
    /// (empty) turns DRA off.
    #[arg(
        long = "dra-driver",
        global = true,
        env = "GPUINV_DRA_DRIVERS",
        value_name = "DRIVER",
        value_delimiter = ',',
        default_value = crate::inventory::dra::DEFAULT_DRIVERS
    )]
    pub dra_drivers: Vec<String>,
    /// A node condition type that reports GPU health, for a cluster's own node-problem-detector rules:
    /// `TYPE` exactly, or a pattern with one `*` (`Acme*Problem`). When it is True on a node, the node has a
    /// `GpuHealthCheckFailed` issue naming it. Repeat the flag, or separate with commas in the variable. These
    /// add to the built-in families (NVSentinel, AKS, GKE, Meta GCM, Nebius, AMD; docs/health.md); a type no
    /// family names is never read.
    #[arg(
        long = "health-condition",
        global = true,
        env = "GPUINV_HEALTH_CONDITIONS",
        value_name = "TYPE-OR-PATTERN",
        value_delimiter = ',',
        value_parser = parse_health_condition
    )]
    pub health_conditions: Vec<String>,
    /// A node label key that is a network topology level (a rack, a switch, a block), for labels neither
    /// the built-in table (GKE, EKS, OKE, Nebius, Topograph, zone; docs/topology.md) nor a Kueue Topology
    /// names. Repeat the flag, or separate with commas in the variable. Its values are domains: nodes with
    /// one value share it.
    #[arg(
        long = "topology-label",
        global = true,
        env = "GPUINV_TOPOLOGY_LABELS",
        value_name = "KEY",
        value_delimiter = ','
    )]
    pub topology_labels: Vec<String>,
}

/// A `--cluster-property` name: "" (none) or an object name (a DNS subdomain: lowercase letters, digits, `-`
/// and `.`, at most 253 characters, starting and ending with a letter or digit).
fn parse_cluster_property(text: &str) -> Result<String, String> {
    let name = text.trim();
    let fits = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.';
    let ends = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    if name.is_empty()
        || (name.len() <= 253
            && name.chars().all(fits)
            && ends(name.chars().next())
            && ends(name.chars().last()))
    {
        Ok(name.to_owned())
    } else {
        Err(format!(
            "{name:?} is not an object name (lowercase letters, digits, '-' and '.', at most 253 characters, \
             starting and ending with a letter or digit); \"\" keeps no ClusterProperty"
        ))
    }
}

/// `--metrics-addr`: "" (no endpoint) or `HOST:PORT` (`0.0.0.0:8080`, `[::]:8080`, `localhost:9090`),
/// checked before anything connects.
fn parse_metrics_addr(text: &str) -> Result<String, String> {
    let text = text.trim();
    if text.is_empty() || text.parse::<std::net::SocketAddr>().is_ok() {
        return Ok(text.to_owned());
    }
    let bad = || {
        format!(
            "{text:?} is not an address to listen on: HOST:PORT such as 0.0.0.0:8080, 127.0.0.1:8080 or \
             [::]:8080 (\"\" turns the endpoint off)"
        )
    };
    let (host, port) = text.rsplit_once(':').ok_or_else(bad)?;
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.');
    match (host_ok, port.parse::<u16>()) {
        (true, Ok(_)) => Ok(text.to_owned()),
        _ => Err(bad()),
    }
}

/// A `--health-condition`, checked as a condition type or pattern.
fn parse_health_condition(text: &str) -> Result<String, String> {
    crate::inventory::health::TypePattern::parse(text).map(|_| text.trim().to_owned())
}

impl GlobalArgs {
    /// The health table: the built-in families plus `--health-condition`.
    pub fn health_table(&self) -> std::sync::Arc<crate::inventory::health::HealthTable> {
        use crate::inventory::health::HealthTable;
        std::sync::Arc::new(
            HealthTable::with_conditions(&self.health_conditions)
                // The values were checked when parsed; a table that still fails falls back to the defaults.
                .unwrap_or_else(|_| HealthTable::defaults().clone()),
        )
    }

    /// The DRA GPU drivers, without empty entries (`--dra-driver=` turns DRA off).
    pub fn dra_drivers(&self) -> Vec<String> {
        self.dra_drivers
            .iter()
            .map(|d| d.trim().to_owned())
            .filter(|d| !d.is_empty())
            .collect()
    }

    /// Where to connect, as the client module takes it.
    pub fn client_config(&self) -> ClientConfig {
        ClientConfig {
            kubeconfig: self.kubeconfig.clone(),
            context: self.context.last().cloned(),
            overrides: self.connection.overrides(),
            request_timeout: self.connection.request_timeout.0,
            // Across contexts each cluster's wait is said with its error, not while it lasts.
            progress: self.context.len() <= 1,
            ..ClientConfig::default()
        }
    }

    /// These flags for the cluster of one `context`.
    pub fn for_context(&self, context: &str) -> GlobalArgs {
        GlobalArgs {
            context: vec![context.to_owned()],
            ..self.clone()
        }
    }

    /// The namespace whose objects are listed (`-n`); `None`: every namespace (`-A`, the default).
    pub fn listed_namespace(&self) -> Option<&str> {
        self.namespace.as_deref().filter(|_| !self.all_namespaces)
    }

    /// An error when `--context` was given more than once to a command that reads one cluster.
    pub fn one_cluster(&self, command: &str) -> crate::error::Result<()> {
        if self.context.len() > 1 {
            return Err(crate::error::Error::InvalidFlag(format!(
                "--context given {} times: `{command}` reads one cluster; the kubectl plugin's table and its \
                 `fit` read several (kubectl gpu-inventory --context A --context B, or --all-contexts)",
                self.context.len()
            )));
        }
        Ok(())
    }
}

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// How often every GpuInventory is reconciled even when nothing changed (e.g. 30s, 2m).
    #[arg(long, env = "GPUINV_REQUEUE", default_value = "30s", value_parser = parse_duration)]
    pub requeue: Duration,
    /// Name of the GpuInventory created at start-up when it does not exist; "" creates none.
    #[arg(long, env = "GPUINV_DEFAULT_INVENTORY", default_value = "cluster")]
    pub default_inventory: String,
    /// Name of the ClusterProperty (about.k8s.io, KEP-2149) that carries this cluster's GPU summary to a
    /// multi-cluster hub, kept where the API server serves ClusterProperties (docs/fleet.md); "" keeps none.
    /// The chart's ClusterRole grants writes to this one name.
    #[arg(long, env = "GPUINV_CLUSTER_PROPERTY", default_value = crate::crd::DEFAULT_CLUSTER_PROPERTY,
          value_parser = parse_cluster_property)]
    pub cluster_property: String,
    /// Do not install or update the CRD; only check that it exists (for clusters where CRDs are managed
    /// elsewhere; the operator then needs no write access to CRDs).
    #[arg(long, env = "GPUINV_SKIP_CRD_INSTALL")]
    pub skip_crd_install: bool,
    /// Only watch nodes matching this label selector (e.g. `nvidia.com/gpu.present=true`); default: all nodes.
    #[arg(long, env = "GPUINV_NODE_LABEL_SELECTOR", value_name = "SELECTOR")]
    pub node_label_selector: Option<String>,
    /// Only reconcile GpuInventories matching this label selector (to shard inventories between operators).
    /// Equality terms (`k=v`) are also set as labels on the default inventory so it is picked up.
    #[arg(long, env = "GPUINV_INVENTORY_LABEL_SELECTOR", value_name = "SELECTOR")]
    pub inventory_label_selector: Option<String>,
    /// Name of the node-status ConfigMap.
    #[arg(long, env = "GPUINV_CONFIGMAP_NAME", default_value = "gpu-node-status")]
    pub configmap_name: String,
    /// Address of the HTTP endpoint serving /healthz, /readyz and /metrics; "" disables it.
    #[arg(long, env = "GPUINV_METRICS_ADDR", default_value = "127.0.0.1:8080",
          value_parser = parse_metrics_addr)]
    pub metrics_addr: String,
    /// /readyz turns 503 once the API server has been failing for this long.
    #[arg(long, env = "GPUINV_READINESS_GRACE", default_value = "15s", value_parser = parse_duration)]
    pub readiness_grace: Duration,
    /// Run the controllers only while holding a Lease (for several replicas in a cluster).
    #[arg(long, env = "GPUINV_LEADER_ELECT")]
    pub leader_elect: bool,
    /// Name of the leader-election Lease (in --namespace).
    #[arg(
        long,
        env = "GPUINV_LEASE_NAME",
        default_value = "gpu-inventory-operator"
    )]
    pub lease_name: String,
    /// How long the lease stays valid without renewal: a standby takes over at most this long after the
    /// leader died.
    #[arg(long, env = "GPUINV_LEASE_DURATION", default_value = "15s", value_parser = parse_duration)]
    pub lease_duration: Duration,
    /// Room for the node entries (`status.nodes[]`) of a GpuInventory, in bytes of JSON (`65536`, `64Ki`,
    /// `1Mi`; at most 1Mi). Past it, nodes with issues are listed first and `status.omittedNodes` counts the
    /// rest; every GPU node's full entry is in its own GpuNode either way. A smaller status is faster to write.
    #[arg(long, env = "GPUINV_STATUS_NODES_BUDGET", value_name = "BYTES", default_value = "64Ki",
          value_parser = parse_status_budget)]
    pub status_nodes_budget: usize,
    /// How long a GPU node may advertise no GPU resource and no DRA device before it is a
    /// `GpuResourcesMissing` issue (the driver and the device plugin take minutes to come up on a new node),
    /// and a pod's allocated device may report `Unknown` health before it is `AllocatedDeviceHealthUnknown`.
    #[arg(long, env = "GPUINV_RESOURCES_GRACE", default_value = "10m", value_parser = parse_duration)]
    pub resources_grace: Duration,
    /// How long to keep retrying an unreachable API server at start-up before exiting non-zero.
    #[arg(long, env = "GPUINV_STARTUP_TIMEOUT", default_value = "60s", value_parser = parse_duration)]
    pub startup_timeout: Duration,
    /// Which held GPUs sit idle, from dcgm-exporter's series in Prometheus (docs/utilization.md).
    #[command(flatten)]
    pub utilization: super::utilization_source_args::UtilizationSourceArgs,
}

/// Flags of `scan`.
#[derive(Debug, Args, Clone)]
pub struct ScanArgs {
    /// Read nodes (and pods) from a `kubectl get nodes,pods -A -o yaml|json` dump instead of the cluster;
    /// `-` reads stdin. Without pods in the dump, nothing is allocated.
    #[arg(long, short = 'f', env = "GPUINV_SCAN_FROM_FILE", value_name = "FILE")]
    pub from_file: Option<String>,
    /// Output format: `table`, `wide` (adds sources and notes), `json`/`yaml` (exactly the GpuInventory
    /// status), `name` (`gpunode.homelab.youngju.dev/NAME` per GPU node) or `jsonpath=TEMPLATE` (kubectl's
    /// template over the `-o json` document, e.g. `jsonpath='{.nodes[*].name}'`).
    #[arg(long, short = 'o', env = "GPUINV_SCAN_OUTPUT", value_name = "FORMAT",
          value_parser = parse_output, default_value = "table")]
    pub output: OutputFormat,
    /// Print only the table's rows: no header, totals, legend, notes or issue lines (for scripts).
    #[arg(long, env = "GPUINV_SCAN_NO_HEADERS")]
    pub no_headers: bool,
    /// Only scan nodes matching this label selector.
    #[arg(
        long,
        short = 'l',
        env = "GPUINV_SCAN_SELECTOR",
        value_name = "SELECTOR"
    )]
    pub selector: Option<String>,
    /// Rows of the table: `node` (one per GPU node), `product` (GPUs and free whole GPUs per GPU model),
    /// `namespace` (what its pods hold and what its pending pods wait for), `vendor`, or a topology level:
    /// `nvlink` or a node label key (`cloud.google.com/gce-topology-block`, a rack label, any key), one row
    /// per domain and product with its nodes, GPUs, what it offers to pods of the product's GPUs per node and
    /// its problems. `json`/`yaml` always print the whole status.
    #[arg(long, env = "GPUINV_SCAN_GROUP_BY", value_name = "GROUPING", default_value = "node",
          value_parser = parse_group_by)]
    pub group_by: GroupBy,
    /// Objects per LIST request of a live scan, as kubectl's `--chunk-size`: each page is decoded and
    /// stripped before the next is asked for, so a larger one holds more at once and makes fewer requests.
    /// 0 lists each kind in one request.
    #[arg(
        long,
        env = "GPUINV_SCAN_CHUNK_SIZE",
        value_name = "N",
        default_value_t = DEFAULT_CHUNK_SIZE
    )]
    pub chunk_size: u32,
    /// List in `nodes[]` only the GPU nodes an operator run with this `--status-nodes-budget` lists in its
    /// status (the same cut: nodes with issues first; `omittedNodes` and `nodesMessage` as it writes them);
    /// each entry keeps its DRA devices. Without it every GPU node is listed.
    #[arg(long, env = "GPUINV_SCAN_STATUS_NODES_BUDGET", value_name = "BYTES",
          value_parser = parse_status_budget)]
    pub status_nodes_budget: Option<usize>,
    /// Which held GPUs sit idle (an IDLE column, `namespaces[].idle`), from Prometheus.
    #[command(flatten)]
    pub utilization: super::utilization_source_args::UtilizationSourceArgs,
    /// The cap on a `-f` dump.
    #[command(flatten)]
    pub input: super::input_args::InputArgs,
}

impl ScanArgs {
    /// The scan behind a command that asks a question of the inventory (`fit`, `quotas`): the same dump or
    /// cluster and selector, the whole status, default paging.
    pub fn of_query(from_file: Option<String>, selector: Option<String>) -> ScanArgs {
        ScanArgs {
            from_file,
            output: OutputFormat::Json,
            no_headers: false,
            selector,
            group_by: GroupBy::Node,
            chunk_size: DEFAULT_CHUNK_SIZE,
            status_nodes_budget: None,
            utilization: Default::default(),
            input: Default::default(),
        }
    }
}

/// `scan --chunk-size`'s default (the kubectl plugin's too).
pub const DEFAULT_CHUNK_SIZE: u32 = 500;

/// Parses a byte size: a number of bytes, or a number with `Ki` or `Mi` (`KiB`, `MiB` too).
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let (digits, unit) = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .map_or((trimmed, ""), |at| trimmed.split_at(at));
    let number: usize = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 65536, 64Ki or 1Mi"))?;
    let factor = match unit.trim() {
        "" => 1,
        "Ki" | "KiB" => 1024,
        "Mi" | "MiB" => 1024 * 1024,
        other => return Err(format!("{text:?}: unknown unit {other:?} (use Ki or Mi)")),
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `--status-nodes-budget`: a byte size up to [`MAX_STATUS_NODES_BUDGET_BYTES`].
fn parse_status_budget(text: &str) -> Result<usize, String> {
    let bytes = parse_bytes(text)?;
    if bytes > MAX_STATUS_NODES_BUDGET_BYTES {
        return Err(format!(
            "{text:?} is over 1Mi: the status must stay under the API server's object size limit"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_is_the_default() {
        let cli = Cli::try_parse_from(["gpu-inventory-operator", "--requeue", "5s"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.run.requeue, Duration::from_secs(5));
        assert_eq!(cli.run.default_inventory, "cluster");
    }

    #[test]
    fn dra_drivers_default_repeat_and_turn_off() {
        let parse = |args: &[&str]| {
            let mut argv = vec!["gpu-inventory-operator"];
            argv.extend_from_slice(args);
            let mut drivers = Cli::try_parse_from(argv).unwrap().global.dra_drivers;
            drivers.retain(|d| !d.is_empty());
            drivers
        };
        // Every driver the vendor tables know, and the constant clap reads is the tables' list.
        let known: Vec<&str> = crate::inventory::vendors::dra_drivers::default_drivers().collect();
        assert_eq!(parse(&[]), known);
        assert_eq!(known[..2], ["gpu.nvidia.com", "gpu.amd.com"]);
        assert_eq!(
            parse(&[
                "--dra-driver",
                "gpu.nvidia.com",
                "--dra-driver",
                "gpu.example.com"
            ]),
            ["gpu.nvidia.com", "gpu.example.com"]
        );
        assert!(parse(&["--dra-driver="]).is_empty());
    }

    #[test]
    fn scan_groups_by_the_fixed_names_and_by_any_topology_level() {
        let group_by = |value: &str| {
            let cli = Cli::try_parse_from(["gpu-inventory-operator", "scan", "--group-by", value]);
            match cli.map(|c| c.command) {
                Ok(Some(Command::Scan(args))) => Ok(args.group_by),
                Ok(other) => panic!("not a scan: {other:?}"),
                Err(e) => Err(e.to_string()),
            }
        };
        assert_eq!(group_by("vendor"), Ok(GroupBy::Vendor));
        assert_eq!(group_by("nvlink"), Ok(GroupBy::Level("nvlink".to_owned())));
        assert_eq!(
            group_by("example.com/rack"),
            Ok(GroupBy::Level("example.com/rack".to_owned()))
        );
        assert!(
            group_by("rack=1")
                .unwrap_err()
                .contains("nvlink or a node label key")
        );
        let default = Cli::try_parse_from(["gpu-inventory-operator", "scan"]).unwrap();
        assert!(matches!(default.command, Some(Command::Scan(a)) if a.group_by == GroupBy::Node));
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("65536"), Ok(65536));
        assert_eq!(parse_bytes("64Ki"), Ok(65536));
        assert_eq!(parse_bytes("1MiB"), Ok(1 << 20));
        assert!(parse_bytes("64k").is_err());
        assert!(parse_bytes("lots").is_err());
        assert_eq!(parse_status_budget("0"), Ok(0));
        assert!(parse_status_budget("2Mi").unwrap_err().contains("over 1Mi"));
        let cli = Cli::try_parse_from(["gpu-inventory-operator"]).unwrap();
        assert_eq!(cli.run.status_nodes_budget, 64 * 1024);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("soon").is_err());
    }
}
