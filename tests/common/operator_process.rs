//! The operator binary run as a child process for a test (scoped to its nodes and inventories): its
//! arguments, its log, its HTTP endpoints and metrics, its signals and exit.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::Api;
use testkit::waits::{Deadline, OperatorPeriods};

use super::cluster_access::kubeconfig_path;
use super::cluster_periods::ClusterPeriods;
use super::test_env::{TEST_LABEL, TestEnv};
use super::waiting::wait_for;

/// The value of one series (`name{labels}` exactly) in an OpenMetrics text, if it is there.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

impl TestEnv {
    /// The operator's arguments that scope it to this test (kubeconfig, namespace, selectors, requeue).
    pub fn operator_args(&self, requeue: &str) -> Vec<String> {
        let selector = format!("{TEST_LABEL}={}", self.id);
        vec![
            "run".into(),
            "--kubeconfig".into(),
            kubeconfig_path().display().to_string(),
            "--namespace".into(),
            self.namespace.clone(),
            "--node-label-selector".into(),
            selector.clone(),
            "--inventory-label-selector".into(),
            selector,
            "--default-inventory".into(),
            self.inventory_name(),
            "--requeue".into(),
            requeue.into(),
            "--metrics-addr".into(),
            "127.0.0.1:0".into(),
        ]
    }

    /// Waits until the namespace's `default` ServiceAccount exists: ServiceAccount admission refuses the
    /// namespace's pods until then, and kube-controller-manager's serviceaccount controller creates it in
    /// reaction to the new namespace.
    pub async fn wait_service_account(&self) {
        let accounts: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &self.namespace);
        wait_for(
            ClusterPeriods::get().controller_reaction(
                "kube-controller-manager's serviceaccount controller, to the new namespace",
            ),
            &format!("the ServiceAccount default of namespace {}", self.namespace),
            || async {
                match accounts.get_opt("default").await {
                    Ok(Some(_)) => Ok(()),
                    Ok(None) => Err("no ServiceAccount default yet".to_owned()),
                    Err(e) => Err(format!("reading it: {e}")),
                }
            },
        )
        .await;
    }
    /// Starts the operator binary scoped to this test.
    pub fn start_operator(&self, requeue: &str) -> OperatorProcess {
        OperatorProcess::start(&self.id, &self.operator_args(requeue))
    }

    /// Starts the operator scoped to this test, with extra flags (`--flag value` pairs replace the defaults).
    pub fn start_operator_with(&self, requeue: &str, extra: &[&str]) -> OperatorProcess {
        let mut args = self.operator_args(requeue);
        let mut extra = extra.iter().peekable();
        while let Some(arg) = extra.next() {
            let value = extra.next_if(|v| !v.starts_with("--"));
            match (args.iter().position(|a| a == arg), value) {
                (Some(at), Some(value)) => args[at + 1] = (*value).to_owned(),
                (_, value) => args.extend(
                    std::iter::once(*arg)
                        .chain(value.copied())
                        .map(str::to_owned),
                ),
            }
        }
        OperatorProcess::start(&self.id, &args)
    }
}

/// A minimal HTTP/1.0 GET (the operator's endpoint is plain HTTP on loopback; `testkit::http`): (status code,
/// body). Panics when the exchange fails.
pub async fn http_get(addr: &str, path: &str) -> (u16, String) {
    testkit::http::get(addr, path)
        .await
        .unwrap_or_else(|e| panic!("GET http://{addr}{path}: {e}"))
}

/// The operator binary running as a child process, its output captured to `target/test-logs/<id>.log`.
pub struct OperatorProcess {
    child: Child,
    /// Where its stderr/stdout go.
    pub log_path: PathBuf,
    /// Its arguments (its periods are read from them: [`OperatorProcess::periods`]).
    args: Vec<String>,
}

impl OperatorProcess {
    /// Spawns the binary with `args` (RUST_LOG from the environment, else the binary's default filter).
    pub fn start(id: &str, args: &[String]) -> OperatorProcess {
        Self::start_with_env(id, args, &[])
    }

    /// Like [`start`](Self::start), with extra environment variables (e.g. `RUST_LOG`).
    pub fn start_with_env(id: &str, args: &[String], env: &[(&str, &str)]) -> OperatorProcess {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
        std::fs::create_dir_all(&dir).unwrap();
        static N: AtomicU32 = AtomicU32::new(0);
        let log_path = dir.join(format!("{id}-{}.log", N.fetch_add(1, Ordering::Relaxed)));
        let log = std::fs::File::create(&log_path).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
            .args(args)
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn the operator binary");
        OperatorProcess {
            child,
            log_path,
            args: args.to_vec(),
        }
    }

    /// Its periods (requeue, lease, grace), read from its arguments with the operator's own parser: the
    /// deadlines of waits on it derive from them.
    pub fn periods(&self) -> OperatorPeriods {
        OperatorPeriods::of(&self.args)
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The address of its HTTP endpoint, from its log: logged once it has connected (one reaction of its
    /// start-up; an unreachable server is retried up to `--startup-timeout` first).
    pub async fn http_addr(&self) -> String {
        let deadline = Deadline::reaction("the operator's start-up to its HTTP server");
        wait_for(
            deadline,
            "the operator's HTTP address in its log",
            || async {
                let log = self.log();
                testkit::http::addr_in_log(&log).ok_or_else(|| {
                    let last = log.lines().last().unwrap_or("(empty)");
                    format!("no address in its log; its last line: {last}")
                })
            },
        )
        .await
    }

    /// GET `path` on its HTTP endpoint: (status code, body).
    pub async fn http_get(&self, path: &str) -> (u16, String) {
        let addr = self.http_addr().await;
        http_get(&addr, path).await
    }

    /// Sends a signal (`TERM`, `KILL`, `INT`).
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Waits for exit up to `timeout`; returns the exit code (None: killed by a signal or still running).
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<Option<i32>> {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.code());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A failing test shows what the operator said: the end of its log, where the cause usually is.
        if std::thread::panicking() {
            let log = self.log();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(OPERATOR_LOG_TAIL)..];
            eprintln!(
                "--- the operator's log, last {} of {} lines ---\n{}\n--- end of the operator's log ---",
                tail.len(),
                lines.len(),
                tail.join("\n")
            );
        }
    }
}

/// How many lines of an operator's log a failing test prints.
const OPERATOR_LOG_TAIL: usize = 80;

/// A GpuInventory status in one paragraph (what a wait on it last saw).
pub fn inventory_summary(status: &gpu_inventory_operator::crd::GpuInventoryStatus) -> String {
    let nodes: Vec<String> = status
        .nodes
        .iter()
        .take(20)
        .map(|n| {
            let issues: Vec<&str> = n.issues.iter().map(|i| i.reason.as_str()).collect();
            format!(
                "{} (ready {}, {} GPUs, issues {issues:?})",
                n.name, n.ready, n.count
            )
        })
        .collect();
    format!(
        "totalGpuNodes {}, readyGpuNodes {}, totalGpus {}, omittedNodes {:?}; nodes: {}",
        status.total_gpu_nodes,
        status.ready_gpu_nodes,
        status.total_gpus,
        status.omitted_nodes,
        nodes.join("; ")
    )
}
