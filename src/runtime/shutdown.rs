//! Graceful shutdown on SIGINT/SIGTERM (or on demand, for tests and leader election).

use tokio::sync::watch;
use tracing::info;

/// A cloneable signal that resolves when shutdown starts.
#[derive(Clone, Debug)]
pub struct Shutdown(watch::Receiver<bool>);

/// Starts the shutdown that the paired [`Shutdown`]s wait for.
#[derive(Debug)]
pub(crate) struct ShutdownTrigger(watch::Sender<bool>);

impl Shutdown {
    /// A trigger and its signal.
    pub(crate) fn new() -> (ShutdownTrigger, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (ShutdownTrigger(tx), Shutdown(rx))
    }

    /// A signal that fires on the first SIGINT or SIGTERM.
    pub fn on_signals() -> Shutdown {
        let (trigger, shutdown) = Shutdown::new();
        tokio::spawn(async move {
            wait_for_signal().await;
            trigger.trigger();
        });
        shutdown
    }

    /// Resolves when shutdown starts (also when the trigger was dropped).
    pub(crate) async fn wait(mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }
}

impl ShutdownTrigger {
    /// Starts shutdown.
    pub(crate) fn trigger(&self) {
        let _ = self.0.send(true);
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => info!("SIGINT received; shutting down"),
            _ = term.recv() => info!("SIGTERM received; shutting down"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        info!("Ctrl-C received; shutting down");
    }
}
