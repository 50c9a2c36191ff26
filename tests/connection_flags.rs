//! kubectl's connection flags against the real local API server (issue #56): `--server` is where the
//! command connects, `--token` who it is, `--as` whom it impersonates, `-n` whose objects are listed; each
//! visibly, by an answer that only that flag explains.

mod common;

use std::process::Output;
use std::time::Duration;

use common::allocation::node;
use common::cluster_access::{kubeconfig_path, write_kubeconfig};
use common::exec_plugin::{NOBODY_TOKEN_USER, local_token_of};
use common::silent_server::refused_addr;
use common::test_env::TEST_LABEL;
use common::{TestEnv, eventually};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, PostParams};
use kube::config::Kubeconfig;
use serde_json::json;

fn scan(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .arg("scan")
        .args(args)
        .args(["--request-timeout", "10s", "--dra-driver="])
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The cluster's kubeconfig and its API server URL.
fn cluster() -> (String, String) {
    let path = kubeconfig_path();
    let kubeconfig = Kubeconfig::read_from(&path).unwrap();
    let context = kubeconfig.current_context.clone().unwrap();
    let cluster_name = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context)
        .and_then(|c| c.context.as_ref())
        .map(|c| c.cluster.clone())
        .unwrap();
    let server = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == cluster_name)
        .and_then(|c| c.cluster.as_ref()?.server.clone())
        .unwrap();
    (path.display().to_string(), server)
}

#[test]
fn server_says_where_to_connect() {
    let (real, server) = cluster();
    // The kubeconfig's own server refuses: only --server explains a scan that reads the cluster.
    let mut moved = Kubeconfig::read_from(&real).unwrap();
    let refused = format!("https://{}", refused_addr());
    for cluster in &mut moved.clusters {
        if let Some(cluster) = cluster.cluster.as_mut() {
            cluster.server = Some(refused.clone());
        }
    }
    let moved = write_kubeconfig(&moved, "connection-flags-moved");
    let moved = moved.to_str().unwrap();
    let without = scan(&["--kubeconfig", moved]);
    assert_eq!(without.status.code(), Some(2), "{}", stderr(&without));
    assert!(
        stderr(&without).contains(&format!("connection refused at {refused}")),
        "{}",
        stderr(&without)
    );
    let with = scan(&["--kubeconfig", moved, "--server", &server, "-o", "json"]);
    assert!(
        matches!(with.status.code(), Some(0 | 1)),
        "--server {server} was not used: {}",
        stderr(&with)
    );
    let status: serde_json::Value = serde_json::from_slice(&with.stdout).unwrap();
    assert!(status.get("nodes").is_some(), "{status}");
}

#[test]
fn token_says_who_is_asking() {
    let (real, _) = cluster();
    let bogus = scan(&["--kubeconfig", &real, "--token", "not-a-token"]);
    let err = stderr(&bogus);
    assert_eq!(bogus.status.code(), Some(2), "{err}");
    assert!(err.contains("401"), "a bogus --token was not sent: {err}");
    assert!(!err.contains("operator retries"), "{err}");
    // The token file's second user has no right to list nodes, and no test gives it one (the first is bound
    // the operator's RBAC by tests/credentials.rs while it runs): the server names it.
    let token = local_token_of(NOBODY_TOKEN_USER);
    let known = scan(&["--kubeconfig", &real, "--token", &token]);
    let err = stderr(&known);
    assert_eq!(known.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("User \"{NOBODY_TOKEN_USER}\"")) && err.contains("403"),
        "{err}"
    );
}

#[test]
fn as_impersonates_a_user_and_its_refusal_names_it() {
    let (real, _) = cluster();
    let user = "gpuinv-nobody";
    let output = scan(&[
        "--kubeconfig",
        &real,
        "--as",
        user,
        "--as-group",
        "gpuinv-nobodies",
    ]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("User \"{user}\" cannot list resource \"nodes\"")),
        "--as was not sent, or the refusal does not name the user: {err}"
    );
    assert!(err.contains("grant the missing permission"), "{err}");
}

/// A pod of `gpus` GPUs bound to `node` by `spec.nodeName`.
fn bound_pod(name: &str, gpus: u32, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "nodeName": node,
            "automountServiceAccountToken": false,
            "containers": [{ "name": "cuda", "image": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04",
                             "resources": { "limits": { "nvidia.com/gpu": gpus.to_string() } } }],
        }
    }))
    .unwrap()
}

/// The holders of the first node in a status document, as `namespace/name`.
fn holders(status: &serde_json::Value) -> Vec<String> {
    status["nodes"][0]["holders"]
        .as_array()
        .map(|holders| {
            holders
                .iter()
                .map(|h| {
                    format!(
                        "{}/{}",
                        h["namespace"].as_str().unwrap_or("?"),
                        h["name"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The first JSON document the plugin's `--watch` prints with `args`, read from its pipe within 60 s; the
/// watch is then stopped.
fn first_watched(args: &[&str]) -> serde_json::Value {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "target/test-logs/connection-flags-{}-bin",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("kubectl-gpu_inventory");
    if !link.exists() {
        let _ = std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_gpu-inventory-operator"), &link);
    }
    let mut child = std::process::Command::new(&link)
        .arg("--watch")
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent-home")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let first = serde_json::Deserializer::from_reader(stdout)
            .into_iter::<serde_json::Value>()
            .next();
        let _ = send.send(first);
    });
    let first = receive.recv_timeout(Duration::from_secs(60));
    let _ = child.kill();
    let _ = child.wait();
    match first {
        Ok(Some(Ok(document))) => document,
        other => panic!("no JSON document from the plugin's --watch {args:?}: {other:?}"),
    }
}

#[tokio::test]
async fn namespace_lists_one_namespaces_holders_in_scan_and_the_plugins_watch() {
    let env = TestEnv::new("namespace-flag").await;
    let (real, _) = cluster();
    let gfd = json!({ "nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8" });
    let gpus = env
        .create_node(node("gpus", gfd, &[("nvidia.com/gpu", "8")]))
        .await;
    let other = format!("{}-b", env.id);
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    let ns: Namespace = serde_json::from_value(json!({ "metadata": { "name": other } })).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    for (namespace, name, gpus_held) in [(&env.namespace, "mine", 2), (&other, "theirs", 3)] {
        let pods: Api<Pod> = Api::namespaced(env.client.clone(), namespace);
        pods.create(&PostParams::default(), &bound_pod(name, gpus_held, &gpus))
            .await
            .unwrap();
    }
    let selector = format!("{TEST_LABEL}={}", env.id);
    let json_scan = |extra: &[&str]| {
        let out = scan(
            &[
                &["--kubeconfig", &real, "-l", &selector, "-o", "json"][..],
                extra,
            ]
            .concat(),
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()
    };
    let mut both = [format!("{}/mine", env.namespace), format!("{other}/theirs")];
    both.sort();
    let everyone = eventually(Duration::from_secs(60), "both pods held", || async {
        let status = json_scan(&[]);
        let mut held = holders(&status);
        held.sort();
        (held == both).then_some(status)
    })
    .await;
    // -n lists the namespace's holders; the node's counts stay the cluster's (5 of 8 held).
    let theirs = json_scan(&["-n", &other]);
    assert_eq!(holders(&theirs), [format!("{other}/theirs")], "{theirs}");
    assert_eq!(
        theirs["nodes"][0]["free"], everyone["nodes"][0]["free"],
        "{theirs}"
    );
    assert_eq!(
        theirs["nodes"][0]["free"]["nvidia.com/gpu"],
        json!(3),
        "{theirs}"
    );
    // The plugin's watch lists the same.
    let watched = first_watched(&[
        "--kubeconfig",
        &real,
        "-l",
        &selector,
        "-n",
        &other,
        "-o",
        "json",
    ]);
    assert_eq!(holders(&watched), [format!("{other}/theirs")], "{watched}");
    let watched = first_watched(&["--kubeconfig", &real, "-l", &selector, "-o", "json"]);
    assert_eq!(holders(&watched).len(), 2, "{watched}");
    let _ = namespaces.delete(&other, &DeleteParams::default()).await;
    env.cleanup().await;
}
