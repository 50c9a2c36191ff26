//! The operator's least privilege, asked of a real API server, for any installation of it (deploy/ or the
//! Helm chart): `kubectl auth can-i` as its service account, and the operator run out of cluster impersonating
//! that account until it converges on the home-lab nodes.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use gpu_inventory_operator::crd::GpuInventory;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;

use super::cluster_access::{impersonating_kubeconfig, is_homelab, kubeconfig_path};
use super::operator_process::OperatorProcess;
use super::test_env::TestEnv;

/// The operator's CRD.
pub const CRD_NAME: &str = "gpuinventories.homelab.youngju.dev";
const CRD_RESOURCE: &str = "customresourcedefinitions/gpuinventories.homelab.youngju.dev";
const GPUNODE_CRD_RESOURCE: &str = "customresourcedefinitions/gpunodes.homelab.youngju.dev";
const GPUNODES: &str = "gpunodes.homelab.youngju.dev";

/// `kubectl --kubeconfig <the test cluster> <args>`.
pub fn kubectl(args: &[&str]) -> Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running kubectl (is it on PATH?): {e}"))
}

/// One installation of the operator: its service account's namespace and name, and its Lease's name.
#[derive(Clone, Debug)]
pub struct Installation {
    /// Namespace of the service account, ConfigMap, Lease and namespaced Role.
    pub namespace: String,
    /// The service account's name.
    pub service_account: String,
    /// The leader-election Lease the Role grants get/patch on.
    pub lease: String,
}

impl Installation {
    /// The service account as a user name (`system:serviceaccount:<ns>:<name>`).
    pub fn user(&self) -> String {
        format!(
            "system:serviceaccount:{}:{}",
            self.namespace, self.service_account
        )
    }
}

/// One `kubectl auth can-i` question, as `user`: `(verb, resource, subresource, namespace)`; namespace `*` = all.
pub fn can_i(
    user: &str,
    verb: &str,
    resource: &str,
    subresource: Option<&str>,
    namespace: Option<&str>,
) -> bool {
    let mut args = vec!["auth", "can-i", verb, resource, "--as", user];
    if let Some(sub) = subresource {
        args.extend(["--subresource", sub]);
    }
    match namespace {
        Some("*") => args.push("--all-namespaces"),
        Some(ns) => args.extend(["--namespace", ns]),
        None => {}
    }
    let out = kubectl(&args);
    let answer = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match answer.as_str() {
        "yes" => true,
        "no" => false,
        _ => panic!(
            "kubectl {}: unexpected answer {answer:?}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// `(verb, resource, subresource, namespace)`.
type Question = (String, String, Option<&'static str>, Option<String>);

fn q(verb: &str, resource: &str, sub: Option<&'static str>, ns: Option<&str>) -> Question {
    (verb.into(), resource.into(), sub, ns.map(str::to_owned))
}

/// What the operator must be able to do (it does all of it), and a list of what it must not.
fn questions(install: &Installation) -> (Vec<Question>, Vec<Question>) {
    let ns = Some(install.namespace.as_str());
    let lease = format!("leases.coordination.k8s.io/{}", install.lease);
    let inv = "gpuinventories.homelab.youngju.dev";
    let (ev, le) = ("events.events.k8s.io", "leases.coordination.k8s.io");
    let allowed = vec![
        q("get", "nodes", None, None),
        q("list", "nodes", None, None),
        q("watch", "nodes", None, None),
        // The pod watch, cluster-wide: list + watch only.
        q("list", "pods", None, Some("*")),
        q("watch", "pods", None, Some("*")),
        q("list", "pods", None, Some("kube-system")),
        q("list", inv, None, None),
        q("watch", inv, None, None),
        q("create", inv, None, None),
        q("patch", inv, Some("status"), None),
        // One GpuNode per GPU node: watched, applied (create + patch), deleted; its status applied.
        q("list", GPUNODES, None, None),
        q("watch", GPUNODES, None, None),
        q("create", GPUNODES, None, None),
        q("patch", GPUNODES, None, None),
        q("delete", GPUNODES, None, None),
        q("patch", GPUNODES, Some("status"), None),
        q("get", GPUNODE_CRD_RESOURCE, None, None),
        q("watch", GPUNODE_CRD_RESOURCE, None, None),
        q("patch", GPUNODE_CRD_RESOURCE, None, None),
        q("get", CRD_RESOURCE, None, None),
        q("watch", CRD_RESOURCE, None, None),
        q("patch", CRD_RESOURCE, None, None),
        q("get", "configmaps", None, ns),
        q("watch", "configmaps", None, ns),
        q("create", "configmaps", None, ns),
        q("patch", "configmaps", None, ns),
        q("create", ev, None, ns),
        q("patch", ev, None, ns),
        // Events about the cluster-scoped GpuInventories can only live in "default".
        q("create", ev, None, Some("default")),
        q("patch", ev, None, Some("default")),
        q("create", le, None, ns),
        q("get", &lease, None, ns),
        q("patch", &lease, None, ns),
    ];
    let denied = vec![
        // No node writes of any kind.
        q("update", "nodes", None, None),
        q("patch", "nodes", None, None),
        q("patch", "nodes", Some("status"), None),
        q("delete", "nodes", None, None),
        // Pods are read by the watch only: no get, no writes, no logs or exec.
        q("get", "pods", None, ns),
        q("delete", "pods", None, Some("*")),
        q("patch", "pods", Some("status"), Some("*")),
        q("get", "pods", Some("log"), Some("*")),
        q("create", "pods", Some("exec"), Some("*")),
        // DRA objects are read only: no claim is allocated, no slice or class written.
        q(
            "patch",
            "resourceclaims.resource.k8s.io",
            Some("status"),
            Some("*"),
        ),
        q("create", "resourceslices.resource.k8s.io", None, None),
        q("delete", "resourceclaims.resource.k8s.io", None, Some("*")),
        q("create", "deviceclasses.resource.k8s.io", None, None),
        // No secrets, anywhere (not even in its own namespace).
        q("get", "secrets", None, Some("*")),
        q("list", "secrets", None, Some("*")),
        q("get", "secrets", None, ns),
        q("list", "secrets", None, ns),
        q("list", "secrets", None, Some("kube-system")),
        // ConfigMaps only in its own namespace.
        q("create", "configmaps", None, Some("default")),
        q("patch", "configmaps", None, Some("default")),
        q("create", "configmaps", None, Some("kube-system")),
        q("patch", "configmaps", None, Some("kube-system")),
        q("list", "configmaps", None, Some("*")),
        q("delete", "configmaps", None, ns),
        // CRDs: only its own, never deleted.
        q("delete", "customresourcedefinitions", None, None),
        q("delete", CRD_RESOURCE, None, None),
        q("list", "customresourcedefinitions", None, None),
        q(
            "patch",
            "customresourcedefinitions/foos.example.com",
            None,
            None,
        ),
        q("delete", inv, None, None),
        q("update", inv, Some("status"), None),
        // GpuNodes: server-side apply only, no update; their CRD is never deleted.
        q("update", GPUNODES, None, None),
        q("update", GPUNODES, Some("status"), None),
        q("delete", GPUNODES, Some("status"), None),
        q("deletecollection", GPUNODES, None, None),
        q("delete", GPUNODE_CRD_RESOURCE, None, None),
        // Events and Leases only in its own namespace; no other Lease.
        q("create", ev, None, Some("kube-system")),
        q("create", "events", None, Some("default")),
        q("create", "events", None, ns),
        q("create", le, None, Some("kube-system")),
        q(
            "patch",
            "leases.coordination.k8s.io/kube-controller-manager",
            None,
            Some("kube-system"),
        ),
        q("patch", "leases.coordination.k8s.io/someone-else", None, ns),
        // Nothing else.
        q("create", "pods", None, ns),
        q("create", "serviceaccounts", Some("token"), ns),
        q("impersonate", "users", None, None),
        q(
            "escalate",
            "clusterroles.rbac.authorization.k8s.io",
            None,
            None,
        ),
    ];
    let (mut allowed, mut denied) = (allowed, denied);
    // kubectl can only name a resource the server serves: the DRA questions need resource.k8s.io/v1
    // (Kubernetes 1.34+). Before that the rules are in the ClusterRole all the same (checked by the chart
    // render test) and grant nothing.
    if dra_served() {
        allowed.extend([
            // The DRA watches: list + watch only.
            q("list", "resourceslices.resource.k8s.io", None, None),
            q("watch", "resourceslices.resource.k8s.io", None, None),
            q("list", "resourceclaims.resource.k8s.io", None, Some("*")),
            q("watch", "resourceclaims.resource.k8s.io", None, Some("*")),
            q("list", "deviceclasses.resource.k8s.io", None, None),
            q("watch", "deviceclasses.resource.k8s.io", None, None),
        ]);
        if served("devicetaintrules.resource.k8s.io") {
            allowed.extend([
                q("list", "devicetaintrules.resource.k8s.io", None, None),
                q("watch", "devicetaintrules.resource.k8s.io", None, None),
            ]);
            denied.push(q("create", "devicetaintrules.resource.k8s.io", None, None));
        } else {
            eprintln!("RBAC: the DeviceTaintRule questions are not asked: this server serves none");
        }
        denied.extend([
            // DRA objects are read only: no claim is allocated, no slice or class written.
            q(
                "patch",
                "resourceclaims.resource.k8s.io",
                Some("status"),
                Some("*"),
            ),
            q("create", "resourceslices.resource.k8s.io", None, None),
            q("delete", "resourceclaims.resource.k8s.io", None, Some("*")),
            q("create", "deviceclasses.resource.k8s.io", None, None),
        ]);
    } else {
        eprintln!(
            "RBAC: the DRA questions are not asked: this server serves no resource.k8s.io/v1"
        );
    }
    (allowed, denied)
}

/// Whether the server serves `resource.k8s.io/v1` ResourceSlices (what kubectl can name).
fn dra_served() -> bool {
    served("resourceslices.resource.k8s.io")
}

/// Whether the server serves `resource` (`plural.group`), at any version.
fn served(resource: &str) -> bool {
    let out = kubectl(&["api-resources", "--api-group=resource.k8s.io", "-o", "name"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|l| l.trim() == resource)
}

/// Asks every question of the installation's service account; fails listing each wrong answer.
pub fn assert_least_privilege(install: &Installation, what: &str) {
    let user = install.user();
    let (allowed, denied) = questions(install);
    let mut wrong = Vec::new();
    for (expected, questions) in [(true, &allowed), (false, &denied)] {
        for (verb, resource, sub, namespace) in questions {
            if can_i(&user, verb, resource, *sub, namespace.as_deref()) != expected {
                wrong.push(format!(
                    "  {} {verb} {resource}{}{}",
                    if expected {
                        "CANNOT (must be able to)"
                    } else {
                        "CAN (must not)"
                    },
                    sub.map(|s| format!(" --subresource {s}"))
                        .unwrap_or_default(),
                    namespace
                        .as_deref()
                        .map(|n| format!(" in {n}"))
                        .unwrap_or_default(),
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "RBAC of {what} is wrong for {user}:\n{}",
        wrong.join("\n")
    );
}

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
