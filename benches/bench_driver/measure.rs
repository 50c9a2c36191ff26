//! Measurement: CPU time and peak RSS of the program (from /proc), API requests by verb and resource (from
//! the audit log), latency percentiles.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek};
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

/// utime + stime of `pid`, in seconds.
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

/// VmHWM (peak RSS) of `pid`, in MiB.
pub fn peak_rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// A place in the audit log: the file (by inode) and the offset in it. kube-apiserver rotates its audit log
/// (lumberjack: at 100 MB when --audit-log-maxsize is 0), renaming the file to `audit-<time>.log` beside it,
/// so a place may be in a rotated file by the time it is read.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditPos {
    inode: u64,
    offset: u64,
}

/// Where the audit log ends now: later counts need not read what came before.
pub fn audit_offset(path: &Path) -> AuditPos {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .map(|m| AuditPos {
            inode: m.ino(),
            offset: m.len(),
        })
        .unwrap_or_default()
}

/// The files to read, and where to start in each, for everything logged since `pos`: the file `pos` is in
/// (from its offset), the files rotated after it, then the current file (from 0), oldest first.
fn audit_segments(path: &Path, pos: AuditPos) -> Vec<(std::path::PathBuf, u64)> {
    use std::os::unix::fs::MetadataExt;
    let current = std::fs::metadata(path).map(|m| m.ino()).ok();
    if current == Some(pos.inode) {
        return vec![(path.to_owned(), pos.offset)];
    }
    let (dir, stem) = match (path.parent(), path.file_stem().and_then(|s| s.to_str())) {
        (Some(d), Some(s)) => (d, s.to_owned()),
        _ => return vec![(path.to_owned(), 0)],
    };
    let mut rotated: Vec<(std::time::SystemTime, u64, std::path::PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!("{stem}-")) && name.ends_with(".log")
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((m.modified().ok()?, m.ino(), e.path()))
        })
        .collect();
    rotated.sort();
    let mut out = Vec::new();
    if let Some(i) = rotated.iter().position(|(_, ino, _)| *ino == pos.inode) {
        out.push((rotated[i].2.clone(), pos.offset));
        out.extend(rotated[i + 1..].iter().map(|(_, _, p)| (p.clone(), 0)));
    }
    out.push((path.to_owned(), 0));
    out
}

/// Requests by `verb resource[/subresource]` made by user agents starting with `ua_prefix`, received in
/// [from, to]. Each request counts once: its ResponseComplete line, or for a watch its ResponseStarted line.
pub fn audit_counts(
    path: &Path,
    pos: AuditPos,
    ua_prefix: &str,
    from: Timestamp,
    to: Timestamp,
) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for (file, offset) in audit_segments(path, pos) {
        let Ok(mut file) = std::fs::File::open(file) else {
            continue;
        };
        let _ = file.seek(std::io::SeekFrom::Start(offset));
        for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
            if !line.contains(ua_prefix) {
                continue;
            }
            if let Some(key) = audit_request(&line, ua_prefix, from, to) {
                *counts.entry(key).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// The `verb resource` key of one audit line, if it is a request that counts.
fn audit_request(line: &str, ua_prefix: &str, from: Timestamp, to: Timestamp) -> Option<String> {
    let v = serde_json::from_str::<Value>(line).ok()?;
    if !v["userAgent"]
        .as_str()
        .is_some_and(|ua| ua.starts_with(ua_prefix))
    {
        return None;
    }
    let verb = v["verb"].as_str().unwrap_or("?");
    let counted = match v["stage"].as_str().unwrap_or("?") {
        "ResponseStarted" => verb == "watch",
        "ResponseComplete" => verb != "watch",
        "Panic" => true,
        _ => false,
    };
    if !counted {
        return None;
    }
    let at = v["requestReceivedTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())?;
    if at < from || at > to {
        return None;
    }
    let resource = match (
        v["objectRef"]["resource"].as_str(),
        v["objectRef"]["subresource"].as_str(),
    ) {
        (Some(r), Some(s)) => format!("{r}/{s}"),
        (Some(r), None) => r.to_owned(),
        _ => v["requestURI"]
            .as_str()
            .unwrap_or("?")
            .split('?')
            .next()
            .unwrap_or("?")
            .to_owned(),
    };
    Some(format!("{verb} {resource}"))
}

pub fn is_write(key: &str) -> bool {
    [
        "create ",
        "update ",
        "patch ",
        "delete ",
        "deletecollection ",
    ]
    .iter()
    .any(|v| key.starts_with(v))
}

/// Writes to the outputs: ConfigMaps, the inventory status, the GpuNodes (objects and status).
pub fn writes_to_outputs(counts: &BTreeMap<String, u64>) -> u64 {
    let output = |k: &str| {
        [
            " configmaps",
            " gpuinventories/status",
            " gpunodes",
            " gpunodes/status",
        ]
        .iter()
        .any(|r| k.ends_with(r))
    };
    counts
        .iter()
        .filter(|(k, _)| is_write(k) && output(k))
        .map(|(_, v)| v)
        .sum()
}

pub fn count_where(counts: &BTreeMap<String, u64>, pred: impl Fn(&str) -> bool) -> u64 {
    counts.iter().filter(|(k, _)| pred(k)).map(|(_, v)| v).sum()
}

/// Nearest-rank percentile `p` of `sorted`; NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Reads an audit log from a place on, one complete line at a time, remembering where it stopped (across
/// rotations).
pub struct AuditTail {
    path: std::path::PathBuf,
    pos: AuditPos,
}

impl AuditTail {
    /// From `pos` (an earlier `audit_offset`) on.
    pub fn at(path: &Path, pos: AuditPos) -> Self {
        AuditTail {
            path: path.to_owned(),
            pos,
        }
    }

    /// Calls `f` with every complete line written since the last call whose text contains one of `needles`.
    pub fn read_new(&mut self, needles: &[&str], mut f: impl FnMut(&Value)) {
        use std::os::unix::fs::MetadataExt;
        for (path, start) in audit_segments(&self.path, self.pos) {
            let Ok(mut file) = std::fs::File::open(&path) else {
                continue;
            };
            let inode = file.metadata().map(|m| m.ino()).unwrap_or(0);
            if file.seek(std::io::SeekFrom::Start(start)).is_err() {
                continue;
            }
            self.pos = AuditPos {
                inode,
                offset: start,
            };
            let mut reader = std::io::BufReader::new(file);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    // A line still being written: read it next time.
                    Ok(_) if !line.ends_with('\n') => break,
                    Ok(n) => self.pos.offset += n as u64,
                }
                if needles.iter().any(|n| line.contains(n))
                    && let Ok(v) = serde_json::from_str::<Value>(&line)
                {
                    f(&v);
                }
            }
        }
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
