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
    /// The same path as positions in the tree, innermost first: what a lenient read takes out.
    steps: Vec<Step>,
    at: At,
}

/// One step down a tree: a mapping's entry (by position, so that a repeated key is told apart) or a
/// sequence's item.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Step {
    Entry(usize),
    Item(usize),
}

impl DecodeError {
    /// Puts the error inside `segment` (`.key`, `["a.b/c"]` or `[3]`), at `step`, of the node at `at`.
    pub(super) fn within(mut self, segment: String, step: Step, at: At) -> DecodeError {
        self.path.push(segment);
        self.steps.push(step);
        self.located(at)
    }

    /// The field's path (`spec.devices[0].capacity["memory"]`); empty for the object itself.
    pub(crate) fn field(&self) -> String {
        let path: String = self.path.iter().rev().map(String::as_str).collect();
        path.strip_prefix('.').map(str::to_owned).unwrap_or(path)
    }

    /// What is wrong, with the line and column when known, without the field.
    pub(crate) fn reason(&self) -> String {
        if self.at.line == 0 {
            self.message.clone()
        } else {
            format!(
                "{} (line {}, column {})",
                self.message, self.at.line, self.at.column
            )
        }
    }

    /// The path as steps from the object down, to the field that did not decode.
    pub(crate) fn steps(&self) -> impl Iterator<Item = Step> + '_ {
        self.steps.iter().rev().copied()
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
        let path = self.field();
        if !path.is_empty() {
            write!(f, "{path}: ")?;
        }
        f.write_str(&self.reason())
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    /// As serde says it, but a YAML or JSON null is `null` (serde's "unit value" means nothing to a user).
    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        match unexpected {
            de::Unexpected::Unit => {
                de::Error::custom(format_args!("invalid type: null, expected {expected}"))
            }
            other => de::Error::custom(format_args!("invalid type: {other}, expected {expected}")),
        }
    }

    fn custom<T: fmt::Display>(message: T) -> Self {
        DecodeError {
            message: message.to_string(),
            path: Vec::new(),
            steps: Vec::new(),
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
