//! How every duration flag reads, in a leaf file: the command line and the flag groups of their own
//! (`utilization_source_args.rs`) name it, and the command line names those groups.

use std::time::Duration;

/// Parses `30s`, `2m`, `1h 30m`, `500ms` or a plain number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let signed: jiff::SignedDuration = text
        .parse()
        .map_err(|e| format!("{text:?} is not a duration like 30s, 2m or 500ms: {e}"))?;
    Duration::try_from(signed).map_err(|_| format!("{text:?} is negative"))
}
