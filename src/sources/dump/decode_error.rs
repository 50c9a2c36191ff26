//! Why a dump's object did not decode: the message, the field's path (`spec.devices[0].capacity["memory"]`)
//! and, for YAML, the line and column.

use std::fmt;

use serde::de;

use super::tree::{At, Tree};

/// Why a node did not decode: the message, the field and where it is.
#[derive(Debug)]
pub(crate) struct DecodeError {
    message: String,
    /// The field's path, innermost segment first (errors are wrapped on their way out).
    path: Vec<String>,
    at: At,
}

impl DecodeError {
    /// Puts the error inside `segment` (`.key`, `["a.b/c"]` or `[3]`) of the node at `at`.
    pub(super) fn within(mut self, segment: String, at: At) -> DecodeError {
        self.path.push(segment);
        self.located(at)
    }

    /// Says where the error is, unless a node inside already did.
    pub(crate) fn located(mut self, at: At) -> DecodeError {
        if self.at.line == 0 {
            self.at = at;
        }
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path: String = self.path.iter().rev().map(String::as_str).collect();
        let path = path.strip_prefix('.').unwrap_or(&path);
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        f.write_str(&self.message)?;
        if self.at.line != 0 {
            write!(f, " (line {}, column {})", self.at.line, self.at.column)?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(message: T) -> Self {
        DecodeError {
            message: message.to_string(),
            path: Vec::new(),
            at: At::default(),
        }
    }
}

/// A mapping key as a path segment: `.name`, or `["nvidia.com/gpu"]` when it has dots or slashes.
pub(super) fn key_segment(key: &Tree) -> String {
    match key.as_str() {
        Some(key)
            if !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            format!(".{key}")
        }
        Some(key) => format!("[{key:?}]"),
        None => "[<key>]".to_owned(),
    }
}
