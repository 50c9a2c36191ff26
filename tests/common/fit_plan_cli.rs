//! `gpu-inventory-operator fit --plan ... -o json` run live, as the test cluster's admin or as a user of
//! narrower rights, and what it said: its exit code, its JSON answer and its stderr.

use std::process::Command;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::cluster_access::kubeconfig_path;
use super::test_env::{DeleteOnDrop, TEST_LABEL};

/// What one `fit` run said.
pub struct FitRun {
    /// Its exit code.
    pub code: Option<i32>,
    /// Its `-o json` answer (`Null` when stdout held none).
    pub answer: Value,
    /// Its stderr.
    pub stderr: String,
}

/// Runs `fit <args> -o json` against the test cluster, as `user` (`--as`) where one is given.
pub fn fit_as(args: &[&str], user: Option<&str>) -> FitRun {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"));
    command.arg("fit").args(args).args(["-o", "json"]);
    if let Some(user) = user {
        command.args(["--as", user]);
    }
    let output = command
        .env("KUBECONFIG", kubeconfig_path())
        .output()
        .expect("run fit");
    FitRun {
        code: output.status.code(),
        answer: serde_json::from_slice(&output.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A user `<id>-no-budgets` who may read what `fit --dra-driver=` reads (nodes, pods) but not
/// PodDisruptionBudgets, and the guard that deletes the role and its binding.
pub async fn user_without_budgets(client: &Client, id: &str) -> (String, DeleteOnDrop) {
    let name = format!("{id}-no-budgets");
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { TEST_LABEL: id } },
        "rules": [{ "apiGroups": [""], "resources": ["nodes", "pods"], "verbs": ["get", "list"] }],
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { TEST_LABEL: id } },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name }],
    }))
    .unwrap();
    let guard = DeleteOnDrop(vec![
        format!("clusterrolebinding/{name}"),
        format!("clusterrole/{name}"),
    ]);
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    (name, guard)
}
