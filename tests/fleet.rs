//! The kubectl plugin across clusters (docs/fleet.md) on real API servers: the test cluster and two more at once
//! (tests/common/fleet: etcd + kube-apiserver each, their own ports), in one kubeconfig with three contexts that
//! cannot be read: a server that refuses connections, one that accepts and never answers, a real server whose
//! user it knows but grants nothing, and an exec credential plugin that never returns; and one read through an
//! exec credential plugin.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::allocation::node;
use common::fleet::{ExtraCluster, SilentServer, add_gpu_node, set_ready, write_fleet_kubeconfig};
use common::offline_cli::{operator, plugin, row, text};
use common::{TEST_LABEL, TestEnv, kubeconfig_path};
use serde_json::{Value, json};

const H100: &str = "NVIDIA-H100-80GB-HBM3";
const GB200: &str = "NVIDIA-GB200";
/// The plugin's deadline per cluster in these tests.
const TIMEOUT: &str = "3s";

/// The fleet's kubeconfig: contexts `a` (the test cluster), `b`, `c`, and `refused`, `silent`, `stranger`.
fn fleet_kubeconfig(env: &TestEnv, b: &ExtraCluster, c: &ExtraCluster, silent: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("target/test-logs/{}-fleet-kubeconfig.json", env.id));
    let a = kubeconfig_path();
    write_fleet_kubeconfig(
        &path,
        &[("a", &a), ("b", &b.kubeconfig), ("c", &c.kubeconfig)],
        &[
            ("refused", "https://127.0.0.1:1"),
            ("silent", silent),
            ("stranger", &b.server()),
        ],
    );
    // `stranger`: cluster b's token user (hack/local-cluster.sh's pki/tokens.csv), who may do nothing there.
    let tokens = std::fs::read_to_string(b.state_dir.join("pki/tokens.csv")).unwrap();
    let token = tokens.split(',').next().unwrap().trim();
    let mut config: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for user in config["users"].as_array_mut().unwrap() {
        if user["name"] == "stranger" {
            user["user"]["token"] = json!(token);
        }
    }
    // `b-exec`: cluster b through an exec credential plugin (b's admin certificate, as a cloud CLI would hand
    // out a credential); `hung-exec`: one whose plugin never returns.
    let pki = b.state_dir.join("pki");
    let credential = json!({
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {
            "clientCertificateData": std::fs::read_to_string(pki.join("admin.crt")).unwrap(),
            "clientKeyData": std::fs::read_to_string(pki.join("admin.key")).unwrap(),
        }
    });
    let answer = path.with_extension("credential.json");
    std::fs::write(&answer, credential.to_string()).unwrap();
    let exec = |command: &str, args: &[&str]| {
        json!({ "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": command,
            "args": args,
            "interactiveMode": "Never",
        }})
    };
    config["users"].as_array_mut().unwrap().extend([
        json!({ "name": "b-exec", "user": exec("cat", &[answer.to_str().unwrap()]) }),
        json!({ "name": "hung-exec", "user": exec("sleep", &["20"]) }),
    ]);
    config["contexts"].as_array_mut().unwrap().extend([
        json!({ "name": "b-exec", "context": { "cluster": "b", "user": "b-exec" } }),
        json!({ "name": "hung-exec", "context": { "cluster": "b", "user": "hung-exec" } }),
    ]);
    std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    path
}

/// The plugin's answer and how long it took.
fn timed(args: &[&str]) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = plugin("fleet", args);
    (out, started.elapsed())
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn the_plugin_reads_every_context_at_once_and_names_the_ones_it_cannot_read() {
    let env = TestEnv::new("fleet-plugin").await;
    let labels = json!({
        "nvidia.com/gpu.product": H100, "nvidia.com/gpu.count": "8", "nvidia.com/gpu.present": "true"
    });
    for name in ["h100-1", "h100-2"] {
        env.create_node(node(name, labels.clone(), &[("nvidia.com/gpu", "8")]))
            .await;
    }
    let (b, c) = tokio::join!(ExtraCluster::up("fleet-b"), ExtraCluster::up("fleet-c"));
    let mine = (TEST_LABEL, env.id.as_str());
    // b: four GB200 nodes of 4 GPUs in one NVLink partition (one rack's clique).
    for i in 1..=4 {
        let clique = (
            "nvidia.com/gpu.clique",
            "9f3e7a2c-1b4d-4e8f-a6c5-0d2b3e4f5a61.1",
        );
        add_gpu_node(&b.client, &format!("gb200-{i}"), GB200, 4, &[mine, clique]).await;
    }
    // c: two H100 nodes, one NotReady.
    add_gpu_node(&c.client, "h100-c1", H100, 8, &[mine]).await;
    add_gpu_node(&c.client, "h100-c2", H100, 8, &[mine]).await;
    set_ready(&c.client, "h100-c2", false).await;
    let silent = SilentServer::start().await;
    let kubeconfig = fleet_kubeconfig(&env, &b, &c, &silent.url());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let selector = format!("{TEST_LABEL}={}", env.id);

    // Every context: four read (b twice: by certificate and by an exec plugin), four named with their errors,
    // exit 2, within the deadline (a plugin that hangs holds only its own cluster).
    let fleet = ["--kubeconfig", kubeconfig, "--cluster-timeout", TIMEOUT];
    let (out, took) = timed(&[&fleet[..], &["--all-contexts", "-l", &selector]].concat());
    let table = text(&out);
    println!("{table}(in {took:?})");
    assert_eq!(out.status.code(), Some(2), "{table}\n{}", stderr(&out));
    assert!(
        took < Duration::from_secs(3 + 4),
        "the per-cluster timeout bounds the command: {took:?}"
    );
    let products = |product: &str, gpus: u64, free: u64| format!("{product} {gpus} ({free} free)");
    assert_eq!(
        row(&table, "a"),
        ["a", "2", "16", "16", "0", &products(H100, 16, 16)]
    );
    assert_eq!(
        row(&table, "b"),
        ["b", "4", "16", "16", "0", &products(GB200, 16, 16)]
    );
    assert_eq!(
        row(&table, "c"),
        ["c", "2", "16", "8", "8", &products(H100, 16, 8)]
    );
    assert_eq!(row(&table, "b-exec")[1..], row(&table, "b")[1..]);
    let error = |context: &str| row(&table, context).last().unwrap().to_string();
    assert!(
        error("refused").starts_with("error: ") && error("refused").contains("Connection refused"),
        "{table}"
    );
    assert_eq!(
        error("silent"),
        "error: no answer within 3s (--cluster-timeout)"
    );
    assert_eq!(
        error("hung-exec"),
        "error: no answer within 3s (--cluster-timeout)"
    );
    assert!(error("stranger").contains("403"), "{table}");
    assert!(
        table.contains(
            "FLEET: 4 of 8 cluster(s) read (4 could not be: see above): 12 GPU nodes, 64 GPUs, 56 free, \
             8 unhealthy"
        ),
        "{table}"
    );
    // The fleet per product: the largest free gang is one cluster's (a gang never spans two).
    assert_eq!(
        row(&table, "nvidia  NVIDIA-GB200"),
        ["nvidia", GB200, "2", "32", "32", "0", "16 (b)"]
    );
    assert_eq!(
        row(&table, "nvidia  NVIDIA-H100-80GB-HBM3"),
        ["nvidia", H100, "2", "32", "24", "8", "8 (a)"]
    );
    let said = stderr(&out);
    for context in ["refused", "silent", "stranger", "hung-exec"] {
        assert!(
            said.contains(&format!("error: context {context}: ")),
            "{said}"
        );
    }

    // Two contexts named: JSON, every one read, exit 0 (no issue on a or b).
    let (out, _) = timed(
        &[
            &fleet[..],
            &[
                "--context",
                "a",
                "--context",
                "b",
                "-l",
                &selector,
                "-o",
                "json",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let contexts: Vec<&str> = json["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["context"].as_str().unwrap())
        .collect();
    assert_eq!(contexts, ["a", "b"]);
    assert_eq!(json["clusters"][0]["inventory"]["totalGpus"], 16);
    assert_eq!(
        json["clusters"][1]["inventory"]["nodes"][0]["product"],
        GB200
    );
    assert_eq!(json["errors"], json!([]));
    assert_eq!(
        (
            &json["totals"]["gpus"],
            &json["totals"]["free"],
            &json["totals"]["clusters"]
        ),
        (&json!(32), &json!(32), &json!(2))
    );

    // -o wide: one row per node with its cluster; c's NotReady node is c's. Exit 1: an issue there.
    let (out, _) = timed(
        &[
            &fleet[..],
            &[
                "--context",
                "c",
                "--context",
                "a",
                "-l",
                &selector,
                "-o",
                "wide",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let wide = text(&out);
    let c2 = row(&wide, "c");
    assert!(
        wide.lines().next().unwrap().starts_with("CLUSTER  NAME"),
        "{wide}"
    );
    assert!(
        wide.lines()
            .any(|l| l.starts_with("c ") && l.contains("h100-c2") && l.contains("NotReady")),
        "{wide}"
    );
    assert_eq!(c2[0], "c");
}

#[tokio::test]
async fn fit_across_contexts_says_in_which_cluster_a_job_starts() {
    let env = TestEnv::new("fleet-fit").await;
    let labels = json!({
        "nvidia.com/gpu.product": H100, "nvidia.com/gpu.count": "8", "nvidia.com/gpu.present": "true"
    });
    env.create_node(node("h100", labels, &[("nvidia.com/gpu", "8")]))
        .await;
    let b = ExtraCluster::up("fleet-fit-b").await;
    let mine = (TEST_LABEL, env.id.as_str());
    for i in 1..=4 {
        let clique = (
            "nvidia.com/gpu.clique",
            "0c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f.7",
        );
        add_gpu_node(&b.client, &format!("gb200-{i}"), GB200, 4, &[mine, clique]).await;
    }
    let silent = SilentServer::start().await;
    let kubeconfig = fleet_kubeconfig(&env, &b, &b, &silent.url());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let selector = format!("{TEST_LABEL}={}", env.id);
    let fit = |contexts: &[&str], gpus: &str, output: &str| {
        let mut args = vec!["--kubeconfig", kubeconfig, "--cluster-timeout", TIMEOUT];
        for context in contexts {
            args.extend(["--context", context]);
        }
        args.extend([
            "fit",
            "--gpus",
            gpus,
            "--product",
            GB200,
            "-l",
            &selector,
            "-o",
            output,
        ]);
        timed(&args).0
    };

    // 16 GB200 GPUs: in b's partition; a has no GB200 (a "no" there, not an error).
    let out = fit(&["a", "b"], "16", "json");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["fitsIn"], json!(["b"]));
    assert_eq!(json["clusters"][0]["context"], "a");
    assert_eq!(json["clusters"][0]["answer"]["fits"], false);
    assert!(
        json["clusters"][0]["answer"]["why"]
            .as_str()
            .unwrap()
            .contains("no GPU node of product"),
        "{json}"
    );
    assert_eq!(json["clusters"][1]["answer"]["level"], "nvlink");
    assert_eq!(json["clusters"][1]["answer"]["domains"][0]["freeGpus"], 16);

    // 32: nowhere (exit 1); the table says so.
    let out = fit(&["a", "b"], "32", "table");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        text(&out).contains("FITS IN: no cluster read"),
        "{}",
        text(&out)
    );
    assert_eq!(row(&text(&out), "b")[1], "no");

    // A cluster that cannot be read: exit 2, named, and b still answers.
    let out = fit(&["b", "silent"], "16", "table");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(row(&text(&out), "b")[1], "yes");
    assert!(
        row(&text(&out), "silent").contains(&"error"),
        "{}",
        text(&out)
    );
    assert!(text(&out).contains("FITS IN: b"), "{}", text(&out));
}

#[tokio::test]
async fn commands_that_read_one_cluster_refuse_several_contexts() {
    for (args, what) in [
        (
            vec!["--context", "a", "--context", "b", "quotas"],
            "`quotas`",
        ),
        (vec!["--context", "a", "--context", "b", "-w"], "--watch"),
        (
            vec!["--context", "a", "--context", "b", "--group-by", "product"],
            "--group-by",
        ),
        (
            vec!["--context", "a", "--all-contexts"],
            "--all-contexts and --context",
        ),
    ] {
        let out = plugin("fleet-refused", &args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(what), "{args:?}: {}", stderr(&out));
    }
    let out = operator(&["scan", "--context", "a", "--context", "b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--context given 2 times"),
        "{}",
        stderr(&out)
    );
}
