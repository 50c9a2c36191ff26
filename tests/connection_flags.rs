//! kubectl's connection flags against the real local API server (issue #56): `--server` is where the
//! command connects, `--token` who it is, `--as` whom it impersonates; each visibly, by an answer that only
//! that flag explains.

mod common;

use std::process::Output;

use common::cluster_access::{kubeconfig_path, write_kubeconfig};
use common::exec_plugin::{NOBODY_TOKEN_USER, local_token_of};
use common::silent_server::refused_addr;
use kube::config::Kubeconfig;

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
