//! Polling until a check passes, on a deadline with its cause (testkit::waits), or until progress stalls.

use std::future::Future;
use std::time::{Duration, Instant};

use testkit::waits::Deadline;

/// Polls `check` every 100 ms until it returns `Some`; after `deadline`, panics with `what` and the deadline's
/// cause. A check that can say what it saw meanwhile uses [`wait_for`], whose panic shows it.
pub async fn eventually<T, F, Fut>(deadline: impl Into<Deadline>, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    wait_for(deadline, what, || {
        let checked = check();
        async move {
            checked
                .await
                .ok_or_else(|| "not yet (the check shows no more)".to_owned())
        }
    })
    .await
}

/// Polls `check` every 100 ms until it returns `Ok`; `Err` says what it saw instead. After `deadline`, panics
/// with what was awaited, what was last seen, and the deadline with its cause (testkit::waits: deadlines are
/// derived from the periods of what is awaited, never guessed).
pub async fn wait_for<T, F, Fut>(deadline: impl Into<Deadline>, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let deadline = deadline.into();
    let started = Instant::now();
    loop {
        let seen = match check().await {
            Ok(value) => return value,
            Err(seen) => seen,
        };
        if started.elapsed() > deadline.limit() {
            panic!(
                "waited {:.1?} for {what}, past the deadline of {deadline}.\nLast seen: {seen}",
                started.elapsed()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What a progress check saw: done (with the value), or how far along the thing awaited is.
pub enum Progress<T> {
    /// The thing awaited happened.
    Done(T),
    /// Not yet; this much of it is there (a count that grows while it progresses).
    Partly(usize),
}

/// Waits for something that advances in steps (thousands of objects written): polls `check` every `every`,
/// and fails only when it made no progress for `stall`, so a slow but working machine passes and a stuck one
/// fails as soon as it stops.
pub async fn eventually_progressing<T, F, Fut>(
    stall: impl Into<Deadline>,
    every: Duration,
    what: &str,
    mut check: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Progress<T>>,
{
    let stall = stall.into();
    let (mut best, mut since) = (None::<usize>, Instant::now());
    loop {
        match check().await {
            Progress::Done(value) => return value,
            Progress::Partly(n) => {
                if best.is_none_or(|b| n > b) {
                    (best, since) = (Some(n), Instant::now());
                }
            }
        }
        if since.elapsed() > stall.limit() {
            panic!(
                "waiting for {what}: no progress for {:.1?}, past the stall deadline of {stall}; last seen: \
                 stuck at {}",
                since.elapsed(),
                best.unwrap_or(0)
            );
        }
        tokio::time::sleep(every).await;
    }
}
