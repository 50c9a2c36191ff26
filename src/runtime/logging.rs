//! Logging: human text or JSON lines on stderr, filtered by RUST_LOG (default `info`).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// How logs are printed (to stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The filter when RUST_LOG is unset. kube logs every failed request and watch retry itself; the operator
/// reports those failures once, rate-limited and with what to do, so kube's own lines are muted.
pub const DEFAULT_FILTER: &str =
    "info,kube_client::client::builder=off,kube_client::client=error,kube_runtime::watcher=error";

/// Installs the global subscriber. Call once, first thing in `main`.
pub fn init_logging(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours only on a terminal: CI logs and `2>file` stay plain text.
        .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
