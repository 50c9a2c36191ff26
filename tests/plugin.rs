//! `kubectl gpu-inventory`: real kubectl finds the binary under the name `kubectl-gpu_inventory` on PATH
//! (as `make install-plugin` and krew install it) and runs it against the test cluster; `--watch` runs under
//! tmux, a real terminal, whose screen shows the redraw after a node goes NotReady.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

use common::tmux::Tmux;
use common::{
    Deadline, PLUGIN_FIRST_LIST_TIMEOUT, TEST_LABEL, TestEnv, WATCH_BACKOFF, is_local_cluster,
    kubeconfig_path, local_cluster_dir, write_kubeconfig,
};
use gpu_inventory_operator::crd::GpuInventoryStatus;
use k8s_openapi::api::core::v1::Node;
use kube::config::Kubeconfig;
use serde_json::json;

/// A directory holding `kubectl-gpu_inventory`, a symlink to the binary under test (what `make
/// install-plugin` makes in $PREFIX/bin), and the PATH with it first.
fn plugin_path(id: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/test-logs/{id}-bin"));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("kubectl-gpu_inventory");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &link).unwrap();
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `kubectl <args>` with the plugin on PATH (stdout is a pipe, not a terminal).
fn kubectl(path: &str, args: &[&str]) -> Output {
    Command::new("kubectl")
        .args(args)
        .env("PATH", path)
        .env_remove("NO_COLOR")
        .output()
        .expect("run kubectl")
}

fn selector(env: &TestEnv) -> String {
    format!("{TEST_LABEL}={}", env.id)
}

/// A Ready KWOK node with two GPUs, named `<id>-<name>`.
async fn gpu_node(env: &TestEnv, name: &str) -> String {
    let node: Node = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "2" } },
        "status": {
            "capacity": { "cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2" },
            "allocatable": { "cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "2" },
            "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }]
        }
    }))
    .unwrap();
    env.create_node(node).await
}

#[tokio::test]
async fn kubectl_runs_the_plugin_and_it_prints_the_live_table() {
    let env = TestEnv::new("plugin-table").await;
    env.load_fixture("homelab-nodes.yaml").await;
    let path = plugin_path(&env.id);
    let listed = kubectl(&path, &["plugin", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("kubectl-gpu_inventory"),
        "kubectl plugin list: {}{}",
        String::from_utf8_lossy(&listed.stdout),
        String::from_utf8_lossy(&listed.stderr)
    );
    let kubeconfig = kubeconfig_path().display().to_string();
    let sel = selector(&env);
    // `kubectl gpu-inventory --kubeconfig <test cluster> -l <this test's nodes> <extra>`
    let plugin = |extra: &[&str]| {
        let args = [
            &["gpu-inventory", "--kubeconfig", &kubeconfig, "-l", &sel],
            extra,
        ]
        .concat();
        kubectl(&path, &args)
    };
    let out = plugin(&[]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "exit 1: the home lab has issues\n{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = table.lines().nth(1).unwrap_or_default();
    for column in ["NAME", "READY", "PRODUCT", "GPUS", "FREE", "ISSUES"] {
        assert!(header.contains(column), "{column} in {header:?}");
    }
    assert!(
        table.starts_with("total_gpu_nodes: 4  ready_gpu_nodes: 0  total_gpus: 1"),
        "{table}"
    );
    let nuc1 = env.node_name("nuc1");
    let row = table
        .lines()
        .find(|l| l.starts_with(&nuc1))
        .unwrap_or_else(|| panic!("{nuc1} in\n{table}"));
    assert!(row.contains(" false ") && row.contains("NotReady"), "{row}");
    assert!(
        !table.contains('\x1b'),
        "no colour when stdout is not a terminal:\n{table}"
    );

    // -o json / yaml: the GpuInventory status; -o wide: more columns.
    let json_out = plugin(&["-o", "json"]);
    let status: GpuInventoryStatus =
        serde_json::from_slice(&json_out.stdout).expect("-o json is a status");
    assert_eq!((status.total_gpu_nodes, status.ready_gpu_nodes), (4, 0));
    let yaml_out = plugin(&["-o", "yaml"]);
    let status: GpuInventoryStatus =
        serde_saphyr::from_str(&String::from_utf8_lossy(&yaml_out.stdout))
            .expect("-o yaml is a status");
    assert_eq!(status.nodes.len(), 4);
    let wide = plugin(&["-o", "wide"]);
    let wide = String::from_utf8_lossy(&wide.stdout);
    assert!(
        wide.lines().nth(1).unwrap_or_default().contains("SOURCES"),
        "{wide}"
    );
}

#[tokio::test]
async fn kubeconfig_and_context_are_kubectls() {
    let env = TestEnv::new("plugin-context").await;
    env.load_fixture_only("homelab-nodes.yaml", &["nuc1"]).await;
    let path = plugin_path(&env.id);
    // A kubeconfig whose current context points nowhere, and whose context "lab" is the test cluster.
    let mut config = Kubeconfig::read_from(kubeconfig_path()).unwrap();
    let mut lab = config.contexts[0].clone();
    lab.name = "lab".into();
    let mut nowhere = config.contexts[0].clone();
    nowhere.name = "nowhere".into();
    nowhere.context.as_mut().unwrap().cluster = "no-such-cluster".into();
    config.contexts = vec![lab, nowhere];
    config.current_context = Some("nowhere".into());
    let file = write_kubeconfig(&config, &format!("{}-contexts", env.id))
        .display()
        .to_string();
    let sel = selector(&env);
    let out = kubectl(
        &path,
        &[
            "gpu-inventory",
            "--kubeconfig",
            &file,
            "--context",
            "lab",
            "-l",
            &sel,
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&env.node_name("nuc1")),
        "--context lab: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kubectl(&path, &["gpu-inventory", "--kubeconfig", &file, "-l", &sel]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "the current context names no cluster: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: "));
    // KUBECONFIG as kubectl sets it for its plugins.
    let out = Command::new("kubectl")
        .args(["gpu-inventory", "--context", "lab", "-l", &sel])
        .env("PATH", &path)
        .env("KUBECONFIG", &file)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(&env.node_name("nuc1")));
}

/// The cells of the table row that starts with `first`.
fn cells<'t>(table: &'t str, first: &str) -> Vec<&'t str> {
    let line = table
        .lines()
        .find(|l| l.starts_with(&format!("{first} ")))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{table}"));
    line.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[tokio::test]
async fn kubectl_runs_the_plugins_topology_views_and_fit_on_live_nodes() {
    let env = TestEnv::new("plugin-topology").await;
    // One rack split in two NVLink partitions (a and b in .1, c in .2), and a rack label no table knows.
    let rack = "5f0c2a9e-1b7d-4c3e-8a6f-2d4b6c8e0a13";
    for (name, clique, row) in [("a", "1", "r1"), ("b", "1", "r1"), ("c", "2", "r2")] {
        let node: Node = serde_json::from_value(json!({
            "metadata": { "name": name, "labels": { "nvidia.com/gpu.product": "NVIDIA-GB200",
                "nvidia.com/gpu.count": "4", "nvidia.com/gpu.clique": format!("{rack}.{clique}"),
                "example.com/rack-row": row } },
            "status": {
                "capacity": { "cpu": "144", "memory": "880Gi", "pods": "110", "nvidia.com/gpu": "4" },
                "allocatable": { "cpu": "144", "memory": "880Gi", "pods": "110", "nvidia.com/gpu": "4" },
                "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready" }]
            }
        }))
        .unwrap();
        env.create_node(node).await;
    }
    let path = plugin_path(&env.id);
    let kubeconfig = kubeconfig_path().display().to_string();
    let sel = selector(&env);
    let plugin = |extra: &[&str]| {
        let args = [
            &["gpu-inventory", "--kubeconfig", &kubeconfig, "-l", &sel],
            extra,
        ]
        .concat();
        let out = kubectl(&path, &args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            !text.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code(), text)
    };
    // A new node carries the node lifecycle controller's `not-ready` taint until it is seen Ready, and a
    // tainted node offers nothing (as Kueue leaves it out): the view is asked again until both are counted.
    let nvlink = common::eventually(
        std::time::Duration::from_secs(30),
        "the three nodes untainted and counted",
        || async {
            let (_, table) = plugin(&["--group-by", "nvlink"]);
            let whole = cells(&table, &format!("{rack}.1"))[1..5]
                == ["NVIDIA-GB200", "2", "8", "8"]
                && cells(&table, &format!("{rack}.2"))[2..5] == ["1", "4", "4"];
            whole.then_some(table)
        },
    )
    .await;
    assert_eq!(cells(&nvlink, &format!("{rack}.2"))[2..5], ["1", "4", "4"]);
    // A label no table names is read as a level for the view, in a live scan too.
    let (_, rows) = plugin(&["--group-by", "example.com/rack-row"]);
    assert_eq!(cells(&rows, "r1")[1..5], ["NVIDIA-GB200", "2", "8", "8"]);
    let (_, wide) = plugin(&["-o", "wide"]);
    let header = cells(&wide, "NAME");
    let at = header.iter().position(|h| *h == "NVLINK").expect("NVLINK");
    assert_eq!(cells(&wide, &env.node_name("c"))[at], "5f0c2a9e….2");
    // `fit`: kubectl's flags before it, fit's own after it; the answer and exit code are fit's.
    let fit = |extra: &[&str]| {
        let args = [
            &[
                "gpu-inventory",
                "--kubeconfig",
                &kubeconfig,
                "fit",
                "-l",
                &sel,
            ],
            extra,
        ]
        .concat();
        let out = kubectl(&path, &args);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, json, err) = fit(&["--gpus", "8", "-o", "json"]);
    assert_eq!(code, Some(0), "{json}{err}");
    let answer: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(answer["level"], "nvlink", "{answer}");
    assert_eq!(answer["domains"][0]["name"], format!("{rack}.1"));
    let (code, text, err) = fit(&["--gpus", "12"]);
    assert_eq!(code, Some(1), "no partition offers 12: {text}{err}");
    assert!(text.contains("FITS    no"), "{text}");
}

/// The node's row on the screen.
fn row<'a>(screen: &'a str, node: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.starts_with(&format!("{node} ")))
}

/// The plugin's LIST requests for the test's nodes in the local API server's audit log.
fn node_lists(id: &str) -> usize {
    let log = local_cluster_dir().join("audit.log");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    text.lines()
        .filter(|l| {
            l.contains("\"verb\":\"list\"")
                && l.contains("\"requestURI\":\"/api/v1/nodes?")
                && l.contains(id)
                && l.contains("\"stage\":\"ResponseComplete\"")
        })
        .count()
}

#[tokio::test]
async fn watch_redraws_in_a_terminal_when_a_node_goes_not_ready() {
    let env = TestEnv::new("plugin-watch").await;
    let (a, b) = (gpu_node(&env, "l4-a").await, gpu_node(&env, "l4-b").await);
    let path = plugin_path(&env.id);
    let tmux = Tmux(env.id.clone());
    let kubeconfig = kubeconfig_path().display().to_string();
    let command = format!(
        "kubectl gpu-inventory --watch --kubeconfig {kubeconfig} -l {}",
        selector(&env)
    );
    let env_path = vec![format!("PATH={path}"), "TERM=xterm-256color".to_owned()];
    tmux.start("colour", &env_path, &command);
    let mut no_color = env_path.clone();
    no_color.push("NO_COLOR=1".into());
    tmux.start("plain", &no_color, &command);

    let both_ready = |s: &str| {
        [&a, &b]
            .iter()
            .all(|n| row(s, n).is_some_and(|r| r.contains(" true ")))
    };
    // The first table: the plugin's start and first lists, which it gives up on (and says so, ending the wait)
    // after its FIRST_LIST_TIMEOUT.
    let first_table = Deadline::reaction("kubectl starting the plugin").then(Deadline::new(
        PLUGIN_FIRST_LIST_TIMEOUT,
        "the plugin's first lists (FIRST_LIST_TIMEOUT, src/cmd/plugin/mod.rs)",
    ));
    // A redraw: the plugin's watch event for the change, and the redraw (one reaction).
    let redraw = Deadline::reaction("the plugin's watch and redraw");
    let first = tmux.wait_screen("colour", &first_table, "both nodes Ready", both_ready);
    assert!(
        first.starts_with("kubectl gpu-inventory --watch"),
        "{first}"
    );
    let coloured = tmux.screen("colour", true);
    assert!(
        coloured.contains("\x1b[32mtrue"),
        "Ready in green on a terminal:\n{coloured:?}"
    );
    tmux.wait_screen(
        "plain",
        &first_table,
        "both nodes Ready (NO_COLOR)",
        both_ready,
    );
    let plain = tmux.screen("plain", true);
    assert!(!plain.contains("\x1b[3"), "NO_COLOR: no colour:\n{plain:?}");
    let lists_before = node_lists(&env.id);
    let baseline = Instant::now();

    // The node goes NotReady: the watch redraws within seconds, in place (one table on the screen).
    let changed = Instant::now();
    env.set_ready(&a, "False").await;
    let redrawn = tmux.wait_screen("colour", &redraw, "node a NotReady on screen", |s| {
        row(s, &a).is_some_and(|r| r.contains(" false ") && r.contains("NotReady"))
    });
    eprintln!(
        "redrawn {:?} after the change:\n{redrawn}",
        changed.elapsed()
    );
    assert!(
        row(&redrawn, &b).is_some_and(|r| r.contains(" true ")),
        "{redrawn}"
    );
    assert_eq!(
        redrawn.lines().filter(|l| l.starts_with("NAME ")).count(),
        1,
        "redrawn in place:\n{redrawn}"
    );
    assert!(redrawn.contains("ready_gpu_nodes: 1"), "{redrawn}");
    let coloured = tmux.screen("colour", true);
    assert!(
        coloured.contains("\x1b[31mfalse"),
        "NotReady in red:\n{coloured:?}"
    );
    tmux.wait_screen("plain", &redraw, "node a NotReady (NO_COLOR)", |s| {
        row(s, &a).is_some_and(|r| r.contains(" false "))
    });

    // From a watch, not polling: no LIST of the nodes since the first one (local cluster: its audit log). The
    // window since the baseline lasts at least the plugin's longest watch retry (the operator's WATCH backoff
    // cap, its sources'): a watch that ended and listed again would have done so within it.
    if is_local_cluster() {
        tokio::time::sleep(WATCH_BACKOFF.cap.saturating_sub(baseline.elapsed())).await;
        assert!(
            lists_before >= 2,
            "each plugin listed the nodes once ({lists_before} LISTs)"
        );
        assert_eq!(
            node_lists(&env.id),
            lists_before,
            "the plugin re-listed nodes: polling, not watching"
        );
    } else {
        eprintln!(
            "not the local cluster: no audit log to count LIST requests in; the redraw was checked"
        );
    }
}
