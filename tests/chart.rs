//! The Helm chart `charts/gpu-inventory-operator/`: it lints, its defaults render the objects of deploy/ (one
//! source of truth), every feature renders, and the real API server accepts what it renders. Installing it:
//! tests/chart_install.rs.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::helm::{
    HELM_STANDARD_LABELS, all_features_values, by_key, chart_dir, differences, helm, helm_ok,
    normalise, objects, render,
};
use common::rbac::{CRD_NAME, kubectl};
use common::{TestEnv, kubeconfig_path};
use serde_json::{Value, json};

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn helm_lint_passes_for_the_defaults_and_every_feature() {
    let chart = chart_dir();
    let chart = chart.to_str().unwrap();
    helm_ok(&["lint", "--strict", chart]);
    let values = all_features_values();
    helm_ok(&[
        "lint",
        "--strict",
        chart,
        "--values",
        values.to_str().unwrap(),
    ]);
    // The schema refuses what the operator would refuse at start-up.
    let out = helm(&["lint", chart, "--set", "operator.logFormat=xml"]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stdout).contains("logFormat"),
        "values.schema.json lets operator.logFormat=xml through:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A topology label is one key: a comma would split it in GPUINV_TOPOLOGY_LABELS.
    let out = helm(&[
        "lint",
        chart,
        "--set-json",
        r#"operator.topologyLabels=["example.com/rack,example.com/row"]"#,
    ]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stdout).contains("topologyLabels"),
        "values.schema.json lets a comma into operator.topologyLabels:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = helm(&[
        "template",
        "x",
        chart,
        "--set",
        "leaderElection.enabled=false",
    ]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("needs leaderElection.enabled"),
        "two replicas without leader election must not render"
    );
}

#[test]
fn the_chart_files_are_deploys() {
    for (chart_file, deploy_file) in [
        ("files/crd.yaml", "deploy/crd.yaml"),
        (
            "files/prometheus-rule.yaml",
            "deploy/monitoring/prometheus-rule.yaml",
        ),
        (
            "files/grafana-dashboard.json",
            "deploy/monitoring/grafana-dashboard.json",
        ),
    ] {
        let ours = std::fs::read(chart_dir().join(chart_file)).unwrap();
        let theirs = std::fs::read(repo(deploy_file)).unwrap();
        assert!(
            ours == theirs,
            "charts/gpu-inventory-operator/{chart_file} differs from {deploy_file}: run `make chart-files` \
             (deploy/ is the source; the chart packages copies of these three files)"
        );
    }
}

/// `kubectl kustomize deploy/`.
fn kustomize(dir: &str) -> Vec<Value> {
    let out = Command::new("kubectl")
        .args(["kustomize", repo(dir).to_str().unwrap()])
        .output()
        .expect("run kubectl kustomize");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    objects(&String::from_utf8_lossy(&out.stdout))
}

#[test]
fn helm_template_renders_the_objects_of_deploy_by_default() {
    // Release gpu-inventory-operator in gpu-inventory-system: the names and namespace of deploy/.
    let chart = by_key(objects(&render(
        "gpu-inventory-operator",
        "gpu-inventory-system",
        None,
        &[],
    )));
    let mut deploy = by_key(kustomize("deploy"));
    // The one object only deploy/ has: Helm charts leave the release namespace to `helm install
    // --create-namespace` (or `namespace.create=true`, tested below with every feature).
    let namespace = deploy
        .remove("Namespace//gpu-inventory-system")
        .expect("deploy/ creates its namespace");
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    let (chart_keys, deploy_keys): (Vec<_>, Vec<_>) =
        (chart.keys().collect(), deploy.keys().collect());
    assert_eq!(
        chart_keys, deploy_keys,
        "the chart's default objects are not deploy/'s"
    );
    let mut wrong = Vec::new();
    for (key, ours) in &chart {
        let ours = normalise(ours.clone());
        let mut theirs = normalise(deploy[key].clone());
        if key.starts_with("CustomResourceDefinition/") {
            // The chart's CRD also carries `helm.sh/resource-policy: keep` (crds.keep) and the part-of label.
            assert_eq!(
                ours["metadata"]["annotations"]["helm.sh/resource-policy"], "keep",
                "{key}"
            );
            theirs["metadata"]["annotations"] = json!({ "helm.sh/resource-policy": "keep" });
        }
        for d in differences(&ours, &theirs, 20) {
            wrong.push(format!("  {key}{d}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "helm template (default values) and kubectl kustomize deploy/ differ (chart != deploy/) beyond the \
         normalised {HELM_STANDARD_LABELS:?}:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_feature_renders_and_the_monitoring_is_deploys() {
    let values = all_features_values();
    let rendered = by_key(objects(&render("gpuinv", "gpu-inv", Some(&values), &[])));
    let get = |key: &str| {
        rendered
            .get(key)
            .unwrap_or_else(|| panic!("{key} not rendered; rendered: {:?}", rendered.keys()))
    };
    get("Namespace//gpu-inv");
    assert_eq!(
        get(&format!("CustomResourceDefinition//{CRD_NAME}"))["metadata"]["annotations"]["helm.sh/resource-policy"],
        "keep"
    );
    // selfInstall false: no CRD-write role, and the operator told so.
    assert!(!rendered.contains_key("ClusterRole//gpuinv-crd-install"));
    let deployment = get("Deployment/gpu-inv/gpuinv");
    let args = deployment["spec"]["template"]["spec"]["containers"][0]["args"].clone();
    for arg in [
        "--skip-crd-install",
        "--lease-name=gpuinv",
        "--metrics-addr=0.0.0.0:9090",
        "--node-label-selector=nvidia.com/gpu.present=true",
        "--startup-timeout=90s",
        "--prometheus-url=https://thanos-querier.openshift-monitoring.svc:9091",
        "--prometheus-bearer-token-file=/var/run/secrets/gpu-inventory/prometheus-token/token",
        "--prometheus-ca-file=/var/run/secrets/gpu-inventory/prometheus-ca/service-ca.crt",
        "--idle-window=1h",
        "--utilization-selector=cluster=\"prod-a\"",
        "--cluster-property=gpus.prod-a.example.com",
    ] {
        assert!(
            args.as_array().unwrap().contains(&json!(arg)),
            "{arg} in {args}"
        );
    }
    // The ClusterRole grants the ClusterProperty by the name the flag names, and only it.
    let role = get("ClusterRole//gpuinv");
    let property = role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["apiGroups"] == json!(["about.k8s.io"]))
        .expect("a ClusterProperty rule");
    assert_eq!(
        property["resourceNames"],
        json!(["gpus.prod-a.example.com"])
    );
    // The token's Secret and the CA's ConfigMap are mounted where those flags read them.
    let pod = &deployment["spec"]["template"]["spec"];
    let volumes = pod["volumes"].to_string();
    for part in [
        r#""secretName":"prometheus-reader""#,
        r#""configMap":{"name":"prometheus-ca"}"#,
    ] {
        assert!(volumes.contains(part), "{part} in {volumes}");
    }
    let mounts = pod["containers"][0]["volumeMounts"].to_string();
    assert!(
        mounts.contains("/var/run/secrets/gpu-inventory/prometheus-token"),
        "{mounts}"
    );
    let env = deployment["spec"]["template"]["spec"]["containers"][0]["env"].clone();
    let topology = env
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "GPUINV_TOPOLOGY_LABELS")
        .unwrap_or_else(|| panic!("no GPUINV_TOPOLOGY_LABELS in {env}"));
    assert_eq!(topology["value"], "example.com/rack,example.com/row");
    let role = get("Role/gpu-inv/gpuinv");
    assert_eq!(role["rules"][2]["resourceNames"], json!(["gpuinv"]));
    assert_eq!(
        get("ServiceAccount/gpu-inv/gpuinv-operator")["metadata"]["annotations"]["example.com/owner"],
        "gpu-platform"
    );

    // The monitoring objects: deploy/monitoring/'s, with the chart's names and extras.
    let monitoring = by_key(kustomize("deploy/monitoring"));
    let rule = get("PrometheusRule/gpu-inv/gpuinv");
    let deploy_rule = &monitoring["PrometheusRule/gpu-inventory-system/gpu-inventory-operator"];
    let groups = rule["spec"]["groups"].as_array().unwrap();
    assert_eq!(
        json!(groups[..groups.len() - 1]),
        deploy_rule["spec"]["groups"],
        "the chart's alerts are deploy/monitoring/'s"
    );
    assert_eq!(
        groups.last().unwrap()["rules"][0]["alert"],
        "GpuInventoryOperatorDown"
    );
    assert_eq!(
        rule["metadata"]["labels"]["release"],
        "kube-prometheus-stack"
    );
    let monitor = get("ServiceMonitor/gpu-inv/gpuinv");
    let deploy_monitor = &monitoring["ServiceMonitor/gpu-inventory-system/gpu-inventory-operator"];
    let mut endpoint = monitor["spec"]["endpoints"][0].clone();
    assert_eq!(endpoint["scrapeTimeout"], "10s");
    endpoint["interval"] = json!("30s");
    endpoint.as_object_mut().unwrap().remove("scrapeTimeout");
    assert_eq!(endpoint, deploy_monitor["spec"]["endpoints"][0]);
    let dashboard = get("ConfigMap/gpu-inv/gpuinv-dashboard");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        dashboard["metadata"]["annotations"]["grafana_folder"],
        "GPUs"
    );
    let json_text = dashboard["data"]["gpu-inventory-operator.json"]
        .as_str()
        .unwrap();
    let file = std::fs::read_to_string(repo("deploy/monitoring/grafana-dashboard.json")).unwrap();
    assert_eq!(json_text.trim_end(), file.trim_end());
}

/// Creates the monitoring CRDs' stand-ins unless the cluster has the real ones.
fn ensure_monitoring_crds() {
    for crd in [
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
    ] {
        if !kubectl(&["get", "crd", crd]).status.success() {
            let fixture = common::fixture_path("prometheus-operator-crds.yaml");
            let out = kubectl(&["create", "-f", &fixture]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() || stderr.contains("AlreadyExists"),
                "creating the monitoring CRDs: {stderr}"
            );
        }
        let out = kubectl(&[
            "wait",
            "--for=condition=Established",
            "--timeout=30s",
            &format!("crd/{crd}"),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// `kubectl apply --dry-run=server --validate=strict -f -` of a manifest.
fn server_dry_run(manifest: &str) -> std::process::Output {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(["apply", "--dry-run=server", "--validate=strict", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(manifest.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[tokio::test]
async fn the_api_server_accepts_what_the_chart_renders() {
    let env = TestEnv::new("chart-dry-run").await;
    ensure_monitoring_crds();
    let values = all_features_values();
    for (what, manifest) in [
        (
            "default values",
            render("gpu-inventory-operator", &env.namespace, None, &[]),
        ),
        (
            "ci/all-features-values.yaml",
            render("gpuinv", &env.namespace, Some(&values), &[]),
        ),
    ] {
        let out = server_dry_run(&manifest);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "the API server refused the chart's objects ({what}):\n{}{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        let accepted = stdout
            .lines()
            .filter(|l| l.contains("(server dry run)"))
            .count();
        assert_eq!(
            accepted,
            objects(&manifest).len(),
            "every object of {what} is accepted:\n{stdout}"
        );
    }
}

#[test]
fn no_helm_standard_label_is_in_deploy() {
    // The normalisation above removes these labels from the chart's objects only because deploy/ has none of
    // them: were one added to deploy/, the comparison would hide a real difference.
    let deploy = serde_json::to_string(&kustomize("deploy")).unwrap();
    for label in HELM_STANDARD_LABELS {
        assert!(!deploy.contains(label), "deploy/ uses {label}");
    }
}
