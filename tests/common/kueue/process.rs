//! Kueue's controller manager as a child process of a test: its Configuration (tests/fixtures/kueue), its
//! self-signed certificate, its log, and what it logged.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use testkit::waits::Deadline;
use tokio::sync::{Mutex, MutexGuard};

use super::{install_crds, kueue_binary};
use crate::common::cluster_access::kubeconfig_path;
use crate::common::test_env::{TestEnv, fixture_path};
use crate::common::waiting::wait_for;

/// Kueue's feature gates for the referee. TopologyAwareScheduling is beta and on by default since v0.14; it is
/// named so that a Kueue without it fails to start instead of admitting without topology. VisibilityOnDemand
/// would start an aggregated API server of its own, which needs an APIService and a fixed port.
pub const FEATURE_GATES: &str = "TopologyAwareScheduling=true,VisibilityOnDemand=false";

/// Log verbosity: 5 is where Kueue logs each change to its TAS cache of non-TAS pods, which
/// [`KueueProcess::wait_logged`] waits for (docs/kueue-referee.md, "Waiting for Kueue").
const LOG_LEVEL: &str = "5";

/// How many lines of Kueue's log a failing test prints.
const LOG_TAIL: usize = 60;

/// Kueue is cluster-wide: it admits every Workload of every LocalQueue it knows. Two at once would both admit
/// the same Workloads, so the tests that run one take turns, across test binaries too (`make test` runs
/// binaries side by side): each holds this guard while its Kueue runs.
pub async fn one_at_a_time() -> KueueTurn {
    static TURN: Mutex<()> = Mutex::const_new(());
    let in_process = TURN.lock().await;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs/kueue-turn.lock");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // The lock is the kernel's (flock): released when the file closes, also when a test process dies.
    let file = tokio::task::spawn_blocking(move || {
        file.lock()
            .unwrap_or_else(|e| panic!("locking {}: {e}", path.display()));
        file
    })
    .await
    .unwrap();
    KueueTurn {
        _file: file,
        _in_process: in_process,
    }
}

/// One test's turn with Kueue: this process's and the other test binaries'.
pub struct KueueTurn {
    _file: std::fs::File,
    _in_process: MutexGuard<'static, ()>,
}

/// A running Kueue, stopped when dropped.
pub struct KueueProcess {
    child: Child,
    /// Its stdout and stderr (JSON lines).
    pub log_path: PathBuf,
}

impl KueueProcess {
    /// Installs the CRDs (once) and starts Kueue for `env`: its Configuration and certificate under
    /// `target/test-logs/<id>-kueue/`, its log at `target/test-logs/<id>-kueue.log`.
    pub fn start(env: &TestEnv) -> KueueProcess {
        install_crds();
        let logs = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
        let dir = logs.join(format!("{}-kueue", env.id));
        let certs = dir.join("certs");
        std::fs::create_dir_all(&certs).unwrap();
        self_signed_certificate(&certs);
        let config = dir.join("configuration.yaml");
        let template = std::fs::read_to_string(fixture_path("kueue/configuration.yaml")).unwrap();
        let text = template
            .replace("${NAMESPACE}", &env.namespace)
            .replace("${WEBHOOK_PORT}", &free_port().to_string())
            .replace("${CERT_DIR}", certs.to_str().unwrap());
        std::fs::write(&config, text).unwrap();
        let log_path = logs.join(format!("{}-kueue.log", env.id));
        let log = std::fs::File::create(&log_path).unwrap();
        let child = Command::new(kueue_binary())
            .arg("--config")
            .arg(&config)
            .arg(format!("--feature-gates={FEATURE_GATES}"))
            .arg(format!("--zap-log-level={LOG_LEVEL}"))
            .env("KUBECONFIG", kubeconfig_path())
            // hack/go/kueue/build.sh's overlay: the metrics server's certificate, which Kueue reads at start-up
            // even with metrics off (docs/kueue-referee.md).
            .env("GPUINV_KUEUE_METRICS_CERT_DIR", &certs)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn kueue");
        KueueProcess { child, log_path }
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// Panics with the end of its log if it has exited.
    pub fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!(
                "Kueue exited ({status}); the end of its log:\n{}",
                self.log_tail()
            );
        }
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
    }

    /// Waits until Kueue has logged a line with message `msg` that also holds every one of `fields` (strings as
    /// they appear in its JSON, e.g. a pod's name quoted): one reaction of Kueue to the change the line is about.
    pub async fn wait_logged(&mut self, msg: &str, fields: &[&str], what: &str) {
        let msg = format!("\"msg\":\"{msg}\"");
        wait_for(Deadline::reaction("Kueue"), what, || {
            // A Kueue that exited logs nothing more: say so now, not at the deadline.
            self.assert_running();
            let (log_path, msg) = (self.log_path.clone(), msg.clone());
            async move {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                let found = log
                    .lines()
                    .any(|l| l.contains(&msg) && fields.iter().all(|f| l.contains(f)));
                if found {
                    Ok(())
                } else {
                    Err(format!(
                        "no line with {msg} and {fields:?} in {}",
                        log_path.display()
                    ))
                }
            }
        })
        .await;
    }
}

impl Drop for KueueProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!(
                "--- Kueue's log ({}), last {LOG_TAIL} lines ---\n{}\n--- end of Kueue's log ---",
                self.log_path.display(),
                self.log_tail()
            );
        }
    }
}

/// A port free on loopback now, for Kueue's webhook server (it has no "any port": 0 means its default, 9443).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on loopback")
        .port()
}

/// `tls.crt` and `tls.key` in `dir`: a self-signed P-256 certificate for Kueue's webhook and metrics servers,
/// which must have one to start although nothing connects to them.
fn self_signed_certificate(dir: &Path) {
    let out = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=kueue-referee"])
        .arg("-keyout")
        .arg(dir.join("tls.key"))
        .arg("-out")
        .arg(dir.join("tls.crt"))
        .output()
        .expect("run openssl (the CLI is a prerequisite, CONTRIBUTING.md)");
    assert!(
        out.status.success(),
        "openssl req failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
