//! `fit --plan -f` on a dump of nodes, pods and PodDisruptionBudgets, as `kubectl get
//! nodes,pods,poddisruptionbudgets -A -o json` writes it: the pods' traits come from the dump, a budget that
//! allows nothing keeps its pods in place, the why names the rules, and a budget the dump reader skips fails
//! closed (exit 3, a dump not wholly read). No cluster needed.

mod common;

use common::offline_cli::operator;
use serde_json::{Value, json};

/// A Ready 8-GPU H100 node.
fn node(name: &str) -> Value {
    let gpus = json!({ "cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8" });
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": { "name": name, "labels": { "kubernetes.io/hostname": name,
            "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8" } },
        "status": { "capacity": gpus, "allocatable": gpus,
                    "conditions": [{ "type": "Ready", "status": "True" }] }
    })
}

/// A running Deployment's pod `app-x` in `ml` on `node` holding 4 GPUs, of `priority`.
fn replica(app: &str, node: &str, priority: i32) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": format!("{app}-7d9f-x"), "namespace": "ml", "labels": { "app": app },
                      "ownerReferences": [{ "apiVersion": "apps/v1", "kind": "ReplicaSet",
                          "name": format!("{app}-7d9f"), "uid": "u", "controller": true }] },
        "spec": { "nodeName": node, "priority": priority,
                  "containers": [{ "name": "c", "image": "cuda",
                                   "resources": { "limits": { "nvidia.com/gpu": "4" } } }] },
        "status": { "phase": "Running" }
    })
}

/// A budget over `selector` in `ml` of `apiVersion`, allowing none.
fn budget(api_version: &str, name: &str, selector: Value) -> Value {
    json!({
        "apiVersion": api_version, "kind": "PodDisruptionBudget",
        "metadata": { "name": name, "namespace": "ml", "generation": 1 },
        "spec": { "minAvailable": 1, "selector": selector },
        "status": { "observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 1,
                    "desiredHealthy": 1, "expectedPods": 1 }
    })
}

/// `fit --gpus 8 --plan -f <dump> -o json` over a, b, c each holding 4 GPUs (db, hi, lo) and `budgets`:
/// the exit code, the answer's `plan`, and stderr.
fn fit_plan(tag: &str, budgets: &[Value]) -> (Option<i32>, Value, String) {
    let mut items = vec![
        node("a"),
        node("b"),
        node("c"),
        replica("db", "a", 0),
        replica("hi", "b", 1000),
        replica("lo", "c", 100),
    ];
    items.extend_from_slice(budgets);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("fit-plan-{tag}-{}.json", std::process::id()));
    let dump = json!({ "apiVersion": "v1", "kind": "List", "items": items });
    std::fs::write(&path, dump.to_string()).unwrap();
    let out = operator(&[
        "fit",
        "-f",
        path.to_str().unwrap(),
        "--gpus",
        "8",
        "--plan",
        "-o",
        "json",
    ]);
    let _ = std::fs::remove_file(&path);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let answer: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    (out.status.code(), answer["plan"].clone(), stderr)
}

#[test]
fn the_budget_keeps_db_and_the_lower_priority_pod_moves() {
    let (code, plan, stderr) = fit_plan(
        "db",
        &[budget(
            "policy/v1",
            "db",
            json!({ "matchLabels": { "app": "db" } }),
        )],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(plan["node"], "c", "{plan}");
    let moved = &plan["moves"][0];
    assert_eq!(
        (&moved["pod"], &moved["owner"], &moved["priority"]),
        (
            &json!("lo-7d9f-x"),
            &json!("ReplicaSet/lo-7d9f"),
            &json!(100)
        ),
        "{plan}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
}

#[test]
fn an_empty_selector_keeps_every_pod_and_the_why_says_so() {
    let (code, plan, _) = fit_plan("all", &[budget("policy/v1", "all", json!({}))]);
    assert_eq!(code, Some(1));
    assert_eq!(plan["moves"], json!([]));
    let why = plan["why"].as_str().unwrap();
    assert!(
        why.contains(
            "3 pods on the candidate nodes cannot move: 3 under PodDisruptionBudget ml/all, which allows \
             no disruption"
        ),
        "{why}"
    );
}

#[test]
fn a_budget_not_read_fails_closed_and_none_at_all_is_said() {
    let (code, plan, stderr) = fit_plan("old", &[budget("policy/v1beta1", "old", json!({}))]);
    assert_eq!(code, Some(3), "a dump not wholly read: {stderr}");
    assert_eq!(plan["moves"], json!([]));
    assert!(
        plan["why"]
            .as_str()
            .unwrap()
            .starts_with("PodDisruptionBudget ml/old in the dump was not read"),
        "{plan}"
    );
    assert!(stderr.contains("error: fit --plan: "), "{stderr}");
    let (code, plan, stderr) = fit_plan("none", &[]);
    assert_eq!((code, &plan["node"]), (Some(1), &json!("a")), "{plan}");
    assert!(
        stderr.contains("warning: the dump holds no PodDisruptionBudget"),
        "{stderr}"
    );
}
