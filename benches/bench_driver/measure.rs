//! Measurement: CPU time and peak RSS of the program (from /proc), latency percentiles, and what KWOK and the
//! node lifecycle controller did (from the audit log). The API requests by verb and resource from the audit log
//! are the test kit's (`testkit::audit`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use jiff::Timestamp;
use serde_json::Value;

/// Clock ticks per second (for /proc/<pid>/stat).
pub fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}

/// The bench's other processes whose CPU a phase records beside the operator's: they share the machine's
/// cores with it, so a latency figure reads with their load (the readers' Prometheus above all).
pub const OTHER_PROGRAMS: [&str; 3] = ["kube-apiserver", "etcd", "prometheus"];

/// utime + stime so far of every process whose command name is one of `names`, in seconds, summed per name
/// (each name present, 0 when no such process runs).
pub fn cpu_secs_by_name(names: &[&str], ticks: f64) -> BTreeMap<String, f64> {
    let mut by_name: BTreeMap<String, f64> = names.iter().map(|n| ((*n).to_owned(), 0.0)).collect();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return by_name;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let comm = stat
            .split_once('(')
            .and_then(|(_, rest)| rest.rsplit_once(')'))
            .map_or("", |(comm, _)| comm);
        if let Some(total) = by_name.get_mut(comm) {
            *total += cpu_secs(pid, ticks);
        }
    }
    by_name
}

/// What each of `before`'s processes used since, in percent of one core over `secs`.
pub fn cpu_pct_since(before: &BTreeMap<String, f64>, ticks: f64, secs: f64) -> Value {
    let names: Vec<&str> = before.keys().map(String::as_str).collect();
    let now = cpu_secs_by_name(&names, ticks);
    let each: serde_json::Map<String, Value> = before
        .iter()
        .map(|(name, was)| {
            let used = (now.get(name).copied().unwrap_or(0.0) - was).max(0.0);
            let pct = 100.0 * used / secs.max(f64::EPSILON);
            (
                name.clone(),
                serde_json::json!({ "cpu_secs": used, "pct_of_core": pct }),
            )
        })
        .collect();
    Value::Object(each)
}

pub fn cpu_secs(pid: u32, ticks: f64) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (get(11) + get(12)) / ticks
}

/// VmHWM (peak RSS) of `pid`, in MiB (NaN when it is gone).
pub fn peak_rss_mib(pid: u32) -> f64 {
    testkit::rss::proc_status_mib(pid, "VmHWM").unwrap_or(f64::NAN)
}

/// VmRSS (the RSS now) of `pid`, in MiB (NaN when it is gone).
pub fn rss_mib(pid: u32) -> f64 {
    testkit::rss::proc_status_mib(pid, "VmRSS").unwrap_or(f64::NAN)
}

/// Nearest-rank percentile `p` of `sorted`; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `sorted`: its middle value, or the mean of the two middle ones; NaN when empty.
pub fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The User-Agent of KWOK's requests ("kwok/v0.8.0 (linux/amd64)").
pub const KWOK_UA: &str = "\"userAgent\":\"kwok/";
/// The node lifecycle controller's identity (kube-controller-manager, --use-service-account-credentials).
pub const NODE_CONTROLLER: &str = "system:serviceaccount:kube-system:node-controller";

/// A node's simulated kubelet or the node lifecycle controller, as one audit event.
pub enum FleetEvent {
    /// KWOK wrote a node's status (heartbeat): node name, when, succeeded.
    Status(String, Timestamp, bool),
    /// KWOK created or renewed a node's Lease in kube-node-lease: node name, when, succeeded.
    Lease(String, Timestamp, bool),
    /// The node lifecycle controller wrote a node's status (conditions to Unknown: its Lease lagged).
    LifecycleStatus(Timestamp),
    /// The node lifecycle controller wrote a node (taints).
    LifecycleTaints(Timestamp),
}

/// The fleet event of one audit line (ResponseComplete only), if it is one.
pub fn fleet_event(v: &Value) -> Option<FleetEvent> {
    if v["stage"] != "ResponseComplete" {
        return None;
    }
    let verb = v["verb"].as_str()?;
    if !matches!(verb, "create" | "update" | "patch") {
        return None;
    }
    let at = v["requestReceivedTimestamp"].as_str()?.parse().ok()?;
    let ok = v["responseStatus"]["code"]
        .as_u64()
        .is_some_and(|c| (200..300).contains(&c));
    let object = &v["objectRef"];
    let resource = object["resource"].as_str()?;
    let name = object["name"].as_str().unwrap_or("").to_owned();
    let kwok = v["userAgent"]
        .as_str()
        .is_some_and(|u| u.starts_with("kwok/"));
    if kwok && resource == "nodes" && object["subresource"] == "status" {
        Some(FleetEvent::Status(name, at, ok))
    } else if kwok && resource == "leases" && object["namespace"] == "kube-node-lease" {
        Some(FleetEvent::Lease(name, at, ok))
    } else if resource == "nodes" && ok && v["user"]["username"] == NODE_CONTROLLER {
        match object["subresource"] == "status" {
            true => Some(FleetEvent::LifecycleStatus(at)),
            false => Some(FleetEvent::LifecycleTaints(at)),
        }
    } else {
        None
    }
}

/// What KWOK and the node lifecycle controller did in a window, per node.
#[derive(Default)]
pub struct Fleet {
    status: BTreeMap<String, Vec<Timestamp>>,
    leases: BTreeMap<String, Vec<Timestamp>>,
    pub status_failed: u64,
    pub lease_failed: u64,
    pub lifecycle_status_writes: u64,
    pub lifecycle_taint_writes: u64,
}

impl Fleet {
    /// Adds the event if it happened in [from, to].
    pub fn add(&mut self, event: FleetEvent, from: Timestamp, to: Timestamp) {
        let in_window = |at: &Timestamp| *at >= from && *at <= to;
        match event {
            FleetEvent::Status(name, at, ok) if in_window(&at) => match ok {
                true => self.status.entry(name).or_default().push(at),
                false => self.status_failed += 1,
            },
            FleetEvent::Lease(name, at, ok) if in_window(&at) => match ok {
                true => self.leases.entry(name).or_default().push(at),
                false => self.lease_failed += 1,
            },
            FleetEvent::LifecycleStatus(at) if in_window(&at) => self.lifecycle_status_writes += 1,
            FleetEvent::LifecycleTaints(at) if in_window(&at) => self.lifecycle_taint_writes += 1,
            _ => {}
        }
    }

    /// Successful status writes, and how many nodes had one.
    pub fn status_writes(&self) -> (u64, usize) {
        count(&self.status)
    }

    /// Successful Lease creates and renewals, and how many Leases had one.
    pub fn lease_writes(&self) -> (u64, usize) {
        count(&self.leases)
    }

    /// Seconds between a node's consecutive status writes, sorted.
    pub fn status_gaps(&self) -> Vec<f64> {
        gaps(&self.status)
    }

    /// Seconds between a Lease's consecutive renewals, sorted.
    pub fn lease_gaps(&self) -> Vec<f64> {
        gaps(&self.leases)
    }
}

fn count(by_name: &BTreeMap<String, Vec<Timestamp>>) -> (u64, usize) {
    (
        by_name.values().map(|t| t.len() as u64).sum(),
        by_name.len(),
    )
}

fn gaps(by_name: &BTreeMap<String, Vec<Timestamp>>) -> Vec<f64> {
    let mut out: Vec<f64> = by_name
        .values()
        .flat_map(|times| {
            let mut times = times.clone();
            times.sort();
            times
                .windows(2)
                .map(|w| w[1].duration_since(w[0]).as_secs_f64())
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort_by(|a, b| a.partial_cmp(b).unwrap());
    out
}

/// CPU seconds (utime+stime) of the cluster component whose pid is in `<dir>/<name>.pid`; None without one.
pub fn component_cpu_secs(dir: Option<&Path>, name: &str, ticks: f64) -> Option<f64> {
    let pid: u32 = std::fs::read_to_string(dir?.join(format!("{name}.pid")))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    std::fs::metadata(format!("/proc/{pid}")).ok()?;
    Some(cpu_secs(pid, ticks))
}
