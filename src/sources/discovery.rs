//! Waiting for an API the server may not serve yet (DRA before 1.34, DeviceTaintRules before 1.37): the
//! one loop both optional sources use, so that an absent API is said once, never loops loudly, and is
//! looked for again every [`DISCOVERY_REFRESH`] (an upgrade or a `--runtime-config` change starts the
//! source without a restart).

use std::future::Future;
use std::time::Duration;

use tracing::debug;

/// How often a server without the API is asked again whether it serves it now.
pub const DISCOVERY_REFRESH: Duration = Duration::from_secs(30);

/// How long to wait after a failed discovery before asking again (a server starting or briefly away).
const RETRY_FAILED: Duration = Duration::from_secs(2);

/// Failed discoveries in a row after which the API counts as absent until the next refresh: not knowing
/// for long is no reason to hold the other sources back (the node watch reports the outage itself).
const FAILURES_BEFORE_ABSENT: u32 = 5;

/// What discovery said of an API.
pub(crate) enum Discovered<T> {
    /// Served, with what the caller needs of it (a version).
    Served(T),
    /// Not served; why, in words.
    Absent(String),
    /// Discovery itself failed (unreachable, or not allowed to ask).
    Failed(String),
}

/// Asks `discover` until the API is served and returns what it found. Every time it is known absent,
/// `absent(why)` is called (the caller marks its stores absent and says so once); `what` names the API in
/// the messages.
pub(crate) async fn wait_until_served<T, Fut>(
    what: &str,
    mut discover: impl FnMut() -> Fut,
    mut absent: impl FnMut(&str),
) -> T
where
    Fut: Future<Output = Discovered<T>>,
{
    let mut failures = 0u32;
    loop {
        let wait = match discover().await {
            Discovered::Served(found) => return found,
            Discovered::Absent(why) => {
                absent(&why);
                DISCOVERY_REFRESH
            }
            Discovered::Failed(error) => {
                failures += 1;
                debug!(%error, failures, "discovery of {what} failed; retrying");
                if failures < FAILURES_BEFORE_ABSENT {
                    RETRY_FAILED
                } else {
                    absent(&format!("discovery of {what} keeps failing ({error})"));
                    DISCOVERY_REFRESH
                }
            }
        };
        tokio::time::sleep(wait).await;
    }
}
