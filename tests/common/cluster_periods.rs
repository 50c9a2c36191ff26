//! The periods of the cluster's own components (API server, controller manager, KWOK, scheduler) that the
//! tests' deadlines derive from.

use std::path::Path;
use std::time::Duration;

use testkit::waits::{Deadline, SCHEDULER_MAX_BACKOFF};

use super::cluster_access::{API_SERVER_STARTED, CLIENT_GO_RELIST_MAX, cluster_state_dir};

/// The periods of the cluster's own components that tests wait on. On a cluster of hack/local-cluster.sh they
/// are read from the arguments it wrote for them ([`cluster_state_dir`]); on another cluster (kind with KWOK
/// and the stages in hack/kwok/, as .github/workflows/ci.yml runs it) they are Kubernetes' and KWOK's defaults
/// and hack/kwok/'s stages.
#[derive(Clone, Debug)]
pub struct ClusterPeriods {
    /// kube-controller-manager's `--node-monitor-period`: how often the node lifecycle controller looks at the
    /// nodes (lifts a Ready node's not-ready taint, marks a silent node Unknown).
    pub node_monitor_period: Duration,
    /// kube-controller-manager's `--node-monitor-grace-period`: how long a node may miss Lease renewals before
    /// it is marked Unknown.
    pub node_monitor_grace: Duration,
    /// The longest gap between two status heartbeats of a KWOK node (the heartbeat stage's jitter bound).
    pub kwok_heartbeat_max: Duration,
    /// How often KWOK renews a node's Lease (a quarter of `--node-lease-duration-seconds`).
    pub kwok_lease_renew: Duration,
    /// kube-controller-manager's `--leader-elect-lease-duration`: a controller-manager started again (after a
    /// long API-server outage, hack/local-cluster.sh start-apiserver) runs its controllers once its dead
    /// predecessor's lease has run out.
    pub controller_manager_lease: Duration,
}

impl ClusterPeriods {
    /// The periods of the test cluster.
    pub fn get() -> ClusterPeriods {
        let state = cluster_state_dir();
        let local = state.is_some();
        let read = |file: &str| {
            let dir = state
                .clone()
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("hack"));
            std::fs::read_to_string(dir.join(file)).unwrap_or_default()
        };
        let controller_manager = if local {
            read("kube-controller-manager.args")
        } else {
            String::new()
        };
        let flag = |text: &str, name: &str| -> Option<u64> {
            let value = text.split(&format!("{name}=")).nth(1)?;
            value
                .split_whitespace()
                .next()?
                .trim_end_matches('s')
                .parse()
                .ok()
        };
        let heartbeat = read("kwok/node-heartbeat-with-lease.yaml");
        let heartbeat_ms: Option<u64> = heartbeat
            .split("jitterDurationMilliseconds:")
            .nth(1)
            .and_then(|v| v.split_whitespace().next()?.parse().ok());
        let kwok_args = if local {
            read("kwok.args")
        } else {
            String::new()
        };
        ClusterPeriods {
            // Kubernetes' defaults: 5 s and 50 s.
            node_monitor_period: Duration::from_secs(
                flag(&controller_manager, "--node-monitor-period").unwrap_or(5),
            ),
            node_monitor_grace: Duration::from_secs(
                flag(&controller_manager, "--node-monitor-grace-period").unwrap_or(50),
            ),
            kwok_heartbeat_max: Duration::from_millis(
                heartbeat_ms.expect("the KWOK heartbeat stage's jitterDurationMilliseconds"),
            ),
            // KWOK's default lease is 40 s.
            kwok_lease_renew: Duration::from_secs(
                flag(&kwok_args, "--node-lease-duration-seconds").unwrap_or(40) / 4,
            ),
            // Kubernetes' default: 15 s.
            controller_manager_lease: Duration::from_secs(
                flag(&controller_manager, "--leader-elect-lease-duration").unwrap_or(15),
            ),
        }
    }

    /// A controller of kube-controller-manager acting on a new object, also when the controller-manager has
    /// just been started again: its predecessor's lease running out, then its reaction.
    pub fn controller_manager_reaction(&self, controller: &str) -> Deadline {
        Deadline::new(
            self.controller_manager_lease,
            format!(
                "a restarted kube-controller-manager taking the lease over (--leader-elect-lease-duration {:?})",
                self.controller_manager_lease
            ),
        )
        .then(Deadline::reaction(controller))
    }

    /// While the cluster's controllers catch up with an API server this process started again: a restarted
    /// kube-controller-manager or kube-scheduler takes its lease over once its predecessor's has run out, a
    /// running one's informers are current within client-go's relist backoff. `None` once that is over (or
    /// without a restart).
    pub fn after_restart(&self) -> Option<Deadline> {
        let since = API_SERVER_STARTED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .map(|at| at.elapsed())?;
        let lease = self.controller_manager_lease;
        let left = lease.max(CLIENT_GO_RELIST_MAX).checked_sub(since)?;
        Some(Deadline::new(
            left,
            format!(
                "the controllers catching up with the API server started again {since:.0?} ago (a restarted one's \
                 lease, --leader-elect-lease-duration {lease:?}; a running one's informers, client-go's relist \
                 backoff, at most {CLIENT_GO_RELIST_MAX:?})"
            ),
        ))
    }

    /// One reaction of a controller of the cluster (kube-controller-manager's, kube-scheduler), once they have
    /// caught up with a restart of the API server ([`Self::after_restart`]).
    pub fn controller_reaction(&self, controller: &str) -> Deadline {
        match self.after_restart() {
            Some(catch_up) => catch_up.then(Deadline::reaction(controller)),
            None => Deadline::reaction(controller),
        }
    }

    /// One look of the node lifecycle controller, and its reaction.
    pub fn node_monitor_pass(&self) -> Deadline {
        Deadline::new(
            self.node_monitor_period,
            format!(
                "the node lifecycle controller's next look (--node-monitor-period {:?})",
                self.node_monitor_period
            ),
        )
        .then(self.controller_reaction("the node lifecycle controller"))
    }

    /// Until every KWOK node has sent a status heartbeat, and KWOK's reaction.
    pub fn kwok_heartbeat(&self) -> Deadline {
        Deadline::new(
            self.kwok_heartbeat_max,
            format!(
                "the longest gap between two KWOK status heartbeats ({:?}, its heartbeat stage)",
                self.kwok_heartbeat_max
            ),
        )
        .then(Deadline::reaction("KWOK"))
    }

    /// A silent node marked Unknown: the grace period, counted from the kubelet's last word, which may still be
    /// one heartbeat KWOK had scheduled; then the node lifecycle controller's next look.
    pub fn node_goes_unknown(&self) -> Deadline {
        Deadline::new(
            self.node_monitor_grace,
            format!(
                "the node lifecycle controller's grace (--node-monitor-grace-period {:?})",
                self.node_monitor_grace
            ),
        )
        .then(Deadline::new(
            self.kwok_heartbeat_max,
            "one status heartbeat KWOK had already scheduled",
        ))
        .then(self.node_monitor_pass())
    }

    /// The scheduler placing (or giving up on) a pod on a new node: the not-ready taint lifted by the node
    /// lifecycle controller, then the scheduler's retry of the pod (at most its backoff) and its reaction.
    pub fn scheduling(&self) -> Deadline {
        self.node_monitor_pass()
            .then(Deadline::new(
                SCHEDULER_MAX_BACKOFF,
                "kube-scheduler's retry of the pod (podMaxBackoffSeconds)",
            ))
            .then(self.controller_reaction("kube-scheduler"))
    }
}
