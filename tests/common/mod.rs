//! Integration test harness: a real API server, per-test isolation, fixture loading, node changes, and the
//! operator binary run as a child process scoped to the test's own nodes and inventories.
//!
//! The cluster is the one named by `GPUINV_TEST_KUBECONFIG`, else the local control plane that `make test`
//! starts (`target/local-cluster/kubeconfig`, or under `LOCAL_CLUSTER_STATE_DIR` as hack/local-cluster.sh
//! takes it). No cluster is a test failure with instructions, never a skip.
//!
//! Every wait follows the thing it waits for, on a deadline derived from its cause ([`wait_for`],
//! [`ClusterPeriods`], [`OperatorProcess::periods`], testkit::waits).

#![allow(dead_code)] // each test binary uses a different part of the harness

pub mod allocation;
pub mod built_tools;
pub mod cluster_access;
pub mod cluster_periods;
pub mod dra;
pub mod exec_plugin;
pub mod fit_cli;
pub mod fit_plan_cli;
pub mod fleet;
pub mod fresh_scan;
pub mod helm;
pub mod kueue;
pub mod map_cli;
pub mod node_changes;
pub mod offline_cli;
pub mod operator_process;
pub mod output_reads;
pub mod pod_scheduling;
pub mod pool_counts;
pub mod pool_status;
pub mod prometheus;
pub mod proxy;
pub mod rbac;
pub mod reading4;
pub mod silent_server;
pub mod test_env;
pub mod tmux;
pub mod waiting;
pub mod workloads;

// `common::X` for the test crates: the harness's items by name, wherever they live.
#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {cluster_access::*, cluster_periods::*, operator_process::*, test_env::*, waiting::*};

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use testkit::waits::{
    API_SERVER_STARTUP_BACKOFF, CRD_REINSTALL_BACKOFF, Deadline, GC_RESYNC, LOAD_ALLOWANCE,
    OperatorPeriods, PLUGIN_FIRST_LIST_TIMEOUT, RECONCILE_BACKOFF, SCHEDULER_MAX_BACKOFF,
    WATCH_BACKOFF,
};
