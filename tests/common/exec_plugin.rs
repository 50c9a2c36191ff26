//! An exec credential plugin for the operator's kubeconfig: a shell script in a temp dir that returns the
//! local cluster's token (hack/local-cluster.sh: pki/tokens.csv, user `gpuinv-token-user`) with an
//! `expirationTimestamp` a few seconds past kube's 60 s refresh margin, or fails the way a logged-out cloud
//! CLI does. The user gets the operator's RBAC from deploy/ (the same rules, bound to it).

use std::path::{Path, PathBuf};

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::config::Kubeconfig;
use serde_json::{Value, json};

use super::cluster_access::{is_local_cluster, kubeconfig_path, local_cluster_dir};
use super::test_env::{TEST_LABEL, TestEnv};

/// The user of the local cluster's token file.
pub const TOKEN_USER: &str = "gpuinv-token-user";
/// A second user of the token file that no test grants anything: its requests are always refused, whatever
/// runs beside it (tests/credentials.rs binds [`TOKEN_USER`] the operator's RBAC while it runs).
pub const NOBODY_TOKEN_USER: &str = "gpuinv-token-nobody";
/// The kubeconfig's name for that user (what the operator's messages must name).
pub const KUBECONFIG_USER: &str = "exec-plugin-user";

/// Seconds past kube's 60 s margin that a token stays in use: kube runs the plugin again after that.
pub const TOKEN_USABLE_SECS: u32 = 3;

/// The token the local API server accepts for [`TOKEN_USER`].
pub fn local_token() -> String {
    local_token_of(TOKEN_USER)
}

/// The token the local API server accepts for `user` (one of the token file's users).
pub fn local_token_of(user: &str) -> String {
    assert!(
        is_local_cluster(),
        "the exec credential tests need the local cluster's token file (hack/local-cluster.sh); \
         unset GPUINV_TEST_KUBECONFIG or skip tests matching exec_credential"
    );
    let path = local_cluster_dir().join("pki/tokens.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (a cluster from before --token-auth-file: `hack/local-cluster.sh down` and `up`)",
            path.display()
        )
    });
    let line = text
        .lines()
        .find(|l| l.split(',').nth(1) == Some(user))
        .unwrap_or_else(|| {
            panic!(
                "no {user} in {} (a cluster from before that user: `hack/local-cluster.sh down` and `up`)",
                path.display()
            )
        });
    line.split(',').next().unwrap().to_owned()
}

/// The plugin script and its state files (token, failure, call count) in one directory.
pub struct ExecPlugin {
    /// The directory.
    pub dir: PathBuf,
}

impl ExecPlugin {
    /// Writes the script into a fresh temp dir; it returns `token` until told otherwise.
    pub fn new(id: &str, token: &str) -> ExecPlugin {
        let dir = std::env::temp_dir().join(format!("gpuinv-{id}-exec"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let script = r#"#!/bin/sh
# A test's exec credential plugin: counts its calls, fails while "failure" exists (printing it on stderr),
# else returns the token in "token", expiring a few seconds after kube's 60 s refresh margin.
dir=$(dirname "$0")
echo call >>"$dir/calls"
if [ -e "$dir/failure" ]; then
  cat "$dir/failure" >&2
  exit 1
fi
expires=$(date -u -d "+$((60 + USABLE_SECS)) seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$(cat "$dir/token")" "$expires"
"#
        .replace("USABLE_SECS", &TOKEN_USABLE_SECS.to_string());
        let path = dir.join("get-token.sh");
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plugin = ExecPlugin { dir };
        plugin.returns(token);
        plugin
    }

    /// The script's path (the kubeconfig's `exec.command`).
    pub fn command(&self) -> PathBuf {
        self.dir.join("get-token.sh")
    }

    /// From now on the plugin returns `token` (rejected if it is not the cluster's).
    pub fn returns(&self, token: &str) {
        std::fs::write(self.dir.join("token"), token).unwrap();
        let _ = std::fs::remove_file(self.dir.join("failure"));
    }

    /// From now on the plugin exits 1, printing `stderr`.
    pub fn fails_with(&self, stderr: &str) {
        std::fs::write(self.dir.join("failure"), stderr).unwrap();
    }

    /// How often it ran.
    pub fn calls(&self) -> usize {
        std::fs::read_to_string(self.dir.join("calls"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// A kubeconfig for the test cluster whose user is this plugin (`--exec-plugin-arg` shows in messages).
    pub fn kubeconfig(&self, name: &str) -> PathBuf {
        let mut config =
            Kubeconfig::read_from(kubeconfig_path()).expect("read the test kubeconfig");
        let user: kube::config::NamedAuthInfo = serde_json::from_value(json!({
            "name": KUBECONFIG_USER,
            "user": { "exec": { "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": self.command(), "args": ["--cluster", "local"] } }
        }))
        .unwrap();
        config.auth_infos = vec![user];
        for context in &mut config.contexts {
            if let Some(c) = context.context.as_mut() {
                c.user = Some(KUBECONFIG_USER.to_owned());
            }
        }
        super::cluster_access::write_kubeconfig(&config, &format!("{name}-exec"))
    }
}

impl Drop for ExecPlugin {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// deploy/'s RBAC for `user`: each ClusterRole, and each Role in the test's namespace (the one about Events
/// of GpuInventories stays in "default"), copied under the test's name and bound to the user. Removed on drop.
pub struct DeployRbac {
    env_client: kube::Client,
    cluster_roles: Vec<String>,
    roles: Vec<(String, String)>,
}

fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl DeployRbac {
    /// Grants the rules of deploy/rbac.yaml and deploy/rbac-crd-install.yaml to `user`.
    pub async fn grant(env: &TestEnv, user: &str) -> DeployRbac {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let apply = PatchParams::apply("gpuinv-test").force();
        let subject =
            json!([{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }]);
        let mut rbac = DeployRbac {
            env_client: env.client.clone(),
            cluster_roles: Vec::new(),
            roles: Vec::new(),
        };
        for file in ["deploy/rbac.yaml", "deploy/rbac-crd-install.yaml"] {
            for doc in yaml_docs(&root.join(file)) {
                let name = format!("{}-{}", env.id, doc["metadata"]["name"].as_str().unwrap());
                let labels = json!({ TEST_LABEL: env.id });
                match doc["kind"].as_str().unwrap() {
                    "ClusterRole" => {
                        let role: ClusterRole = serde_json::from_value(json!({
                            "metadata": { "name": name, "labels": labels }, "rules": doc["rules"] }))
                        .unwrap();
                        Api::<ClusterRole>::all(env.client.clone())
                            .patch(&name, &apply, &Patch::Apply(&role))
                            .await
                            .unwrap();
                        let binding: ClusterRoleBinding = serde_json::from_value(json!({
                            "metadata": { "name": name, "labels": labels },
                            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                         "name": name },
                            "subjects": subject }))
                        .unwrap();
                        Api::<ClusterRoleBinding>::all(env.client.clone())
                            .patch(&name, &apply, &Patch::Apply(&binding))
                            .await
                            .unwrap();
                        rbac.cluster_roles.push(name);
                    }
                    "Role" => {
                        let namespace = match doc["metadata"]["namespace"].as_str() {
                            Some("default") => "default".to_owned(),
                            _ => env.namespace.clone(),
                        };
                        let role: Role = serde_json::from_value(json!({
                            "metadata": { "name": name, "labels": labels }, "rules": doc["rules"] }))
                        .unwrap();
                        Api::<Role>::namespaced(env.client.clone(), &namespace)
                            .patch(&name, &apply, &Patch::Apply(&role))
                            .await
                            .unwrap();
                        let binding: RoleBinding = serde_json::from_value(json!({
                            "metadata": { "name": name, "labels": labels },
                            "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
                            "subjects": subject }))
                        .unwrap();
                        Api::<RoleBinding>::namespaced(env.client.clone(), &namespace)
                            .patch(&name, &apply, &Patch::Apply(&binding))
                            .await
                            .unwrap();
                        rbac.roles.push((namespace, name));
                    }
                    // The bindings are made above, for the user instead of the service account.
                    _ => {}
                }
            }
        }
        rbac
    }

    /// Deletes what [`grant`](Self::grant) made.
    pub async fn revoke(&self) {
        let dp = DeleteParams::default();
        for name in &self.cluster_roles {
            let _ = Api::<ClusterRoleBinding>::all(self.env_client.clone())
                .delete(name, &dp)
                .await;
            let _ = Api::<ClusterRole>::all(self.env_client.clone())
                .delete(name, &dp)
                .await;
        }
        for (namespace, name) in &self.roles {
            let _ = Api::<RoleBinding>::namespaced(self.env_client.clone(), namespace)
                .delete(name, &dp)
                .await;
            let _ = Api::<Role>::namespaced(self.env_client.clone(), namespace)
                .delete(name, &dp)
                .await;
        }
    }
}
