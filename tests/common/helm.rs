//! Helm for the chart's tests: the binary (built once from its pinned Go module by
//! `hack/build-control-plane.sh helm`), rendering, and the objects of a rendered manifest, normalised so
//! that the chart's objects and deploy/'s can be compared.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::built_tools::cached_tool;

use serde_json::Value;

use super::cluster_access::kubeconfig_path;

/// The chart's directory.
pub fn chart_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("charts/gpu-inventory-operator")
}

/// The committed values file with every feature on.
pub fn all_features_values() -> PathBuf {
    chart_dir().join("ci/all-features-values.yaml")
}

/// The helm binary: `$HELM` when set, else the one `hack/build-control-plane.sh helm` builds (once, cached in
/// ~/.cache/gpu-inventory-operator/bin). Panics with the script's error when it cannot be had.
pub fn helm_binary() -> PathBuf {
    cached_tool("helm", "HELM", "a helm v3 binary", "the chart tests")
}

/// `helm <args>` against the test cluster.
pub fn helm(args: &[&str]) -> Output {
    Command::new(helm_binary())
        .arg("--kubeconfig")
        .arg(kubeconfig_path())
        .args(args)
        .output()
        .expect("run helm")
}

/// `helm <args>` that must succeed; its stdout.
pub fn helm_ok(args: &[&str]) -> String {
    let out = helm(args);
    assert!(
        out.status.success(),
        "helm {} failed ({}):\n{}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `helm template <release> <chart> --namespace <ns> [-f values] [extra]`: the manifest.
pub fn render(release: &str, namespace: &str, values: Option<&Path>, extra: &[&str]) -> String {
    let chart = chart_dir();
    let mut args = vec![
        "template",
        release,
        chart.to_str().unwrap(),
        "--namespace",
        namespace,
    ];
    let values = values.map(|v| v.display().to_string());
    if let Some(values) = &values {
        args.extend(["--values", values]);
    }
    args.extend(extra);
    helm_ok(&args)
}

/// The objects of a multi-document manifest (empty documents dropped).
pub fn objects(manifest: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(manifest)
        .unwrap_or_else(|e| panic!("the manifest is not YAML: {e}\n{manifest}"));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// `kind/namespace/name` of an object.
pub fn key(object: &Value) -> String {
    let meta = &object["metadata"];
    format!(
        "{}/{}/{}",
        object["kind"].as_str().unwrap_or("?"),
        meta["namespace"].as_str().unwrap_or(""),
        meta["name"].as_str().unwrap_or("?")
    )
}

/// The objects by [`key`].
pub fn by_key(objects: Vec<Value>) -> BTreeMap<String, Value> {
    objects.into_iter().map(|o| (key(&o), o)).collect()
}

/// The labels Helm's conventions add and kustomize's deploy/ does not have: `helm.sh/chart`,
/// `app.kubernetes.io/managed-by` (Helm), `app.kubernetes.io/version` (the chart's appVersion) and
/// `app.kubernetes.io/instance` (the release, which `helm create`'s selectors include so that two releases
/// never select each other's pods).
pub const HELM_STANDARD_LABELS: [&str; 4] = [
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/version",
    "app.kubernetes.io/instance",
];

/// Normalises an object for comparison with deploy/'s:
/// - [`HELM_STANDARD_LABELS`] are removed wherever labels appear: `metadata.labels`, the pod template's labels,
///   and the label selectors (Deployment and PodDisruptionBudget `selector.matchLabels`, Service
///   `spec.selector`, anti-affinity `labelSelector.matchLabels`), where helm's `instance` label also sits;
/// - numbers compare by value: helm's `fromYaml`/`toYaml` turns the CRD's `minimum: 0.0` into `0`;
/// - `null` map values are dropped (a YAML key written without a value).
///
/// Nothing else: names, namespaces, annotations, args, env, probes, security contexts, RBAC rules and the CRD
/// must be equal.
pub fn normalise(mut object: Value) -> Value {
    strip_helm_labels(&mut object);
    numbers_and_nulls(&mut object);
    object
}

fn strip_helm_labels(value: &mut Value) {
    if let Value::Object(map) = value {
        for (field, inner) in map.iter_mut() {
            let is_label_map = matches!(field.as_str(), "labels" | "matchLabels")
                || (field == "selector" && inner.get("matchLabels").is_none());
            if is_label_map && let Value::Object(labels) = inner {
                for label in HELM_STANDARD_LABELS {
                    labels.remove(label);
                }
            }
            strip_helm_labels(inner);
        }
    } else if let Value::Array(items) = value {
        items.iter_mut().for_each(strip_helm_labels);
    }
}

fn numbers_and_nulls(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9e15
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(numbers_and_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(numbers_and_nulls),
        _ => {}
    }
}

/// Where two JSON values differ, as `path: left != right` lines (at most `limit`).
pub fn differences(left: &Value, right: &Value, limit: usize) -> Vec<String> {
    let mut out = Vec::new();
    diff_into("", left, right, &mut out, limit);
    out
}

fn diff_into(path: &str, left: &Value, right: &Value, out: &mut Vec<String>, limit: usize) {
    if out.len() >= limit || left == right {
        return;
    }
    match (left, right) {
        (Value::Object(a), Value::Object(b)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for k in keys {
                let (l, r) = (
                    a.get(k).unwrap_or(&Value::Null),
                    b.get(k).unwrap_or(&Value::Null),
                );
                diff_into(&format!("{path}.{k}"), l, r, out, limit);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (l, r)) in a.iter().zip(b).enumerate() {
                diff_into(&format!("{path}[{i}]"), l, r, out, limit);
            }
        }
        _ => out.push(format!("{path}: {left} != {right}")),
    }
}
