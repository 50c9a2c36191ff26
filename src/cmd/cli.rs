//! The command line. Every flag can also be set through the environment variable named in `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use super::duration_arg::parse_duration;
pub use super::output::OutputFormat;
pub use super::run_args::RunArgs;
pub use super::scan_args::{DEFAULT_CHUNK_SIZE, ScanArgs, parse_bytes};
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::group_by::GroupBy;
    use crate::cmd::scan_args::parse_status_budget;
    use clap::CommandFactory;
    use std::time::Duration;

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
