//! `helm install` of charts/gpu-inventory-operator/ into the test cluster: the release's service account has
//! exactly deploy/'s least privilege, which is enough for the operator (run out of cluster with the installed
//! Deployment's own arguments, impersonating that account) to converge; the CRD is installed and kept.

mod common;

use std::time::Duration;

use common::TestEnv;
use common::helm::{chart_dir, helm, helm_ok};
use common::rbac::{
    CRD_NAME, Installation, assert_least_privilege, forbidden_lines, kubectl, start_operator_as,
    wait_converged,
};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::Api;

/// Uninstalls a release on drop (the cluster-scoped objects outlive the test's namespace otherwise).
struct Uninstall(String, String);

impl Drop for Uninstall {
    fn drop(&mut self) {
        let _ = helm(&["uninstall", &self.0, "--namespace", &self.1, "--wait"]);
    }
}

#[tokio::test]
async fn helm_install_gives_least_privilege_and_the_operator_converges_with_it() {
    let env = TestEnv::new("chart-install").await;
    let release = env.id.clone();
    // The CRD is cluster-wide and other tests' operators installed it already: this release leaves it to the
    // operator's self-install (the chart's CRD handling is the next test's).
    let chart = chart_dir();
    let installed = helm_ok(&[
        "install",
        &release,
        chart.to_str().unwrap(),
        "--namespace",
        &env.namespace,
        "--set",
        "crds.install=false",
    ]);
    let _uninstall = Uninstall(release.clone(), env.namespace.clone());
    eprintln!("helm install:\n{installed}");
    assert!(installed.contains("STATUS: deployed"), "{installed}");
    assert!(
        installed.contains("kubectl get gpuinventory"),
        "NOTES.txt: {installed}"
    );
    let fullname = format!("{release}-gpu-inventory-operator");
    let install = Installation {
        namespace: env.namespace.clone(),
        service_account: fullname.clone(),
        lease: fullname.clone(),
    };
    assert_least_privilege(&install, "the chart");

    // The operator with the arguments of the installed Deployment (but its own, free metrics port), as the
    // chart's service account.
    let deployment = Api::<Deployment>::namespaced(env.client.clone(), &env.namespace)
        .get(&fullname)
        .await
        .expect("the chart's Deployment");
    let container = &deployment.spec.template.spec.unwrap().containers[0];
    let mut args: Vec<String> = container.args.clone().unwrap_or_default();
    assert_eq!(args.first().map(String::as_str), Some("run"));
    args.retain(|a| a != "run" && !a.starts_with("--metrics-addr"));
    args.extend(["--lease-duration".into(), "5s".into()]);
    let extra: Vec<&str> = args.iter().map(String::as_str).collect();
    env.load_fixture("homelab-nodes.yaml").await;
    let user = install.user();
    let mut operator = start_operator_as(&env, &user, &env.namespace, &extra);
    wait_converged(&env, &mut operator, &env.namespace, &user, "the chart").await;
    env.set_ready(&env.node_name("nuc1"), "True").await;
    env.wait_inventory(
        &env.inventory_name(),
        Duration::from_secs(60),
        "nuc1 Ready",
        |s| s.ready_gpu_nodes == 1,
    )
    .await;
    let lease = kubectl(&[
        "get",
        "lease",
        &fullname,
        "-n",
        &env.namespace,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    assert!(
        !String::from_utf8_lossy(&lease.stdout).trim().is_empty(),
        "the operator holds the chart's Lease {fullname}"
    );
    operator.process.signal("TERM");
    let code = operator.process.wait_exit(Duration::from_secs(20));
    let log = operator.process.log();
    assert_eq!(code, Some(Some(0)), "clean stop on SIGTERM:\n{log}");
    let refused = forbidden_lines(&log);
    assert!(
        refused.is_empty(),
        "refused requests as {user}:\n{}",
        refused.join("\n")
    );
}

#[tokio::test]
async fn helm_installs_the_crd_and_keeps_it_on_uninstall() {
    let env = TestEnv::new("chart-crd").await;
    let release = env.id.clone();
    // The CRD exists when other tests ran first: let this release adopt it (what Helm requires of an object it
    // did not create), as a user adopting an operator installed by kubectl would.
    for crd_name in gpu_inventory_operator::crd::CRD_NAMES {
        if !kubectl(&["get", "crd", crd_name]).status.success() {
            continue;
        }
        for (verb, pair) in [
            ("annotate", format!("meta.helm.sh/release-name={release}")),
            (
                "annotate",
                format!("meta.helm.sh/release-namespace={}", env.namespace),
            ),
            ("label", "app.kubernetes.io/managed-by=Helm".to_owned()),
        ] {
            let out = kubectl(&[verb, "crd", crd_name, &pair, "--overwrite"]);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let chart = chart_dir();
    helm_ok(&[
        "install",
        &release,
        chart.to_str().unwrap(),
        "--namespace",
        &env.namespace,
    ]);
    let uninstall = Uninstall(release.clone(), env.namespace.clone());
    let crd = |field: &str| {
        let out = kubectl(&["get", "crd", CRD_NAME, "-o", &format!("jsonpath={field}")]);
        assert!(
            out.status.success(),
            "the CRD exists: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let uid = crd("{.metadata.uid}");
    assert_eq!(
        crd("{.metadata.annotations.meta\\.helm\\.sh/release-name}"),
        release
    );
    assert_eq!(
        crd("{.metadata.annotations.helm\\.sh/resource-policy}"),
        "keep"
    );
    let manifest = helm_ok(&["get", "manifest", &release, "--namespace", &env.namespace]);
    assert!(
        manifest.contains("kind: CustomResourceDefinition"),
        "the release holds the CRD"
    );

    drop(uninstall);
    assert!(
        helm(&["status", &release, "--namespace", &env.namespace])
            .status
            .code()
            != Some(0),
        "the release is gone"
    );
    assert_eq!(
        crd("{.metadata.uid}"),
        uid,
        "helm uninstall kept the CRD (same object)"
    );
}
