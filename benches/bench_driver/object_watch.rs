//! Watching one named object: each version handed over with the time it arrived (to the watchers' shared state,
//! with a note to those waiting on it), and the watch's errors logged without flooding the log.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::Api;
use kube::runtime::watcher;
use tokio::sync::watch;

use crate::log;

/// Counts the changes to watchers' shared state, for those waiting on it.
pub type Changed = Arc<watch::Sender<u64>>;

/// Watches the object `name` of `api`, calling `on` with each version and when it arrived.
pub fn spawn_watch<K>(
    api: Api<K>,
    name: &str,
    what: &'static str,
    mut on: impl FnMut(K, Instant) + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    tokio::spawn(async move {
        let mut events = watcher(api, cfg).boxed();
        let mut errors = ErrorLog::default();
        while let Some(event) = events.next().await {
            let now = Instant::now();
            match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => on(o, now),
                Ok(_) => {}
                Err(e) => {
                    errors.log(what, &e);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    })
}

/// [`spawn_watch`], each version applied to `obs` (locked) by `apply`, then `changed` counted up.
pub fn watch_into<K, O>(
    api: Api<K>,
    name: &str,
    what: &'static str,
    obs: Arc<Mutex<O>>,
    changed: Changed,
    mut apply: impl FnMut(&mut O, K, Instant) + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    O: Send + 'static,
{
    spawn_watch(api, name, what, move |object, now| {
        apply(&mut obs.lock().unwrap(), object, now);
        changed.send_modify(|n| *n += 1);
    })
}

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
