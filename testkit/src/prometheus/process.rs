//! Prometheus as a child process: its TSDB back-filled by promtool from an OpenMetrics history
//! ([`super::openmetrics`]), a configuration without scrape jobs (the history is all there is), its log, and
//! its query API for diagnostics. The tests start one per test (tests/common/prometheus), the bench driver one
//! per scale fleet (benches/bench_driver/scale_readers.rs).
//!
//! Back-filling up to the present needs nothing special: `promtool tsdb create-blocks-from openmetrics` writes
//! blocks (aligned to two hours) for any timestamps, the current ones and future ones included, and a
//! Prometheus started on them serves them with an empty head. Instant queries see a series until 5 minutes
//! (the lookback delta) after its last sample, so a history that ends at "now" reads as current for 5 minutes;
//! a user that runs longer extends its series past now.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jiff::Timestamp;

/// How long Prometheus may take to answer `/-/ready` with 200 (it opens the back-filled blocks first: well
/// under a second for a test's history, seconds for a scale fleet's).
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How long [`PrometheusProcess::stop`] waits for it to exit after SIGTERM before it kills it.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);

/// How many lines of its log a failure quotes.
const LOG_TAIL: usize = 40;

/// Its configuration: no scrape jobs, no rules; the data is back-filled.
const CONFIG: &str = "# testkit::prometheus: no scrape jobs, no rules; the data is back-filled by promtool.\n\
                      global:\n  evaluation_interval: 1m\n";

/// The two programs: `prometheus`, and `promtool` for the back-fill (`hack/build-control-plane.sh prometheus`
/// builds both into one directory).
#[derive(Clone, Debug)]
pub struct Binaries {
    /// The prometheus server.
    pub prometheus: PathBuf,
    /// promtool.
    pub promtool: PathBuf,
}

impl Binaries {
    /// `prometheus` and the promtool beside it; an error when promtool is not there.
    pub fn beside(prometheus: PathBuf) -> Result<Binaries, String> {
        let promtool = prometheus.with_file_name("promtool");
        if !promtool.is_file() {
            return Err(format!(
                "no promtool beside the prometheus binary ({}): `hack/build-control-plane.sh prometheus` builds \
                 both; put promtool in the same directory",
                prometheus.display()
            ));
        }
        Ok(Binaries {
            prometheus,
            promtool,
        })
    }
}

/// A running Prometheus on loopback, serving a back-filled history; killed when dropped.
pub struct PrometheusProcess {
    /// Its programs.
    binaries: Binaries,
    /// The running process; None between [`PrometheusProcess::stop`] and [`PrometheusProcess::restart`].
    child: Option<Child>,
    /// Its port on 127.0.0.1, the same across restarts.
    port: u16,
    /// Its TSDB directory (`<dir>/data`).
    data_dir: PathBuf,
    /// Its configuration file.
    config: PathBuf,
    /// Its stdout and stderr, of every start (logfmt lines).
    pub log_path: PathBuf,
}

impl PrometheusProcess {
    /// Back-fills the OpenMetrics file `history` into `dir/data` with promtool (`dir` is emptied first, except
    /// for `history` itself when it lies there), and starts Prometheus on it on a free port of 127.0.0.1,
    /// logging to `log_path` (emptied first); returns once it is ready (its `/-/ready` answers 200). An error
    /// quotes promtool's output or the end of Prometheus's log.
    pub fn start(
        binaries: Binaries,
        dir: &Path,
        history: &Path,
        log_path: PathBuf,
    ) -> Result<PrometheusProcess, String> {
        let data_dir = dir.join("data");
        for stale in [&data_dir, &dir.join("prometheus.yml")] {
            let removed = if stale.is_dir() {
                std::fs::remove_dir_all(stale)
            } else {
                std::fs::remove_file(stale)
            };
            match removed {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(format!(
                        "removing {} (of an earlier run): {e}",
                        stale.display()
                    ));
                }
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let out = Command::new(&binaries.promtool)
            .args(["tsdb", "create-blocks-from", "openmetrics"])
            .arg(history)
            .arg(&data_dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running {}: {e}", binaries.promtool.display()))?;
        if !out.status.success() {
            return Err(format!(
                "promtool tsdb create-blocks-from openmetrics {} failed ({}):\n{}{}",
                history.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let config = dir.join("prometheus.yml");
        std::fs::write(&config, CONFIG).map_err(|e| format!("{}: {e}", config.display()))?;
        std::fs::write(&log_path, "").map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut prometheus = PrometheusProcess {
            binaries,
            child: None,
            port: free_port()?,
            data_dir,
            config,
            log_path,
        };
        prometheus.spawn()?;
        Ok(prometheus)
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
        if matches!(child.try_wait(), Ok(None)) {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let started = Instant::now();
            while matches!(child.try_wait(), Ok(None)) && started.elapsed() < STOP_TIMEOUT {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Stops it if it runs, and starts it again on the same port and TSDB, its log appended to the same file;
    /// returns once it is ready. The port was free when [`PrometheusProcess::start`] chose it; another process
    /// taking it meanwhile fails the start, with the log saying so.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.spawn()
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

    /// The raw JSON answer of `/api/v1/query` for `promql` at the current time, for diagnostics (an error, e.g.
    /// a bad query, is an answer too). Panics when curl cannot reach it.
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
    fn spawn(&mut self) -> Result<(), String> {
        let opened = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_path)
            .and_then(|log| Ok((log.try_clone()?, log)));
        let (stdout, stderr) = opened.map_err(|e| format!("{}: {e}", self.log_path.display()))?;
        // Its working directory holds nothing it needs; this keeps anything it might write out of the caller's.
        let workdir = self.data_dir.parent().unwrap_or(&self.data_dir);
        let child = Command::new(&self.binaries.prometheus)
            .arg("--config.file")
            .arg(&self.config)
            .arg("--storage.tsdb.path")
            .arg(&self.data_dir)
            .arg("--web.listen-address")
            .arg(format!("127.0.0.1:{}", self.port))
            .args(["--storage.tsdb.retention.time", "30d"])
            .current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", self.binaries.prometheus.display()))?;
        self.child = Some(child);
        self.wait_ready()
    }

    /// Waits (at most [`READY_TIMEOUT`]) until `/-/ready` answers 200; an error with the end of its log if it
    /// exits or does not get there.
    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            let exited = match self.child.as_mut().map(Child::try_wait) {
                Some(Ok(Some(status))) => Some(status.to_string()),
                Some(Err(e)) => Some(e.to_string()),
                Some(Ok(None)) => None,
                None => Some("not started".to_owned()),
            };
            if let Some(status) = exited {
                return Err(format!(
                    "Prometheus exited ({status}) before it was ready; the end of its log ({}):\n{}",
                    self.log_path.display(),
                    self.log_tail()
                ));
            }
            let last = match ready_status(addr) {
                Ok(200) => return Ok(()),
                Ok(code) => format!("/-/ready answered {code}"),
                Err(e) => format!("/-/ready: {e}"),
            };
            if started.elapsed() >= READY_TIMEOUT {
                return Err(format!(
                    "Prometheus is not ready after {:?} ({last}); the end of its log ({}):\n{}",
                    started.elapsed(),
                    self.log_path.display(),
                    self.log_tail()
                ));
            }
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
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on loopback: {e}"))
}
