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

/// Where the audit log ends now: later counts need not read what came before.
pub fn audit_offset(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Requests by `verb resource[/subresource]` made by user agents starting with `ua_prefix`, received in
/// [from, to]. Each request counts once: its ResponseComplete line, or for a watch its ResponseStarted line.
pub fn audit_counts(
    path: &Path,
    offset: u64,
    ua_prefix: &str,
    from: Timestamp,
    to: Timestamp,
) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let Ok(mut file) = std::fs::File::open(path) else {
        return counts;
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

/// Writes to the two outputs: ConfigMaps and the inventory status.
pub fn writes_to_outputs(counts: &BTreeMap<String, u64>) -> u64 {
    counts
        .iter()
        .filter(|(k, _)| {
            is_write(k) && (k.ends_with(" configmaps") || k.ends_with(" gpuinventories/status"))
        })
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
