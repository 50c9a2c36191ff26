//! A wait that is bounded and said: a future raced against a deadline, with a line on stderr once it has
//! lasted [`FIRST_SAID`] and then every [`SAID_EVERY`] ("waiting for the API server at URL (5 s of 30 s)..."),
//! so that a command against a silent server never sits without a word. On stderr always, terminal or not:
//! a script's log then says what the command waited for; stdout stays the command's answer alone.

use std::future::Future;
use std::io::Write;
use std::time::{Duration, Instant};

/// A wait is said once it has lasted this long (a healthy API server answers in milliseconds).
pub(crate) const FIRST_SAID: Duration = Duration::from_secs(3);
/// ... and again this often while it lasts.
pub(crate) const SAID_EVERY: Duration = Duration::from_secs(5);

/// `work` until it ends or `deadline` passes (`None`: no deadline): `None` past the deadline (`work` is
/// dropped). With `progress`, a wait past [`FIRST_SAID`] is said on stderr as `waiting for {what} (...)`,
/// counted from the start of the `timeout` that ends at `deadline` (a credential plugin's run and the
/// server's answer share one).
pub(crate) async fn bounded<F: Future>(
    what: &str,
    deadline: Option<Instant>,
    timeout: Option<Duration>,
    progress: bool,
    work: F,
) -> Option<F::Output> {
    let now = Instant::now();
    let started = match (deadline, timeout) {
        (Some(deadline), Some(timeout)) => deadline.checked_sub(timeout).unwrap_or(now).min(now),
        _ => now,
    };
    let total = deadline.map(|d| d.saturating_duration_since(started));
    let say = async {
        if !progress {
            return std::future::pending().await;
        }
        let mut next = FIRST_SAID;
        loop {
            tokio::time::sleep_until((started + next).into()).await;
            // A stderr that cannot be written (closed, a full disk) is no reason to panic, as `eprintln!` would.
            let _ = writeln!(
                std::io::stderr(),
                "{}",
                said(what, started.elapsed(), total)
            );
            next += SAID_EVERY;
        }
    };
    let until = async {
        match deadline {
            Some(deadline) => tokio::time::sleep_until(deadline.into()).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        done = work => Some(done),
        _ = until => None,
        never = say => never,
    }
}

/// The progress line: `waiting for WHAT (5 s of 30 s)...`, or `(5 s)...` without a deadline.
fn said(what: &str, waited: Duration, total: Option<Duration>) -> String {
    let of = match total {
        Some(total) => format!(" of {}", seconds(total)),
        None => String::new(),
    };
    format!("waiting for {what} ({}{of})...", seconds(waited))
}

/// A duration in whole seconds as the progress line writes it (`5 s`), or milliseconds below one second.
pub(crate) fn seconds(duration: Duration) -> String {
    match duration.as_secs() {
        0 => format!("{} ms", duration.as_millis()),
        secs => format!("{secs} s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_what_and_how_long_of_how_long() {
        assert_eq!(
            said(
                "the API server at https://10.0.0.1:6443",
                Duration::from_millis(5200),
                Some(Duration::from_secs(30))
            ),
            "waiting for the API server at https://10.0.0.1:6443 (5 s of 30 s)..."
        );
        assert_eq!(
            said("x", Duration::from_secs(8), None),
            "waiting for x (8 s)..."
        );
        assert_eq!(seconds(Duration::from_millis(500)), "500 ms");
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_at_its_deadline_and_work_that_ends_first_is_returned() {
        let deadline = Some(Instant::now() + Duration::from_secs(2));
        let never = bounded("x", deadline, None, false, std::future::pending::<()>()).await;
        assert_eq!(never, None);
        let quick = bounded("x", None, None, false, async { 7 }).await;
        assert_eq!(quick, Some(7));
    }
}
