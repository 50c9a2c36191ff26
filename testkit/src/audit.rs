//! kube-apiserver's audit log, read from a place on and across rotations: the requests per verb and resource
//! of a user agent in a window, which of them are writes (to the operator's outputs), and a tail that reads
//! what was logged since the last read.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek};
use std::path::Path;

use jiff::Timestamp;
use serde_json::Value;

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

/// Whether the `verb resource` key of [`audit_counts`] is a write (create, update, patch, delete,
/// deletecollection).
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

/// The requests of the keys `pred` holds for.
pub fn count_where(counts: &BTreeMap<String, u64>, pred: impl Fn(&str) -> bool) -> u64 {
    counts.iter().filter(|(k, _)| pred(k)).map(|(_, v)| v).sum()
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
