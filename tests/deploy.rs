//! `deploy/` against a real API server: the manifests apply, the CRD in them is the one the binary prints,
//! the service account can do what the operator does and nothing else, and that is enough for the operator
//! (run out of cluster, impersonating the service account) to converge on the home-lab nodes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::{
    OperatorProcess, TEST_LABEL, TestEnv, impersonating_kubeconfig, is_homelab, kubeconfig_path,
};
use gpu_inventory_operator::crd::GpuInventory;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// The operator's namespace and service account, as in deploy/.
const NAMESPACE: &str = "gpu-inventory-system";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:gpu-inventory-system:gpu-inventory-operator";
const CRD_NAME: &str = "gpuinventories.homelab.youngju.dev";
const CRD_RESOURCE: &str = "customresourcedefinitions/gpuinventories.homelab.youngju.dev";
const CONVERGE: Duration = Duration::from_secs(60);

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
}

fn kubectl(args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running kubectl (is it on PATH?): {e}"))
}

/// `kubectl apply -k deploy/`, once per test process (the tests share what it creates).
fn apply_deploy() {
    static APPLIED: OnceLock<Result<(), String>> = OnceLock::new();
    let result = APPLIED.get_or_init(|| {
        let dir = deploy_dir();
        // Several test processes may apply at once: a conflict on the first try is retried.
        let mut last = String::new();
        for _ in 0..3 {
            let out = kubectl(&["apply", "-k", dir.to_str().unwrap()]);
            if out.status.success() {
                return Ok(());
            }
            last = String::from_utf8_lossy(&out.stderr).into_owned();
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(last)
    });
    if let Err(stderr) = result {
        panic!("`kubectl apply -k deploy/` failed:\n{stderr}");
    }
}

fn yaml_file(name: &str) -> Value {
    let path = deploy_dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()))
}

#[test]
fn deploy_crd_yaml_is_what_the_binary_prints() {
    let printed = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .arg("crd")
        .output()
        .unwrap();
    assert!(
        printed.status.success(),
        "`gpu-inventory-operator crd` failed: {}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let committed =
        std::fs::read_to_string(deploy_dir().join("crd.yaml")).expect("deploy/crd.yaml exists");
    assert!(
        committed == String::from_utf8_lossy(&printed.stdout),
        "deploy/crd.yaml differs from `gpu-inventory-operator crd`: the CRD changed in src/ and the manifest was \
         not regenerated. Run `make crd-manifest` and commit deploy/crd.yaml."
    );
}

#[test]
fn kustomization_renders_everything() {
    let out = Command::new("kubectl")
        .args(["kustomize", deploy_dir().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "`kubectl kustomize deploy/` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = String::from_utf8_lossy(&out.stdout);
    for kind in [
        "Namespace",
        "CustomResourceDefinition",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Deployment",
        "Service",
    ] {
        assert!(
            rendered.contains(&format!("\nkind: {kind}\n")),
            "`kubectl kustomize deploy/` renders no {kind}"
        );
    }
    assert!(
        !rendered.contains("kind: PrometheusRule"),
        "the PrometheusRule needs the Prometheus Operator's CRDs; keep it in deploy/monitoring/"
    );
    let monitoring = Command::new("kubectl")
        .args([
            "kustomize",
            deploy_dir().join("monitoring").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        monitoring.status.success(),
        "`kubectl kustomize deploy/monitoring/` failed: {}",
        String::from_utf8_lossy(&monitoring.stderr)
    );
    let monitoring = String::from_utf8_lossy(&monitoring.stdout);
    for metric in [
        "gpu_inventory_gpu_nodes",
        "gpu_inventory_ready_gpu_nodes",
        "gpu_inventory_node_issues{reason=\"GpusUnhealthy\"}",
        "gpu_inventory_reconcile_errors_total",
    ] {
        assert!(
            monitoring.contains(metric),
            "the PrometheusRule does not use {metric}"
        );
    }
}

#[test]
fn the_deployment_runs_like_a_production_operator() {
    let deployment = yaml_file("deployment.yaml");
    assert_eq!(deployment["spec"]["replicas"], 2);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "gpu-inventory-operator");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        pod["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    let container = &pod["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for arg in [
        "--leader-elect",
        "--metrics-addr=0.0.0.0:8080",
        "--log-format=json",
    ] {
        assert!(
            args.contains(&arg),
            "the operator's args {args:?} lack {arg}"
        );
    }
    let security = &container["securityContext"];
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(
        container["resources"]["requests"],
        json!({ "cpu": "50m", "memory": "64Mi" })
    );
    assert_eq!(container["resources"]["limits"]["memory"], "256Mi");
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
}

/// One `kubectl auth can-i` question, as `user`: `(verb, resource, subresource, namespace)`; namespace `*` = all.
fn can_i(
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

type Question = (
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

#[tokio::test]
async fn the_service_account_can_do_what_the_operator_does_and_nothing_else() {
    let _cluster = common::client().await; // a clear message when there is no cluster
    apply_deploy();
    let ns = Some(NAMESPACE);
    let allowed: Vec<Question> = vec![
        ("get", "nodes", None, None),
        ("list", "nodes", None, None),
        ("watch", "nodes", None, None),
        ("list", "gpuinventories.homelab.youngju.dev", None, None),
        ("watch", "gpuinventories.homelab.youngju.dev", None, None),
        ("create", "gpuinventories.homelab.youngju.dev", None, None),
        (
            "patch",
            "gpuinventories.homelab.youngju.dev",
            Some("status"),
            None,
        ),
        ("get", CRD_RESOURCE, None, None),
        ("watch", CRD_RESOURCE, None, None),
        ("patch", CRD_RESOURCE, None, None),
        ("get", "configmaps", None, ns),
        ("watch", "configmaps", None, ns),
        ("create", "configmaps", None, ns),
        ("patch", "configmaps", None, ns),
        ("create", "events.events.k8s.io", None, ns),
        ("patch", "events.events.k8s.io", None, ns),
        // Events about the cluster-scoped GpuInventories can only live in "default".
        ("create", "events.events.k8s.io", None, Some("default")),
        ("patch", "events.events.k8s.io", None, Some("default")),
        ("create", "leases.coordination.k8s.io", None, ns),
        (
            "get",
            "leases.coordination.k8s.io/gpu-inventory-operator",
            None,
            ns,
        ),
        (
            "patch",
            "leases.coordination.k8s.io/gpu-inventory-operator",
            None,
            ns,
        ),
    ];
    let denied: Vec<Question> = vec![
        // No node writes of any kind.
        ("update", "nodes", None, None),
        ("patch", "nodes", None, None),
        ("patch", "nodes", Some("status"), None),
        ("delete", "nodes", None, None),
        // No secrets, anywhere (not even in its own namespace).
        ("get", "secrets", None, Some("*")),
        ("list", "secrets", None, Some("*")),
        ("get", "secrets", None, ns),
        ("list", "secrets", None, ns),
        ("list", "secrets", None, Some("kube-system")),
        // ConfigMaps only in its own namespace.
        ("create", "configmaps", None, Some("default")),
        ("patch", "configmaps", None, Some("default")),
        ("create", "configmaps", None, Some("kube-system")),
        ("patch", "configmaps", None, Some("kube-system")),
        ("list", "configmaps", None, Some("*")),
        ("delete", "configmaps", None, ns),
        // CRDs: only its own, never deleted.
        ("delete", "customresourcedefinitions", None, None),
        ("delete", CRD_RESOURCE, None, None),
        ("list", "customresourcedefinitions", None, None),
        (
            "patch",
            "customresourcedefinitions/foos.example.com",
            None,
            None,
        ),
        ("delete", "gpuinventories.homelab.youngju.dev", None, None),
        (
            "update",
            "gpuinventories.homelab.youngju.dev",
            Some("status"),
            None,
        ),
        // Events and Leases only in its own namespace; no other Lease.
        ("create", "events.events.k8s.io", None, Some("kube-system")),
        ("create", "events", None, Some("default")),
        ("create", "events", None, ns),
        (
            "create",
            "leases.coordination.k8s.io",
            None,
            Some("kube-system"),
        ),
        (
            "patch",
            "leases.coordination.k8s.io/kube-controller-manager",
            None,
            Some("kube-system"),
        ),
        ("patch", "leases.coordination.k8s.io/someone-else", None, ns),
        // Nothing else.
        ("create", "pods", None, ns),
        ("create", "serviceaccounts", Some("token"), ns),
        ("impersonate", "users", None, None),
        (
            "escalate",
            "clusterroles.rbac.authorization.k8s.io",
            None,
            None,
        ),
    ];
    let mut wrong = Vec::new();
    for (expected, questions) in [(true, &allowed), (false, &denied)] {
        for &(verb, resource, sub, namespace) in questions {
            if can_i(SERVICE_ACCOUNT, verb, resource, sub, namespace) != expected {
                wrong.push(format!(
                    "  {} {verb} {resource}{}{}",
                    if expected {
                        "CANNOT (must be able to)"
                    } else {
                        "CAN (must not)"
                    },
                    sub.map(|s| format!(" --subresource {s}"))
                        .unwrap_or_default(),
                    namespace.map(|n| format!(" in {n}")).unwrap_or_default(),
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "RBAC of deploy/ is wrong for {SERVICE_ACCOUNT}:\n{}",
        wrong.join("\n")
    );
}

/// Whether the operator binary knows a flag (flags other work adds, such as --leader-elect).
fn operator_has_flag(flag: &str) -> bool {
    let help = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&help.stdout).contains(flag)
}

/// The operator's log lines that report a refused request.
fn forbidden_lines(log: &str) -> Vec<&str> {
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

/// Deletes the test's ConfigMap in the shared operator namespace (TestEnv only cleans up its own namespace).
struct DeleteConfigMapOnDrop(String);

impl Drop for DeleteConfigMapOnDrop {
    fn drop(&mut self) {
        let _ = kubectl(&[
            "delete",
            "configmap",
            &self.0,
            "-n",
            NAMESPACE,
            "--ignore-not-found",
            "--wait=false",
        ]);
    }
}

/// The operator as a test runs it here, and the ConfigMap it writes in the shared operator namespace.
struct ScopedOperator {
    // Fields drop in this order: the process is killed before its ConfigMap is deleted (else it recreates it).
    process: OperatorProcess,
    configmap: String,
    _cleanup: DeleteConfigMapOnDrop,
}

/// The operator, impersonating `user`, scoped to the test's nodes and inventory, writing its ConfigMap
/// `gpu-node-status-<id>` in the operator's namespace.
fn start_operator_as(env: &TestEnv, user: &str, extra: &[&str]) -> ScopedOperator {
    let kubeconfig = impersonating_kubeconfig(user, &env.id);
    let mut args = env.operator_args("2s");
    let at = |flag: &str, args: &[String]| args.iter().position(|a| a == flag).unwrap() + 1;
    let i = at("--kubeconfig", &args);
    args[i] = kubeconfig.display().to_string();
    let i = at("--namespace", &args);
    args[i] = NAMESPACE.to_owned();
    let configmap = format!("gpu-node-status-{}", env.id);
    args.extend(["--configmap-name".to_owned(), configmap.clone()]);
    if operator_has_flag("--metrics-addr") && !args.iter().any(|a| a == "--metrics-addr") {
        // Tests run operators side by side: no fixed port.
        args.extend(["--metrics-addr".to_owned(), "127.0.0.1:0".to_owned()]);
    }
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    ScopedOperator {
        process: OperatorProcess::start(&env.id, &args),
        _cleanup: DeleteConfigMapOnDrop(configmap.clone()),
        configmap,
    }
}

/// Waits until the inventory reaches the home-lab numbers and the ConfigMap holds the four GPU nodes; on
/// timeout or exit, fails with the operator's log and the requests it was refused.
async fn wait_converged(
    env: &TestEnv,
    operator: &mut OperatorProcess,
    configmap: &str,
    user: &str,
) {
    let inventories: Api<GpuInventory> = Api::all(env.client.clone());
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client.clone(), NAMESPACE);
    let gpu_nodes: Vec<String> = ["nuc1", "nuc2", "omen", "omen2"]
        .iter()
        .map(|n| env.node_name(n))
        .collect();
    let started = Instant::now();
    let (mut inventory_ok, mut configmap_ok) = (false, false);
    loop {
        if !inventory_ok {
            let inv = inventories
                .get_opt(&env.inventory_name())
                .await
                .expect("get GpuInventory");
            inventory_ok = inv.and_then(|i| i.status).is_some_and(|s| is_homelab(&s));
        }
        if !configmap_ok {
            let cm = configmaps.get_opt(configmap).await.expect("get ConfigMap");
            let data = cm.and_then(|c| c.data).unwrap_or_default();
            configmap_ok =
                gpu_nodes.iter().all(|n| data.contains_key(n)) && data.len() == gpu_nodes.len() + 1;
        }
        if inventory_ok && configmap_ok {
            return;
        }
        let exited = operator.wait_exit(Duration::from_millis(60));
        if exited.is_some() || started.elapsed() > CONVERGE {
            let log = operator.log();
            let refused = forbidden_lines(&log);
            panic!(
                "the operator running as {user} did not converge ({}; inventory {}, ConfigMap {NAMESPACE}/{configmap} {}).\n\
                 {}\n--- operator log ({}) ---\n{log}",
                match exited {
                    Some(code) => format!("it exited with {code:?}"),
                    None => format!("{CONVERGE:?} passed"),
                },
                if inventory_ok {
                    "converged"
                } else {
                    "not converged"
                },
                if configmap_ok {
                    "converged"
                } else {
                    "not converged"
                },
                if refused.is_empty() {
                    "No refused request in its log.".to_owned()
                } else {
                    format!(
                        "The permissions of deploy/ are insufficient; refused requests:\n{}",
                        refused.join("\n")
                    )
                },
                operator.log_path.display(),
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_operator_converges_with_nothing_but_the_deploy_rbac() {
    let env = TestEnv::new("deploy-sa").await;
    apply_deploy();
    env.load_fixture("homelab-nodes.yaml").await;
    // With leader election as in the Deployment (Lease gpu-inventory-operator in gpu-inventory-system): the
    // Lease RBAC is exercised too. A short lease so that a lease left by an earlier, killed run expires fast.
    let leader_elect: &[&str] = &["--leader-elect", "--lease-duration", "5s"];
    let mut scoped = start_operator_as(&env, SERVICE_ACCOUNT, leader_elect);
    wait_converged(
        &env,
        &mut scoped.process,
        &scoped.configmap,
        SERVICE_ACCOUNT,
    )
    .await;
    let operator = &mut scoped.process;

    // A few requeues (2 s) and node-change reactions later, still nothing refused: least privilege is
    // sufficient for the steady state too, not only for the first write.
    env.set_ready(&env.node_name("nuc1"), "True").await;
    env.wait_inventory(
        &env.inventory_name(),
        CONVERGE,
        "nuc1 Ready in the inventory",
        |s| s.ready_gpu_nodes == 1,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let log = operator.log();
    let refused = forbidden_lines(&log);
    assert!(
        refused.is_empty(),
        "the operator running as {SERVICE_ACCOUNT} was refused requests (deploy/ RBAC too narrow):\n{}\n--- log ---\n{log}",
        refused.join("\n")
    );
    assert!(
        operator.wait_exit(Duration::from_millis(60)).is_none(),
        "the operator exited:\n{log}"
    );
    let lease = kubectl(&[
        "get",
        "lease",
        "gpu-inventory-operator",
        "-n",
        NAMESPACE,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    assert!(
        !String::from_utf8_lossy(&lease.stdout).trim().is_empty(),
        "the operator holds the Lease gpu-inventory-operator in {NAMESPACE}: {}",
        String::from_utf8_lossy(&lease.stderr)
    );

    // A clean stop (SIGTERM, as the kubelet does) needs no further permission either.
    operator.signal("TERM");
    let code = operator.wait_exit(Duration::from_secs(20));
    let log = operator.log();
    assert_eq!(
        code,
        Some(Some(0)),
        "the operator stops cleanly on SIGTERM:\n{log}"
    );
    assert!(
        forbidden_lines(&log).is_empty(),
        "refused requests while stopping:\n{log}"
    );
}

/// A service account of the test's own, bound like the operator's but without the CRD-write role.
async fn service_account_without_crd_write(env: &TestEnv) -> (String, impl Drop) {
    let name = env.id.clone();
    let client = env.client.clone();
    let labels = json!({ TEST_LABEL: env.id });
    let sa: ServiceAccount = serde_json::from_value(
        json!({ "metadata": { "name": name, "namespace": NAMESPACE, "labels": labels } }),
    )
    .unwrap();
    Api::<ServiceAccount>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &sa)
        .await
        .expect("create the test's service account");
    let subjects = json!([{ "kind": "ServiceAccount", "name": name, "namespace": NAMESPACE }]);
    let crb: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "gpu-inventory-operator" },
        "subjects": subjects,
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &crb)
        .await
        .expect("create ClusterRoleBinding");
    let rb: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": NAMESPACE, "labels": labels },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpu-inventory-operator" },
        "subjects": subjects,
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(client.clone(), NAMESPACE)
        .create(&PostParams::default(), &rb)
        .await
        .expect("create RoleBinding");
    let events_rb: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": "default", "labels": labels },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gpu-inventory-operator-events" },
        "subjects": subjects,
    }))
    .unwrap();
    Api::<RoleBinding>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &events_rb)
        .await
        .expect("create RoleBinding for events");

    struct Unbind(String);
    impl Drop for Unbind {
        fn drop(&mut self) {
            let _ = kubectl(&[
                "delete",
                "clusterrolebinding",
                &self.0,
                "--ignore-not-found",
                "--wait=false",
            ]);
            let _ = kubectl(&[
                "delete",
                "rolebinding,serviceaccount",
                &self.0,
                "-n",
                NAMESPACE,
                "--ignore-not-found",
                "--wait=false",
            ]);
            let _ = kubectl(&[
                "delete",
                "rolebinding",
                &self.0,
                "-n",
                "default",
                "--ignore-not-found",
                "--wait=false",
            ]);
        }
    }
    (
        format!("system:serviceaccount:{NAMESPACE}:{name}"),
        Unbind(name),
    )
}

#[tokio::test]
async fn without_the_crd_write_role_skip_crd_install_converges_and_self_install_is_refused() {
    let env = TestEnv::new("deploy-nocrd").await;
    apply_deploy(); // the CRD exists (deploy/crd.yaml), installed by the admin
    let (user, _unbind) = service_account_without_crd_write(&env).await;
    env.load_fixture("homelab-nodes.yaml").await;
    assert!(!can_i(
        &user,
        "patch",
        &format!("customresourcedefinitions/{CRD_NAME}"),
        None,
        None
    ));

    // Self-install without the role: refused, and the operator says so and exits non-zero.
    let mut refused = start_operator_as(&env, &user, &[]);
    let code = refused.process.wait_exit(Duration::from_secs(30));
    let log = refused.process.log();
    assert!(
        matches!(code, Some(Some(c)) if c != 0),
        "without CRD write access the operator must exit non-zero (got {code:?}):\n{log}"
    );
    assert!(
        log.contains(CRD_NAME) && log.to_ascii_lowercase().contains("forbidden"),
        "the operator's error names the CRD and the refusal:\n{log}"
    );

    // --skip-crd-install: needs only to read the CRD.
    let mut operator = start_operator_as(&env, &user, &["--skip-crd-install"]);
    wait_converged(&env, &mut operator.process, &operator.configmap, &user).await;
    let log = operator.process.log();
    assert!(
        forbidden_lines(&log).is_empty(),
        "refused requests with --skip-crd-install:\n{log}"
    );
}
