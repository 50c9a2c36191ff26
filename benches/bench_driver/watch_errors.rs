//! A watch's errors, logged without flooding the log.

use std::time::{Duration, Instant};

use crate::log;

/// A watch's errors in the log: the first, then at most one every 10 s with how many came in between (an API
/// server restarted on purpose, e.g. the scale scenario's relist, would fill the log at 5 a second).
#[derive(Default)]
pub struct ErrorLog {
    last: Option<Instant>,
    since: u64,
}

impl ErrorLog {
    pub fn log(&mut self, what: &str, e: &dyn std::fmt::Display) {
        self.since += 1;
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(10))
        {
            return;
        }
        let more = match self.since {
            1 => String::new(),
            n => format!(" ({} more since the last one logged)", n - 1),
        };
        log(format!("{what} watch: {e}{more}"));
        (self.last, self.since) = (Some(Instant::now()), 0);
    }
}
