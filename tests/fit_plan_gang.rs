//! `fit --plan` for a gang on a dump: the GB200 fleet fixture (tests/fixtures/topology/gb200-fleet.yaml) with
//! small pods fragmenting rack 1's NVLink partition, and a 16-pod x 4-GPU gang bound to `nvlink`: the plan
//! names the partition, the 16 nodes its pods start on and the pods to move (never the DaemonSet's), exit
//! code 1 (it does not fit now). No cluster needed.

mod common;

use common::offline_cli::operator;
use serde_json::{Value, json};

const RACK_1: &str = "7c7f4a1e-2f54-4b3c-9d0e-5a6b7c8d9e01.32766";

/// A running pod `name` in `ml` on `node` holding one GPU, controlled by `owner` (kind, name).
fn small(name: &str, node: &str, owner: (&str, &str)) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": { "name": name, "namespace": "ml",
                      "ownerReferences": [{ "apiVersion": "apps/v1", "kind": owner.0, "name": owner.1,
                                            "uid": "u", "controller": true }] },
        "spec": { "nodeName": node, "priority": 0,
                  "containers": [{ "name": "c", "image": "cuda",
                                   "resources": { "limits": { "nvidia.com/gpu": "1" } } }] },
        "status": { "phase": "Running" }
    })
}

/// The fixture with a DaemonSet's pod on rack 1's first node and Deployments' pods on its next three, and
/// `fit --gpus <gpus> --gpus-per-pod 4 --level nvlink --plan` over it with `output`: exit code, stdout.
fn fit_plan(tag: &str, gpus: &str, output: &[&str]) -> (Option<i32>, String, String) {
    let path = format!(
        "{}/tests/fixtures/topology/gb200-fleet.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find('{').unwrap(); // past the generator's comment
    let mut fleet: Value = serde_json::from_str(&text[start..]).unwrap();
    let items = fleet["items"].as_array_mut().unwrap();
    items.push(small("agent-x", "gb200-r1-n01", ("DaemonSet", "agent")));
    for n in 2..=4 {
        let node = format!("gb200-r1-n0{n}");
        items.push(small(
            &format!("web-7d9f-{n}"),
            &node,
            ("ReplicaSet", "web-7d9f"),
        ));
    }
    items.push(
        json!({ "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": { "name": "none", "namespace": "ml", "generation": 1 },
        "spec": { "minAvailable": 0, "selector": { "matchLabels": { "app": "nothing" } } },
        "status": { "observedGeneration": 1, "disruptionsAllowed": 0, "currentHealthy": 0,
                    "desiredHealthy": 0, "expectedPods": 0 } }),
    );
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let dump = dir.join(format!("fit-plan-gang-{tag}-{}.json", std::process::id()));
    std::fs::write(&dump, fleet.to_string()).unwrap();
    let mut args = vec!["fit", "-f", dump.to_str().unwrap(), "--gpus", gpus];
    args.extend(["--gpus-per-pod", "4", "--level", "nvlink", "--plan"]);
    args.extend(output);
    let out = operator(&args);
    let _ = std::fs::remove_file(&dump);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code(), stdout, stderr)
}

#[test]
fn the_gang_gets_rack_one_once_two_small_pods_move_and_the_daemonset_s_stays() {
    let (code, stdout, stderr) = fit_plan("json", "64", &["-o", "json"]);
    assert_eq!(code, Some(1), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let plan = &answer["plan"];
    assert_eq!(
        (&plan["domain"], &plan["node"]),
        (&json!(RACK_1), &json!(RACK_1)),
        "{plan}"
    );
    assert_eq!(plan["displacedGpus"], 2, "{plan}");
    let hosts: Vec<&str> = plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert_eq!(hosts.len(), 16, "{plan}");
    assert!(
        !hosts.contains(&"gb200-r1-n01"),
        "the DaemonSet's node keeps its pod: {plan}"
    );
    let moves = plan["moves"].as_array().unwrap();
    assert_eq!(moves.len(), 2, "{plan}");
    for m in moves {
        assert!(
            m["pod"].as_str().unwrap().starts_with("web-7d9f-"),
            "{plan}"
        );
        assert_eq!(
            (&m["namespace"], &m["owner"]),
            (&json!("ml"), &json!("ReplicaSet/web-7d9f"))
        );
        assert!(hosts.contains(&m["from"].as_str().unwrap()), "{plan}");
        assert!(!hosts.contains(&m["to"].as_str().unwrap()), "{plan}");
    }
}

#[test]
fn the_table_names_the_domain_and_a_gang_larger_than_any_partition_has_no_plan() {
    let (code, stdout, stderr) = fit_plan("table", "64", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    let line = format!("so that the gang fits in domain {RACK_1} on 16 node(s)");
    assert!(
        stdout.contains("PLAN    move 2 pod(s) (2 GPUs)") && stdout.contains(&line),
        "{stdout}"
    );
    let (code, stdout, stderr) = fit_plan("large", "76", &["-o", "json"]);
    assert_eq!(code, Some(1), "{stderr}");
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let why = answer["plan"]["why"].as_str().unwrap();
    assert!(
        why.starts_with("no nvlink domain holds 19 pods of 4 GPUs even with every GPU free"),
        "{why}"
    );
}
