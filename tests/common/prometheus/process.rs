//! Prometheus as a child process of a test: its TSDB back-filled from the test's series by promtool, a
//! configuration without scrape jobs (the history is all there is), its log, and its query API for diagnostics.
//!
//! Back-filling up to the present needs nothing special: `promtool tsdb create-blocks-from openmetrics` writes
//! blocks (aligned to two hours) for any timestamps, the current ones and future ones included, and a
//! Prometheus started on them serves them with an empty head. Instant queries see a series until 5 minutes
//! (the lookback delta) after its last sample, so a history that ends at "now" reads as current for 5 minutes;
//! a test that runs longer extends its series past now.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::openmetrics::{Series, render};
use super::{prometheus_binary, promtool_binary};

/// How long Prometheus may take to answer `/-/ready` with 200 (it opens the back-filled blocks first; well
/// under a second for a test's history).
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long [`PrometheusProcess::stop`] waits for it to exit after SIGTERM before it kills it.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// How many lines of its log a failing test prints.
const LOG_TAIL: usize = 40;

/// Its configuration: no scrape jobs, no rules; the data is back-filled.
const CONFIG: &str = "# tests/common/prometheus: no scrape jobs, no rules; the data is back-filled by promtool.\n\
                      global:\n  evaluation_interval: 1m\n";

/// A running Prometheus on loopback, serving a test's back-filled history; killed when dropped.
pub struct PrometheusProcess {
    /// The running process; None between [`PrometheusProcess::stop`] and [`PrometheusProcess::restart`].
    child: Option<Child>,
    /// Its port on 127.0.0.1, the same across restarts.
    port: u16,
    /// Its TSDB directory (`target/test-logs/<id>-prometheus/data`).
    data_dir: PathBuf,
    /// Its configuration file.
    config: PathBuf,
    /// Its stdout and stderr, of every start (logfmt lines).
    pub log_path: PathBuf,
}

impl PrometheusProcess {
    /// Writes `series` as OpenMetrics (`target/test-logs/<id>-prometheus/history.om`, the directory emptied
    /// first), back-fills them into `data/` beside it with promtool, and starts Prometheus on them on a free
    /// port of 127.0.0.1, logging to `target/test-logs/<id>-prometheus.log`; returns once it is ready (its
    /// `/-/ready` answers 200). Panics, with promtool's output or Prometheus's log, if either fails.
    pub fn start(id: &str, series: &[Series]) -> PrometheusProcess {
        let logs = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
        let dir = logs.join(format!("{id}-prometheus"));
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => panic!("removing {} (of an earlier run): {e}", dir.display()),
        }
        std::fs::create_dir_all(&dir).unwrap();
        let history = dir.join("history.om");
        std::fs::write(&history, render(series)).unwrap();
        let data_dir = dir.join("data");
        let out = Command::new(promtool_binary())
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(&history)
            .arg(&data_dir)
            .stdin(Stdio::null())
            .output()
            .expect("run promtool");
        assert!(
            out.status.success(),
            "promtool tsdb create-blocks-from openmetrics {} failed ({}):\n{}{}",
            history.display(),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, CONFIG).unwrap();
        let log_path = logs.join(format!("{id}-prometheus.log"));
        std::fs::write(&log_path, "").unwrap();
        let mut prometheus = PrometheusProcess {
            child: None,
            port: free_port(),
            data_dir,
            config,
            log_path,
        };
        prometheus.spawn();
        prometheus
    }

    /// Its base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its TSDB directory.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Stops it: SIGTERM (it shuts down cleanly, writing its head), then SIGKILL after 15 s; waits for the exit.
    /// Nothing when it is stopped already.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if child.try_wait().unwrap().is_none() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let started = Instant::now();
            while child.try_wait().unwrap().is_none() && started.elapsed() < STOP_TIMEOUT {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Stops it if it runs, and starts it again on the same port and TSDB, its log appended to the same file;
    /// returns once it is ready. The port was free when [`PrometheusProcess::start`] chose it; another process
    /// taking it meanwhile fails the start, with the log saying so.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Everything it logged so far, over all its starts.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(LOG_TAIL)..].join("\n")
    }

    /// The raw JSON answer of `/api/v1/query` for `promql` at the current time, for a test's diagnostics (an
    /// error, e.g. a bad query, is an answer too). Panics when curl cannot reach it.
    pub fn query(&self, promql: &str) -> String {
        self.api_query(promql, None)
    }

    /// [`PrometheusProcess::query`] evaluated at `at` instead of now.
    pub fn query_at(&self, promql: &str, at: Timestamp) -> String {
        self.api_query(promql, Some(at))
    }

    /// `curl` POSTing `/api/v1/query` with the form's values URL-encoded.
    fn api_query(&self, promql: &str, at: Option<Timestamp>) -> String {
        let mut curl = Command::new("curl");
        curl.args(["--silent", "--show-error", "--max-time", "30"])
            .arg(format!("{}/api/v1/query", self.url()))
            .arg("--data-urlencode")
            .arg(format!("query={promql}"));
        if let Some(at) = at {
            curl.arg("--data-urlencode")
                .arg(format!("time={}", at.as_second()));
        }
        let out = curl.output().expect("run curl");
        assert!(
            out.status.success(),
            "curl {}/api/v1/query failed ({}): {}",
            self.url(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Starts the process (its log appended to) and waits until it is ready.
    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
            .unwrap();
        let child = Command::new(prometheus_binary())
            .arg("--config.file")
            .arg(&self.config)
            .arg("--storage.tsdb.path")
            .arg(&self.data_dir)
            .arg("--web.listen-address")
            .arg(format!("127.0.0.1:{}", self.port))
            .args(["--storage.tsdb.retention.time", "30d"])
            // Its working directory holds nothing it needs; this keeps anything it might write out of the
            // repository's root.
            .current_dir(
                self.data_dir
                    .parent()
                    .expect("the data directory is in the test's"),
            )
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn prometheus");
        self.child = Some(child);
        self.wait_ready();
    }

    /// Waits (at most [`READY_TIMEOUT`]) until `/-/ready` answers 200; panics with the end of its log if it exits
    /// or does not get there.
    fn wait_ready(&mut self) {
        let started = Instant::now();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            let child = self.child.as_mut().expect("started");
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "Prometheus exited ({status}) before it was ready; the end of its log ({}):\n{}",
                    self.log_path.display(),
                    self.log_tail()
                );
            }
            let last = match ready_status(addr) {
                Ok(200) => return,
                Ok(code) => format!("/-/ready answered {code}"),
                Err(e) => format!("/-/ready: {e}"),
            };
            assert!(
                started.elapsed() < READY_TIMEOUT,
                "Prometheus is not ready after {:?} ({last}); the end of its log ({}):\n{}",
                started.elapsed(),
                self.log_path.display(),
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for PrometheusProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- Prometheus's log ({}), last {LOG_TAIL} lines ---\n{}\n--- end of Prometheus's log ---",
                self.log_path.display(),
                self.log_tail()
            );
        }
    }
}

/// The status code of `GET /-/ready` at `addr`: one HTTP/1.0 request on a plain TCP connection.
fn ready_status(addr: SocketAddr) -> std::io::Result<u16> {
    let timeout = Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(b"GET /-/ready HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    // "HTTP/1.0 200 OK"
    String::from_utf8_lossy(&answer)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| {
            std::io::Error::other(format!(
                "not an HTTP answer: {:?}",
                String::from_utf8_lossy(&answer[..answer.len().min(80)])
            ))
        })
}

/// A port free on loopback now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port on loopback")
        .port()
}
