//! The Grafana dashboard `deploy/monitoring/grafana-dashboard.json`: it is a well-formed Grafana dashboard
//! model, and every metric its panels query (and every label they select or group by) is one a running
//! operator exports, read from a real `/metrics` scrape on the test cluster.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use common::kueue::quota_objects::QuotaObjects;
use common::prometheus::{self, dcgm_labels};
use common::rbac::kubectl;
use common::{Deadline, TEST_LABEL, TestEnv, impersonating_kubeconfig, wait_for};
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

fn dashboard() -> Value {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/monitoring/grafana-dashboard.json");
    let text = std::fs::read_to_string(&path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Every panel, those inside rows included.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        out.push(panel);
        if let Some(inner) = panel["panels"].as_array() {
            out.extend(inner);
        }
    }
    out
}

/// `(panel title, expr)` of every query.
fn queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in panels(dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default().to_owned();
            out.push((panel["title"].as_str().unwrap_or("?").to_owned(), expr));
        }
    }
    out
}

#[test]
fn the_dashboard_is_a_grafana_dashboard_model() {
    let d = dashboard();
    assert!(
        d["schemaVersion"].as_u64().is_some_and(|v| v >= 36),
        "schemaVersion"
    );
    for field in ["title", "uid"] {
        assert!(d[field].as_str().is_some_and(|s| !s.is_empty()), "{field}");
    }
    let variables = d["templating"]["list"].as_array().expect("templating.list");
    let datasource = variables
        .iter()
        .find(|v| v["type"] == "datasource")
        .expect("a datasource variable");
    assert_eq!(datasource["query"], "prometheus");
    let ds_ref = json!({ "type": "prometheus", "uid": format!("${{{}}}", datasource["name"].as_str().unwrap()) });
    let mut ids = BTreeSet::new();
    let mut cells: BTreeMap<(u64, u64), String> = BTreeMap::new();
    for panel in panels(&d) {
        let title = panel["title"].as_str().expect("every panel has a title");
        let id = panel["id"]
            .as_u64()
            .unwrap_or_else(|| panic!("{title}: integer id"));
        assert!(ids.insert(id), "panel id {id} ({title}) is not unique");
        let known = ["row", "stat", "timeseries", "table", "bargauge", "gauge"];
        let kind = panel["type"].as_str().unwrap_or_default();
        assert!(known.contains(&kind), "{title}: panel type {kind:?}");
        let pos = &panel["gridPos"];
        let [x, y, w, h] = ["x", "y", "w", "h"].map(|k| pos[k].as_u64().expect("gridPos"));
        assert!(w > 0 && h > 0 && x + w <= 24, "{title}: gridPos {pos}");
        // No two panels share a grid cell.
        for cx in x..x + w {
            for cy in y..y + h {
                if let Some(other) = cells.insert((cx, cy), title.to_owned()) {
                    panic!("panels {other:?} and {title:?} overlap at ({cx}, {cy})");
                }
            }
        }
        if kind == "row" {
            continue;
        }
        assert_eq!(panel["datasource"], ds_ref, "{title}: datasource variable");
        let targets = panel["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("{title}: targets"));
        assert!(!targets.is_empty(), "{title}: no query");
        let mut refs = BTreeSet::new();
        for t in targets {
            assert!(
                refs.insert(t["refId"].as_str().unwrap()),
                "{title}: refId twice"
            );
            assert_eq!(t["datasource"], ds_ref, "{title}: query datasource");
            assert!(
                t["expr"].as_str().is_some_and(|e| !e.trim().is_empty()),
                "{title}: expr"
            );
        }
    }
    assert!(ids.len() >= 15, "{} panels", ids.len());
}

/// The metric names in a PromQL expression (ours all start with `gpu_inventory_`).
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("gpu_inventory_") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        rest = &rest[at + name.len()..];
        out.push(name);
    }
    out
}

/// Label names a PromQL expression selects (`{l="v"}`, `{l=~"v"}`) or groups by (`by (a, b)`, `on (a)`,
/// `group_left (a)`).
fn label_names(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (open, close) in [('{', '}'), ('(', ')')] {
        let mut rest = expr;
        while let Some(at) = rest.find(open) {
            let before = rest[..at].trim_end();
            let inner_end = rest[at..].find(close).map_or(rest.len(), |e| at + e);
            let inner = &rest[at + 1..inner_end];
            let grouping = ["by", "on", "group_left", "without", "ignoring"]
                .iter()
                .any(|k| before.ends_with(k));
            if open == '{' {
                for matcher in inner.split(',') {
                    let name = matcher.split(['=', '!', '~']).next().unwrap_or("").trim();
                    if !name.is_empty() {
                        out.insert(name.to_owned());
                    }
                }
            } else if grouping {
                out.extend(
                    inner
                        .split(',')
                        .map(|l| l.trim().to_owned())
                        .filter(|l| !l.is_empty()),
                );
            }
            rest = &rest[at + 1..];
        }
    }
    out
}

/// What a scrape says of one sample name: how many series, and the label names seen on them.
#[derive(Debug, Default)]
struct Seen {
    series: usize,
    labels: BTreeSet<String>,
}

/// Adds an OpenMetrics text's samples (and the sample names its `# TYPE` lines promise) to `out`.
fn exported(text: &str, out: &mut BTreeMap<String, Seen>) {
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (name, kind) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            let samples: Vec<String> = match kind {
                "counter" => vec![format!("{name}_total")],
                "histogram" => ["_bucket", "_sum", "_count"]
                    .map(|s| format!("{name}{s}"))
                    .to_vec(),
                _ => vec![name.to_owned()],
            };
            for s in samples {
                out.entry(s).or_default();
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let name_end = line.find(['{', ' ']).unwrap_or(line.len());
            let labels = line[name_end..]
                .strip_prefix('{')
                .and_then(|l| l.split_once('}'));
            let seen = out.entry(line[..name_end].to_owned()).or_default();
            seen.series += 1;
            for pair in labels.map(|(l, _)| l).unwrap_or("").split(',') {
                if let Some((k, _)) = pair.split_once('=') {
                    seen.labels.insert(k.to_owned());
                }
            }
        }
    }
}

/// Labels Prometheus adds to every scraped series (the dashboard's Leader panel tells replicas apart by them),
/// and the histogram bucket label.
const TARGET_LABELS: [&str; 3] = ["pod", "instance", "le"];

/// A user allowed what the operator needs to start and reconcile, but no ConfigMaps at all and no status
/// writes: its operator's ConfigMap watch fails and restarts, and its status and ConfigMap writes fail. Its
/// scrape has the failure series (`gpu_inventory_reconcile_errors_total`, `gpu_inventory_watch_restarts_total`)
/// that a healthy operator never exports.
struct CrippledUser(String);

impl CrippledUser {
    fn create(id: &str) -> Self {
        let name = format!("{id}-crippled");
        let rbac = json!({ "apiVersion": "v1", "kind": "List", "items": [
            { "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
              "metadata": { "name": name, "labels": { common::TEST_LABEL: id } },
              "rules": [
                { "apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"] },
                { "apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"] },
                { "apiGroups": ["resource.k8s.io"], "resources": ["resourceslices", "resourceclaims", "deviceclasses", "devicetaintrules"],
                  "verbs": ["list", "watch"] },
                { "apiGroups": ["homelab.youngju.dev"], "resources": ["gpuinventories"],
                  "verbs": ["get", "list", "watch", "create", "patch"] },
                { "apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                  "verbs": ["get", "list", "watch"] },
                { "apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"] } ] },
            { "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
              "metadata": { "name": name, "labels": { common::TEST_LABEL: id } },
              "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
              "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name }] } ] });
        let path = std::env::temp_dir().join(format!("{name}.json"));
        std::fs::write(&path, rbac.to_string()).unwrap();
        let out = kubectl(&["apply", "-f", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        CrippledUser(name)
    }
}

impl Drop for CrippledUser {
    fn drop(&mut self) {
        let _ = kubectl(&[
            "delete",
            "clusterrole,clusterrolebinding",
            &self.0,
            "--ignore-not-found",
        ]);
    }
}

/// The lines of a scrape that carry one of `series` (what a wait on them last saw).
fn lines_of<'a>(text: &'a str, series: &[&str]) -> Vec<&'a str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && series.iter().any(|s| l.starts_with(s)))
        .collect()
}

#[tokio::test]
async fn every_metric_the_dashboard_queries_is_exported_by_a_running_operator() {
    let started = Instant::now();
    let phase = |what: &str| eprintln!("{:>6.1?} {what}", started.elapsed());
    let env = TestEnv::new("dashboard").await;
    env.load_fixture("homelab-nodes.yaml").await;
    // A Ready GPU node with a pod holding one GPU and one waiting for eight: every allocation series exists.
    // Its NVLink clique and zone give it a place, so the topology series exist too.
    let gpu_node: Node = serde_json::from_value(json!({
        "metadata": { "name": "h100", "labels": { "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "2", "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.clique": "5f0c2a9e-1b7d-4c3e-8a6f-2d4b6c8e0a13.1",
            "topology.kubernetes.io/zone": "zone-a" } },
        "status": {
            "capacity": { "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2" },
            "allocatable": { "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "2" },
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }]
        }
    }))
    .unwrap();
    let node = env.create_node(gpu_node).await;
    // The scheduler places pods on the node once the node lifecycle controller has lifted the not-ready taint
    // a new node gets.
    env.wait_schedulable(&node).await;
    for (name, gpus) in [("holds-one", 1), ("waits-for-eight", 8)] {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": { "name": name },
            "spec": { "nodeSelector": { "kubernetes.io/hostname": node }, "automountServiceAccountToken": false,
                "containers": [{ "name": "cuda", "image": "cuda",
                    "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }] }
        }))
        .unwrap();
        env.create_pod(pod).await;
    }
    phase("pods created (the node schedulable, the namespace's ServiceAccount there)");
    // What the allocation series report is the scheduler's verdict: one pod bound, one Unschedulable. Waited
    // for here, each on the scheduler's own deadline, so that the operator's wait below is its own pass only.
    assert_eq!(env.wait_bound("holds-one").await, node, "holds-one's node");
    let refused = env.wait_unschedulable("waits-for-eight").await;
    assert!(
        refused.contains("nvidia.com/gpu"),
        "waits-for-eight cannot fit 8 GPUs on 2: {refused}"
    );
    phase("the scheduler decided on both pods");
    // Kueue's objects (its CRDs served; its controller need not run): a flavor of the node with a quota of 4
    // GPUs where 2 are healthy, so every quota series exists, the issue's included.
    common::kueue::install_crds();
    let kueue = QuotaObjects::new(&env);
    let flavor = kueue
        .create(
            "ResourceFlavor",
            "h100",
            json!({ "nodeLabels": { TEST_LABEL: env.id } }),
        )
        .await;
    kueue
        .create(
            "ClusterQueue",
            "cq",
            json!({ "namespaceSelector": {}, "resourceGroups": [{ "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{ "name": flavor, "resources": [{ "name": "nvidia.com/gpu", "nominalQuota": 4 }] }] }] }),
        )
        .await;
    phase("Kueue's flavor and ClusterQueue created");
    // A Prometheus holding dcgm-exporter's history of the GPU holds-one holds: idle for two hours, so that the
    // idle series exist too.
    let now = jiff::Timestamp::now();
    let idle = dcgm_labels(&node, 0)
        .pod(&env.namespace, "holds-one", "cuda")
        .gr_engine_active()
        .constant(
            0.0,
            now - jiff::SignedDuration::from_hours(2),
            now + jiff::SignedDuration::from_mins(20),
            30,
        );
    let prometheus = prometheus::start(&env.id, &[idle]);
    let operator = env.start_operator_with(
        "2s",
        &[
            "--prometheus-url",
            &prometheus.url(),
            "--utilization-interval",
            "2s",
        ],
    );
    let inv = env.inventory_name();
    let allocation = [
        format!("gpu_inventory_namespace_requested{{inventory=\"{inv}\""),
        format!("gpu_inventory_namespace_pending_gpu_pods{{inventory=\"{inv}\""),
        format!("gpu_inventory_quota_issues{{inventory=\"{inv}\""),
        format!("gpu_inventory_idle_gpus{{inventory=\"{inv}\""),
        format!("gpu_inventory_utilization_known{{inventory=\"{inv}\""),
    ];
    let allocation: Vec<&str> = allocation.iter().map(String::as_str).collect();
    let text = wait_for(
        operator.periods().converge(),
        "allocation in /metrics",
        || async {
            let (code, text) = operator.http_get("/metrics").await;
            let found = lines_of(&text, &allocation);
            if code == 200
                && allocation
                    .iter()
                    .all(|s| found.iter().any(|l| l.starts_with(s)))
            {
                Ok(text)
            } else {
                Err(format!("HTTP {code}, allocation series: {found:?}"))
            }
        },
    )
    .await;
    phase("allocation in the first operator's /metrics");
    let mut families = BTreeMap::new();
    exported(&text, &mut families);
    // The failure series, from an operator that lacks permissions (CrippledUser). Each is counted at the first
    // refused attempt, so no retry backoff is waited for: the ConfigMap watch fails at its first list, when the
    // controllers start, and a status write is refused when the operator writes one. It writes only when the
    // status it computes differs from the one stored: the first operator goes first, and a node is cordoned
    // once the second one is up, so that it has a change to write. (Before, the two ran side by side: the
    // first one wrote every change and the second, seeing it stored, skipped its write, and counted a failure
    // only when it happened to plan a change before the first one's write reached it; the wait had no cause
    // it could follow, and timed out after 60 s on a loaded machine.)
    drop(operator);
    let user = CrippledUser::create(&env.id);
    let kubeconfig = impersonating_kubeconfig(&user.0, &format!("{}-crippled", env.id));
    let kubeconfig = kubeconfig.display().to_string();
    let crippled =
        env.start_operator_with("2s", &["--kubeconfig", &kubeconfig, "--skip-crd-install"]);
    wait_for(
        crippled.periods().start_up(),
        "the second operator's controllers",
        || async {
            let log = crippled.log();
            if log.contains("starting controllers") {
                Ok(())
            } else {
                Err(format!(
                    "its last line: {}",
                    log.lines().last().unwrap_or("(none)")
                ))
            }
        },
    )
    .await;
    phase("the second operator's controllers started");
    env.cordon(&node, true).await;
    let failures = [
        "gpu_inventory_watch_restarts_total{watch=\"configmap\"}",
        "gpu_inventory_reconcile_errors_total{controller=\"inventory\"",
    ];
    let deadline =
        Deadline::reaction("the second operator's status write, refused, after the cordon");
    let failing = wait_for(deadline, "failures in /metrics", || async {
        let (code, text) = crippled.http_get("/metrics").await;
        let found = lines_of(&text, &failures);
        if failures
            .iter()
            .all(|s| found.iter().any(|l| l.starts_with(s)))
        {
            Ok(text)
        } else {
            Err(format!("HTTP {code}, failure series: {found:?}"))
        }
    })
    .await;
    phase("failures in the second operator's /metrics");
    exported(&failing, &mut families);
    let mut wrong = Vec::new();
    let queries = queries(&dashboard());
    for (title, expr) in &queries {
        let names = metric_names(expr);
        if names.is_empty() {
            wrong.push(format!("{title}: queries no gpu_inventory_ metric: {expr}"));
        }
        let mut labels: BTreeSet<String> = TARGET_LABELS.iter().map(|l| l.to_string()).collect();
        for name in &names {
            match families.get(name) {
                None => wrong.push(format!("{title}: {name} is not exported")),
                Some(seen) if seen.series == 0 => {
                    wrong.push(format!("{title}: {name} has no series in either scrape"))
                }
                Some(seen) => labels.extend(seen.labels.iter().cloned()),
            }
        }
        for label in label_names(expr) {
            if !labels.contains(&label) {
                wrong.push(format!("{title}: label {label} is on none of {names:?}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the dashboard queries what the operator does not export:\n  {}\n--- /metrics ---\n{text}\n--- /metrics of the operator lacking permissions ---\n{failing}",
        wrong.join("\n  ")
    );
    // The issue's list, all on the dashboard.
    let all: String = queries.iter().map(|(_, e)| e.as_str()).collect();
    for metric in [
        "gpu_inventory_gpu_nodes",
        "gpu_inventory_ready_gpu_nodes",
        "gpu_inventory_gpus",
        "gpu_inventory_resource_allocatable",
        "gpu_inventory_resource_allocated",
        "gpu_inventory_resource_free",
        "gpu_inventory_free_gpus",
        "gpu_inventory_node_allocated",
        "gpu_inventory_node_free",
        "gpu_inventory_node_info",
        "gpu_inventory_node_issues",
        "gpu_inventory_pending_gpu_pods",
        "gpu_inventory_namespace_pending_gpu_pods",
        "gpu_inventory_namespace_requested",
        "gpu_inventory_reconcile_errors_total",
        "gpu_inventory_guard_writes_total",
        "gpu_inventory_guard_skipped_writes_total",
        "gpu_inventory_watch_restarts_total",
        "gpu_inventory_topology_degraded_domains",
        "gpu_inventory_topology_domain_free_gpus",
        "gpu_inventory_topology_largest_free_gpus",
        "gpu_inventory_quota",
        "gpu_inventory_quota_healthy",
        "gpu_inventory_quota_issues",
        "gpu_inventory_workloads_cannot_fit",
    ] {
        assert!(all.contains(metric), "no panel shows {metric}");
    }
}

#[test]
fn the_query_parsers_find_names_and_labels() {
    let expr = r#"sum by (product) (max by (inventory, node) (gpu_inventory_node_free{inventory=~"$inventory",resource="nvidia.com/gpu"}) * on (inventory, node) group_left (product) gpu_inventory_node_info)"#;
    assert_eq!(
        metric_names(expr),
        ["gpu_inventory_node_free", "gpu_inventory_node_info"]
    );
    let labels: Vec<String> = label_names(expr).into_iter().collect();
    assert_eq!(labels, ["inventory", "node", "product", "resource"]);
    let text = "# TYPE gpu_inventory_reconciles counter\ngpu_inventory_reconciles_total{controller=\"inventory\"} 3\n# TYPE gpu_inventory_reconcile_duration_seconds histogram\n# EOF\n";
    let mut families = BTreeMap::new();
    exported(text, &mut families);
    let reconciles = &families["gpu_inventory_reconciles_total"];
    assert_eq!(reconciles.series, 1);
    assert_eq!(reconciles.labels, BTreeSet::from(["controller".to_owned()]));
    assert!(families.contains_key("gpu_inventory_reconcile_duration_seconds_bucket"));
}
