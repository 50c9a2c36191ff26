//! The operator run out of cluster impersonating an installation's service account until it converges on
//! the home-lab nodes, and the refusals in its log.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use gpu_inventory_operator::crd::GpuInventory;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

use super::super::cluster_access::{impersonating_kubeconfig, is_homelab};
use super::super::operator_process::OperatorProcess;
use super::super::test_env::TestEnv;
use super::can_i::kubectl;

/// The operator's log lines that report a refused request.
pub fn forbidden_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("forbidden")
                || l.contains(" 403")
                || l.contains("(403")
                || l.contains("unauthorized")
        })
        .collect()
}

/// Deletes the test's ConfigMap in the installation's namespace (TestEnv only cleans up its own namespace).
pub struct DeleteConfigMapOnDrop(String, String);

impl Drop for DeleteConfigMapOnDrop {
    fn drop(&mut self) {
        let _ = kubectl(&[
            "delete",
            "configmap",
            &self.1,
            "-n",
            &self.0,
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

/// The operator as a test runs it, and the ConfigMap it writes in the installation's namespace.
pub struct ScopedOperator {
    // Fields drop in this order: the process is killed before its ConfigMap is deleted (else it recreates it).
    /// The process.
    pub process: OperatorProcess,
    /// Its ConfigMap's name.
    pub configmap: String,
    _cleanup: DeleteConfigMapOnDrop,
}

/// The operator, impersonating `user`, scoped to the test's nodes and inventory, writing its ConfigMap
/// `gpu-node-status-<id>` in `namespace` (where the installation's Role lets it).
pub fn start_operator_as(
    env: &TestEnv,
    user: &str,
    namespace: &str,
    extra: &[&str],
) -> ScopedOperator {
    let kubeconfig: PathBuf = impersonating_kubeconfig(user, &env.id);
    let mut args = env.operator_args("2s");
    let at = |flag: &str, args: &[String]| args.iter().position(|a| a == flag).unwrap() + 1;
    let i = at("--kubeconfig", &args);
    args[i] = kubeconfig.display().to_string();
    let i = at("--namespace", &args);
    args[i] = namespace.to_owned();
    let configmap = format!("gpu-node-status-{}", env.id);
    args.extend(["--configmap-name".to_owned(), configmap.clone()]);
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    ScopedOperator {
        process: OperatorProcess::start(&env.id, &args),
        _cleanup: DeleteConfigMapOnDrop(namespace.to_owned(), configmap.clone()),
        configmap,
    }
}

/// Waits until the inventory reaches the home-lab numbers and the ConfigMap (in `namespace`) holds the four
/// GPU nodes; on timeout or exit, fails with the operator's log and the requests it was refused (`what`
/// names the RBAC in use).
pub async fn wait_converged(
    env: &TestEnv,
    operator: &mut ScopedOperator,
    namespace: &str,
    user: &str,
    what: &str,
) {
    let inventories: Api<GpuInventory> = Api::all(env.client.clone());
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), namespace);
    let gpu_nodes: Vec<String> = ["nuc1", "nuc2", "omen", "omen2"]
        .iter()
        .map(|n| env.node_name(n))
        .collect();
    // Its start-up (with --leader-elect, a stale Lease running out too) and its first pass.
    let deadline = operator.process.periods().converge();
    let started = Instant::now();
    let (mut inventory_ok, mut configmap_ok) = (false, false);
    let configmap = operator.configmap.clone();
    loop {
        if !inventory_ok {
            let inv = inventories
                .get_opt(&env.inventory_name())
                .await
                .expect("get GpuInventory");
            inventory_ok = inv.and_then(|i| i.status).is_some_and(|s| is_homelab(&s));
        }
        if !configmap_ok {
            let cm = configmaps.get_opt(&configmap).await.expect("get ConfigMap");
            let data = cm.and_then(|c| c.data).unwrap_or_default();
            configmap_ok =
                gpu_nodes.iter().all(|n| data.contains_key(n)) && data.len() == gpu_nodes.len() + 1;
        }
        if inventory_ok && configmap_ok {
            return;
        }
        let process = &mut operator.process;
        let exited = process.wait_exit(Duration::from_millis(60));
        if exited.is_some() || started.elapsed() > deadline.limit() {
            let log = process.log();
            let refused = forbidden_lines(&log);
            let state = |ok: bool| if ok { "converged" } else { "not converged" };
            panic!(
                "the operator running as {user} did not converge ({}; inventory {}, ConfigMap {namespace}/{configmap} {}).\n\
                 {}\n--- operator log ({}) ---\n{log}",
                match exited {
                    Some(code) => format!("it exited with {code:?}"),
                    None => format!("the deadline of {deadline} passed"),
                },
                state(inventory_ok),
                state(configmap_ok),
                if refused.is_empty() {
                    "No refused request in its log.".to_owned()
                } else {
                    format!(
                        "The permissions of {what} are insufficient; refused requests:\n{}",
                        refused.join("\n")
                    )
                },
                process.log_path.display(),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
