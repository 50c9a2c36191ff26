//! `deploy/` against a real API server: the manifests apply, the CRD in them is the one the binary prints,
//! the service account can do what the operator does and nothing else, and that is enough for the operator
//! (run out of cluster, impersonating the service account) to converge on the home-lab nodes.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use common::rbac::{
    CRD_NAME, Installation, assert_least_privilege, can_i, forbidden_lines, kubectl,
    start_operator_as, wait_converged,
};
use common::{LOAD_ALLOWANCE, TEST_LABEL, TestEnv};
use gpu_inventory_operator::publish::crd::SPEC_DIGEST_ANNOTATION;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The operator's namespace and service account, as in deploy/.
const NAMESPACE: &str = "gpu-inventory-system";
const SERVICE_ACCOUNT: &str = "system:serviceaccount:gpu-inventory-system:gpu-inventory-operator";

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy")
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

/// deploy/'s installation of the operator.
fn deploy_installation() -> Installation {
    Installation {
        namespace: NAMESPACE.to_owned(),
        service_account: "gpu-inventory-operator".to_owned(),
        lease: "gpu-inventory-operator".to_owned(),
    }
}

#[tokio::test]
async fn the_service_account_can_do_what_the_operator_does_and_nothing_else() {
    let _cluster = common::client().await; // a clear message when there is no cluster
    apply_deploy();
    assert_least_privilege(&deploy_installation(), "deploy/");
}

#[tokio::test]
async fn the_operator_converges_with_nothing_but_the_deploy_rbac() {
    let env = TestEnv::new("deploy-sa").await;
    apply_deploy();
    env.load_fixture("homelab-nodes.yaml").await;
    // With leader election as in the Deployment (Lease gpu-inventory-operator in gpu-inventory-system): the
    // Lease RBAC is exercised too. A short lease so that a lease left by an earlier, killed run expires fast.
    let leader_elect: &[&str] = &["--leader-elect", "--lease-duration", "5s"];
    let mut scoped = start_operator_as(&env, SERVICE_ACCOUNT, NAMESPACE, leader_elect);
    wait_converged(&env, &mut scoped, NAMESPACE, SERVICE_ACCOUNT, "deploy/").await;
    let operator = &mut scoped.process;

    // A few requeues and node-change reactions later, still nothing refused: least privilege is sufficient
    // for the steady state too, not only for the first write.
    let periods = operator.periods();
    env.set_ready(&env.node_name("nuc1"), "True").await;
    env.wait_inventory(
        &env.inventory_name(),
        periods.follow(),
        "nuc1 Ready in the inventory",
        |s| s.ready_gpu_nodes == 1,
    )
    .await;
    // The quiet period covers three periodic passes (--requeue), each with its writes and Lease renewals.
    tokio::time::sleep(3 * periods.requeue).await;
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

    // A clean stop (SIGTERM, as the kubelet does) needs no further permission either. Its shutdown (the Lease
    // released) is one reaction.
    operator.signal("TERM");
    let code = operator.wait_exit(LOAD_ALLOWANCE);
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
async fn without_crd_write_a_current_crd_or_skip_crd_install_converges_an_install_is_refused() {
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

    // Self-install where the CRD must change, without the role: refused, and the operator says so and exits
    // non-zero. The CRD is made out of date (its digest annotation removed) just before; an operator of
    // another test may put it back in between, so this is tried a few times.
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let mut refused = None;
    for _ in 0..5 {
        let unmark = json!({ "metadata": { "annotations": { SPEC_DIGEST_ANNOTATION: null } } });
        crds.patch(CRD_NAME, &PatchParams::default(), &Patch::Merge(&unmark))
            .await
            .expect("remove the CRD's digest annotation");
        let mut attempt = start_operator_as(&env, &user, NAMESPACE, &[]);
        // It exits at the refused install, in its start-up; the exit itself is one more reaction.
        let exit = attempt.process.periods().start_up().limit() + LOAD_ALLOWANCE;
        let code = attempt.process.wait_exit(exit);
        let log = attempt.process.log();
        if !log.contains("not applied") {
            refused = Some((code, log));
            break;
        }
    }
    let (code, log) = refused.expect("the CRD stayed out of date for one start in five");
    assert!(
        matches!(code, Some(Some(c)) if c != 0),
        "without CRD write access the operator must exit non-zero (got {code:?}):\n{log}"
    );
    assert!(
        log.contains(CRD_NAME) && log.to_ascii_lowercase().contains("forbidden"),
        "the operator's error names the CRD and the refusal:\n{log}"
    );
    // Put the digest back, as deploy/crd.yaml has it.
    let ours = gpu_inventory_operator::publish::crd::crd();
    let digest = &ours.metadata.annotations.as_ref().unwrap()[SPEC_DIGEST_ANNOTATION];
    let mark = json!({ "metadata": { "annotations": { SPEC_DIGEST_ANNOTATION: digest } } });
    crds.patch(CRD_NAME, &PatchParams::default(), &Patch::Merge(&mark))
        .await
        .expect("put the CRD's digest annotation back");

    // Where the CRD already is what this version installs, self-install needs no write: it converges.
    let mut operator = start_operator_as(&env, &user, NAMESPACE, &[]);
    wait_converged(&env, &mut operator, NAMESPACE, &user, "deploy/").await;
    let log = operator.process.log();
    assert!(
        log.contains("CRD already installed as this version defines it; not applied"),
        "{log}"
    );
    assert!(forbidden_lines(&log).is_empty(), "refused requests:\n{log}");
    drop(operator);

    // --skip-crd-install: needs only to read the CRD.
    let mut operator = start_operator_as(&env, &user, NAMESPACE, &["--skip-crd-install"]);
    wait_converged(&env, &mut operator, NAMESPACE, &user, "deploy/").await;
    let log = operator.process.log();
    assert!(
        forbidden_lines(&log).is_empty(),
        "refused requests with --skip-crd-install:\n{log}"
    );
}
