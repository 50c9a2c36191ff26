//! Logging: human text or JSON lines on stderr, filtered by RUST_LOG (default `info`).
//!
//! Log fields carry other people's text (API error messages, event notes with condition messages). In text
//! format every field and the message pass through `runtime::terminal_text::visible`, so a record stays one line and no
//! escape sequence reaches a terminal tailing the log; JSON lines are escaped by the JSON encoder.

use std::fmt;
use std::io::IsTerminal;

use tracing::field::{Field, Visit};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::Writer;

use super::terminal_text::visible;

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
pub(crate) const DEFAULT_FILTER: &str =
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
        LogFormat::Text => builder.fmt_fields(VisibleFields).init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}

/// Text-format fields: `message key=value ...`, every value escaped by [`visible`].
struct VisibleFields;

impl<'w> FormatFields<'w> for VisibleFields {
    fn format_fields<R: RecordFields>(&self, mut writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = VisibleVisitor {
            writer: &mut writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct VisibleVisitor<'a, 'w> {
    writer: &'a mut Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl VisibleVisitor<'_, '_> {
    fn write(&mut self, field: &Field, value: &str) {
        if self.result.is_err() {
            return;
        }
        let separator = if self.first { "" } else { " " };
        self.first = false;
        let value = visible(value);
        self.result = match field.name() {
            "message" => write!(self.writer, "{separator}{value}"),
            name => write!(self.writer, "{separator}{name}={value}"),
        };
    }
}

impl Visit for VisibleVisitor<'_, '_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.write(field, value);
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        // `%value` fields arrive here too, with a Debug that prints their Display.
        self.write(field, &format!("{value:?}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_hostile_field_stays_one_escaped_line() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .fmt_fields(VisibleFields)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let note = "PLEG \x1b[2J\x1b]0;owned\x07\nERROR forged record";
            tracing::warn!(node = "n1", note = %note, "event \u{202e}note: {note}");
        });
        let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 1, "{text:?}");
        assert!(!text.trim_end().chars().any(char::is_control), "{text:?}");
        assert!(
            text.contains(r"note=PLEG \x1b[2J\x1b]0;owned\x07\nERROR forged record"),
            "{text}"
        );
        assert!(text.contains(r"event \u{202e}note: PLEG"), "{text}");
        assert!(text.contains("node=n1"), "{text}");
    }
}
