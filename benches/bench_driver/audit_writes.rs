//! A program's writes in a window, from the audit log, object by object: per resource (`gpuinventories/status`,
//! `gpunodes`, `gpunodes/status`, `configmaps`, `events`, whatever it wrote) the writes per second, the most
//! any one object got in any one second, the writes per object per second, and the API server's time per
//! write (`requestReceivedTimestamp` -> `stageTimestamp` of the ResponseComplete line).

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use serde_json::{Value, json};
use testkit::audit::{AuditPos, AuditTail};
use testkit::settings::bench::Program;
use testkit::settings::bench::Settings;

use crate::alloc_measure::ms_stats;

/// One write (create, update, patch, delete) of the program.
#[derive(Clone, Debug)]
pub struct WriteRec {
    /// `resource` or `resource/subresource`.
    pub resource: String,
    /// The object: `resource` (no subresource), namespace and name; a GpuNode's writes and its status's
    /// count as one object's.
    pub object: String,
    /// Received, seconds after the window's start.
    pub at: f64,
    /// The API server's time for it (ms).
    pub server_ms: f64,
}

/// The writes of `program` (by User-Agent) received in [from, to].
pub fn program_writes(
    s: &Settings,
    program: Program,
    offset: AuditPos,
    from: Timestamp,
    to: Timestamp,
) -> Vec<WriteRec> {
    let ua = program.user_agent_prefix();
    let mut out = Vec::new();
    AuditTail::at(&s.audit_log, offset).read_new(&[ua], |v| {
        let write = matches!(
            v["verb"].as_str(),
            Some("create" | "update" | "patch" | "delete" | "deletecollection")
        );
        let ours = v["userAgent"].as_str().is_some_and(|u| u.starts_with(ua));
        let time = |k: &str| v[k].as_str().and_then(|t| t.parse::<Timestamp>().ok());
        let (Some(at), Some(done), true) = (
            time("requestReceivedTimestamp"),
            time("stageTimestamp"),
            v["stage"] == "ResponseComplete" && write && ours,
        ) else {
            return;
        };
        if at < from || at > to {
            return;
        }
        let o = &v["objectRef"];
        let base = o["resource"].as_str().unwrap_or("?");
        let resource = match o["subresource"].as_str() {
            Some(sub) => format!("{base}/{sub}"),
            None => base.to_owned(),
        };
        let ns = o["namespace"].as_str().unwrap_or("");
        let name = o["name"].as_str().unwrap_or("");
        out.push(WriteRec {
            resource,
            object: format!("{base} {ns}/{name}"),
            at: at.duration_since(from).as_secs_f64(),
            server_ms: done.duration_since(at).as_secs_f64() * 1000.0,
        });
    });
    out
}

/// The most writes one object got in one whole second of the window, and that object.
fn busiest_object(writes: &[&WriteRec]) -> (u64, Option<String>) {
    let mut per: BTreeMap<(&str, u64), u64> = BTreeMap::new();
    for w in writes {
        *per.entry((w.object.as_str(), w.at.max(0.0) as u64))
            .or_default() += 1;
    }
    per.into_iter()
        .max_by_key(|(_, n)| *n)
        .map_or((0, None), |((o, _), n)| (n, Some(o.to_owned())))
}

/// The figures of `writes` over a window of `secs` seconds: in all, and per resource.
pub fn writes_json(writes: &[WriteRec], secs: f64) -> Value {
    let secs = secs.max(f64::MIN_POSITIVE);
    let mut by_resource: BTreeMap<&str, Vec<&WriteRec>> = BTreeMap::new();
    for w in writes {
        by_resource.entry(w.resource.as_str()).or_default().push(w);
    }
    let resources: BTreeMap<&str, Value> = by_resource
        .iter()
        .map(|(r, ws)| {
            let objects: BTreeSet<&str> = ws.iter().map(|w| w.object.as_str()).collect();
            let (busiest, _) = busiest_object(ws);
            let value = json!({
                "writes": ws.len(), "per_sec": ws.len() as f64 / secs, "objects": objects.len(),
                "per_object_per_sec": ws.len() as f64 / objects.len() as f64 / secs,
                "busiest_object_second": busiest,
                "server_ms": ms_stats(ws.iter().map(|w| w.server_ms).collect()),
            });
            (*r, value)
        })
        .collect();
    let all: Vec<&WriteRec> = writes.iter().collect();
    let objects: BTreeSet<&str> = writes.iter().map(|w| w.object.as_str()).collect();
    let (busiest, which) = busiest_object(&all);
    json!({
        "secs": secs, "writes": writes.len(), "per_sec": writes.len() as f64 / secs,
        "objects": objects.len(),
        "per_object_per_sec": if objects.is_empty() { 0.0 } else { writes.len() as f64 / objects.len() as f64 / secs },
        "busiest_object_second": busiest, "busiest_object": which,
        "by_resource": resources,
    })
}
