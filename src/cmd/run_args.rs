//! The flags of `run`, the operator: its reconcile, its outputs, leader election and start-up. A leaf: the
//! command line names them without the operator's code.

use std::time::Duration;

use clap::Args;

use super::duration_arg::parse_duration;
use super::scan_args::parse_status_budget;

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
