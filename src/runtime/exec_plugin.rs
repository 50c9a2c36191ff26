//! Running a kubeconfig user's exec credential plugin (`aws eks get-token`, `gke-gcloud-auth-plugin`,
//! `kubelogin`, ...) under a deadline. kube runs it with `std::process::Command::output` on a blocking
//! thread: a plugin that hangs (an SSO login waiting for a browser) hangs the command, and nothing stops it
//! when the command gives up. Here it runs as kube would run it (the same environment and
//! `KUBERNETES_EXEC_INFO`, never interactive) in a process group of its own, and past the deadline, or when
//! the command stops waiting for it, the whole group is killed and the plugin reaped: no process is left
//! behind, the plugin's own children included.

use std::process::Stdio;
use std::time::Instant;

use kube::config::ExecConfig;
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::credentials;
use super::waiting::bounded;
use crate::error::{Error, Result};

/// What the plugin gave: a token (kube takes certificates from its own run of the plugin).
#[derive(Debug, Default)]
pub(crate) struct Credential {
    /// `status.token`.
    pub(crate) token: Option<String>,
}

#[derive(Deserialize)]
struct ExecCredential {
    status: Option<ExecStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecStatus {
    token: Option<String>,
    client_certificate_data: Option<String>,
}

/// Runs the plugin by `deadline` (`None`: no deadline) and reads its ExecCredential.
pub(crate) async fn run(
    exec: &ExecConfig,
    deadline: Option<Instant>,
    timeout: Option<std::time::Duration>,
    progress: bool,
) -> Result<Credential> {
    let line = command_line(exec);
    let fail = |what: String| Error::Credentials(credentials::plugin_failed(&line, &what));
    let mut command = command(exec).map_err(&fail)?;
    let mut child = command.spawn().map_err(|e| {
        let hint = exec
            .install_hint
            .as_deref()
            .map(|h| format!("; {h}"))
            .unwrap_or_default();
        fail(format!("cannot start it: {e}{hint}"))
    })?;
    // Killed, with its children, however this function ends before the plugin does.
    let mut group = Group(child.id());
    // And killed with its children when Ctrl-C stops the command while it runs.
    let _listed = child.id().map(super::plugin_groups::list);
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let ran = async {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let read_out = async {
            if let Some(pipe) = stdout.as_mut() {
                let _ = pipe.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(pipe) = stderr.as_mut() {
                let _ = pipe.read_to_end(&mut err).await;
            }
        };
        let (status, (), ()) = tokio::join!(child.wait(), read_out, read_err);
        (status, out, err)
    };
    let what = format!("the credential plugin `{line}`");
    let Some((status, out, err)) = bounded(&what, deadline, timeout, progress, ran).await else {
        group.kill();
        // Reaped now, not left a zombie for the rest of the command.
        let _ = child.wait().await;
        return Err(fail(
            "gave no credential before --request-timeout ran out, and was stopped (its process group \
             killed); run it by hand to see whether it waits for a login (e.g. `aws sso login`, \
             `gcloud auth login`, `az login`), or give it longer with --request-timeout"
                .to_owned(),
        ));
    };
    group.0 = None;
    let status = status.map_err(|e| fail(format!("cannot wait for it: {e}")))?;
    if !status.success() {
        return Err(fail(credentials::exit_and_stderr(&status, &err)));
    }
    let text = String::from_utf8_lossy(&out);
    let parsed: ExecCredential = serde_saphyr::from_str(&text).map_err(|e| {
        fail(format!(
            "printed no ExecCredential (client.authentication.k8s.io) on stdout: {e}"
        ))
    })?;
    match parsed.status {
        Some(ExecStatus {
            token: Some(token), ..
        }) => Ok(Credential { token: Some(token) }),
        Some(ExecStatus {
            client_certificate_data: Some(_),
            ..
        }) => Ok(Credential::default()),
        _ => Err(fail(
            "printed an ExecCredential with neither a token nor a certificate".to_owned(),
        )),
    }
}

/// The plugin's command line, for messages.
fn command_line(exec: &ExecConfig) -> String {
    let mut line = exec.command.clone().unwrap_or_default();
    for arg in exec.args.iter().flatten() {
        line.push(' ');
        line.push_str(arg);
    }
    line
}

/// The process as kube starts it, never interactive (stdin closed, stderr kept for the error), in a process
/// group of its own.
fn command(exec: &ExecConfig) -> std::result::Result<tokio::process::Command, String> {
    let program = exec
        .command
        .as_deref()
        .ok_or_else(|| "the kubeconfig's exec entry names no command".to_owned())?;
    let mut command = tokio::process::Command::new(program);
    command.args(exec.args.iter().flatten());
    for entry in exec.env.iter().flatten() {
        if let (Some(name), Some(value)) = (entry.get("name"), entry.get("value")) {
            command.env(name, value);
        }
    }
    for name in exec.drop_env.iter().flatten() {
        command.env_remove(name);
    }
    let mut spec = serde_json::json!({ "interactive": false });
    if exec.provide_cluster_info {
        let cluster = exec
            .cluster
            .as_ref()
            .ok_or_else(|| "provideClusterInfo is set but the cluster is unknown".to_owned())?;
        spec["cluster"] = serde_json::to_value(cluster).map_err(|e| e.to_string())?;
    }
    let info = serde_json::json!({
        "apiVersion": exec.api_version,
        "kind": "ExecCredential",
        "spec": spec,
    });
    command
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    // In its own group the plugin does not get the terminal's Ctrl-C, which kills the command at once: the
    // kernel kills the plugin when the thread that started it dies, and `plugin_groups` its children.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(2) only, between fork and exec, as pre_exec requires (async-signal-safe, no allocation).
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    Ok(command)
}

/// The plugin's process group (its id is the plugin's pid), killed on drop unless it ended by itself.
struct Group(Option<u32>);

impl Group {
    fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.0.take().and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) on a process group this process made; no memory is touched.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(script: &str) -> ExecConfig {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "sh",
            "args": ["-c", script],
            "env": [{"name": "GREETING", "value": "hi"}],
        }))
        .unwrap()
    }

    #[tokio::test]
    async fn a_token_is_read_from_the_plugins_exec_credential() {
        let script = r#"test "$GREETING" = hi || exit 3
echo "$KUBERNETES_EXEC_INFO" | grep -q '"interactive":false' || exit 4
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"abc"}}'"#;
        let credential = run(&exec(script), None, None, false).await.unwrap();
        assert_eq!(credential.token.as_deref(), Some("abc"));
    }

    #[tokio::test]
    async fn a_failing_plugin_is_said_with_its_stderr() {
        let message = run(&exec("echo 'token expired' >&2; exit 1"), None, None, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("token expired") && message.contains("sh -c"),
            "{message}"
        );
    }

    #[tokio::test]
    async fn a_plugin_past_its_deadline_is_killed_with_its_children() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
            "target/test-logs/exec-plugin-unit-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let pids = dir.join("pids");
        let script = format!("sleep 60 & echo $$ $! > {}; wait", pids.display());
        let started = Instant::now();
        let deadline = Some(started + std::time::Duration::from_millis(700));
        let message = run(&exec(&script), deadline, None, false)
            .await
            .unwrap_err()
            .to_string();
        assert!(started.elapsed() < std::time::Duration::from_secs(3));
        assert!(
            message.contains("gave no credential before --request-timeout"),
            "{message}"
        );
        let text = std::fs::read_to_string(&pids).unwrap();
        for pid in text.split_whitespace() {
            assert!(
                !running(pid),
                "process {pid} of the plugin is still running"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Whether `pid` runs (a zombie is no longer running: its parent has not read its status yet).
    fn running(pid: &str) -> bool {
        for _ in 0..50 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => return false,
                Ok(stat)
                    if stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|s| s.trim_start().starts_with('Z')) =>
                {
                    return false;
                }
                Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
            }
        }
        true
    }
}
