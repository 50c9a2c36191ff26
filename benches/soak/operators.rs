//! The two operators under test, both `run --leader-elect` on the same Lease, as the manifests deploy them:
//! starting, finding the leader (the Lease holder), SIGKILL and restart, restarting one that exited by itself
//! (a replica that lost its Lease exits by design; a Deployment would start it again), RSS and /metrics.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::Client;
use kube::api::Api;
use testkit::http;
use testkit::settings::soak::Settings;

use crate::{Res, log};

pub const NAMESPACE: &str = "gpu-soak";
pub const INVENTORY: &str = "soak";
pub const LEASE: &str = "gpu-inventory-soak";

/// One replica: its process, the identity it holds the Lease under, its log.
struct Replica {
    child: Child,
    identity: String,
    log: PathBuf,
}

pub struct Operators {
    replicas: [Replica; 2],
    /// Replicas killed by a fault and not started again yet: `restart_exited` leaves them to the fault.
    down: [bool; 2],
    starts: usize,
    /// Every log written (killed replicas' too), for the panic check.
    pub logs: Vec<PathBuf>,
    /// Replicas that exited on their own (and were started again), with their exit status.
    pub self_exits: Vec<String>,
}

fn spawn(s: &Settings, identity: &str, log_path: &Path) -> Res<Child> {
    let log_file = std::fs::File::create(log_path)?;
    let lease = format!("{}s", s.lease.as_secs());
    let child = Command::new(&s.operator_bin)
        .args(["run", "--kubeconfig"])
        .arg(&s.kubeconfig)
        .args(["--namespace", NAMESPACE, "--default-inventory", INVENTORY])
        .args([
            "--leader-elect",
            "--lease-name",
            LEASE,
            "--lease-duration",
            &lease,
        ])
        .args(["--status-nodes-budget", &s.status_nodes_budget])
        .args(["--metrics-addr", "127.0.0.1:0"])
        // The identity a pod would have (its name): a restarted replica is a new pod with a new name.
        .env("POD_NAME", identity)
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", s.operator_bin.display()))?;
    Ok(child)
}

impl Operators {
    pub fn start(s: &Settings) -> Res<Self> {
        let mut ops = Operators {
            replicas: [Self::replica(s, 0, 0)?, Self::replica(s, 1, 1)?],
            down: [false; 2],
            starts: 2,
            logs: Vec::new(),
            self_exits: Vec::new(),
        };
        ops.logs = ops.replicas.iter().map(|r| r.log.clone()).collect();
        Ok(ops)
    }

    fn replica(s: &Settings, slot: usize, start: usize) -> Res<Replica> {
        let identity = format!("soak-operator-{slot}-{start}");
        let log = s.out_dir.join("logs").join(format!("{identity}.log"));
        let child = spawn(s, &identity, &log)?;
        Ok(Replica {
            child,
            identity,
            log,
        })
    }

    /// Starts replica `slot` again under a new identity; the old process, if it still runs, is killed first
    /// (never two replicas in one slot: an orphan would hold the Lease unseen).
    pub fn restart(&mut self, s: &Settings, slot: usize) -> Res<()> {
        self.kill(slot);
        self.down[slot] = false;
        let replica = Self::replica(s, slot, self.starts)?;
        self.starts += 1;
        self.logs.push(replica.log.clone());
        self.replicas[slot] = replica;
        Ok(())
    }

    /// SIGKILL replica `slot`, reap it, and leave it down until `restart`.
    pub fn kill(&mut self, slot: usize) {
        self.down[slot] = true;
        let child = &mut self.replicas[slot].child;
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Restarts every replica that exited on its own since the last call; returns how many.
    pub fn restart_exited(&mut self, s: &Settings) -> Res<usize> {
        let mut restarted = 0;
        let up: Vec<usize> = (0..2).filter(|&slot| !self.down[slot]).collect();
        for slot in up {
            if let Some(status) = self.replicas[slot].child.try_wait()? {
                let what = format!("{} exited: {status}", self.replicas[slot].identity);
                log(format!("{what}; starting it again"));
                self.self_exits.push(what);
                self.restart(s, slot)?;
                restarted += 1;
            }
        }
        Ok(restarted)
    }

    /// The replica holding the Lease, if that replica is alive.
    pub async fn leader(&mut self, client: &Client) -> Option<usize> {
        let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
        // Bounded: with etcd paused the read waits, and the replicas' lock is held meanwhile.
        let read = tokio::time::timeout(Duration::from_secs(5), leases.get_opt(LEASE));
        let holder = read.await.ok()?.ok()??.spec?.holder_identity?;
        let slot = self.replicas.iter().position(|r| r.identity == holder)?;
        matches!(self.replicas[slot].child.try_wait(), Ok(None)).then_some(slot)
    }

    pub fn identity(&self, slot: usize) -> &str {
        &self.replicas[slot].identity
    }

    pub fn pid(&self, slot: usize) -> u32 {
        self.replicas[slot].child.id()
    }

    /// The HTTP address replica `slot` logged ("serving /healthz ... on http://ADDR").
    fn http_addr(&self, slot: usize) -> Option<String> {
        let text = std::fs::read_to_string(&self.replicas[slot].log).ok()?;
        http::addr_in_log(&text)
    }

    /// GET /metrics of replica `slot`.
    pub async fn metrics(&self, slot: usize) -> Res<String> {
        let addr = self
            .http_addr(slot)
            .ok_or_else(|| format!("{} logged no HTTP address yet", self.identity(slot)))?;
        http::get_ok(&addr, "/metrics", Duration::from_secs(10)).await
    }

    /// SIGTERM both, up to 10 s each, then SIGKILL.
    pub fn stop_all(&mut self) {
        for r in &mut self.replicas {
            let _ = Command::new("kill")
                .args(["-TERM", &r.child.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(10);
            while matches!(r.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

impl Drop for Operators {
    /// No replica outlives the soak, also when it fails half-way.
    fn drop(&mut self) {
        for r in &mut self.replicas {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// VmRSS of `pid`, in MiB (None when it is gone).
pub fn rss_mib(pid: u32) -> Option<f64> {
    testkit::rss::proc_status_mib(pid, "VmRSS")
}
