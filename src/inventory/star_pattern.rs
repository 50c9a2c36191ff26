//! A name matched exactly or with one `*` standing for any text, the one way the core matches names by
//! pattern: condition types (`Gpu*Watch`, the health table and `--health-condition`), resource names
//! (`huawei.com/Ascend*-memory`) and annotation keys (`hami.io/node-*-register`, the accelerator registry).
//! A leaf: it names nothing of the core.

/// `prefix*suffix`, or exactly `prefix` when there is no `*`. `S` is the text's owner: `String` for a
/// user's flag, `&'static str` for a shipped table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StarPattern<S> {
    prefix: S,
    /// `Some(suffix)` when the pattern has a `*`.
    suffix: Option<S>,
}

/// `text` split at its first `*`: (before, after), or (text, `None`).
pub fn split_star(text: &str) -> (&str, Option<&str>) {
    match text.split_once('*') {
        Some((prefix, suffix)) => (prefix, Some(suffix)),
        None => (text, None),
    }
}

impl<S: AsRef<str>> StarPattern<S> {
    /// The pattern `prefix*suffix` (exactly `prefix` when `suffix` is `None`).
    pub fn new(prefix: S, suffix: Option<S>) -> StarPattern<S> {
        StarPattern { prefix, suffix }
    }

    /// The text before the `*` (all of it for an exact name).
    pub fn prefix(&self) -> &str {
        self.prefix.as_ref()
    }

    /// The text after the `*`, for a pattern.
    pub fn suffix(&self) -> Option<&str> {
        self.suffix.as_ref().map(AsRef::as_ref)
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        let prefix = self.prefix();
        match self.suffix() {
            None => name == prefix,
            Some(suffix) => {
                name.len() >= prefix.len() + suffix.len()
                    && name.starts_with(prefix)
                    && name.ends_with(suffix)
            }
        }
    }

    /// How much of a name it fixes: of two patterns that match, the one with more is the more specific.
    pub fn fixed_len(&self) -> usize {
        self.prefix().len() + self.suffix().map_or(0, str::len)
    }
}

impl<'a> StarPattern<&'a str> {
    /// The text before the `*`, borrowed as long as the pattern's text (a shipped table's `'static`).
    pub fn borrowed_prefix(&self) -> &'a str {
        self.prefix
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_stands_for_any_text_and_no_star_for_none() {
        let p = StarPattern::new("Gpu", Some("Watch"));
        assert!(p.matches("GpuMemWatch") && p.matches("GpuWatch"));
        assert!(!p.matches("GpuWatc") && !p.matches("Gpu") && !p.matches("XGpuWatch"));
        let exact = StarPattern::new("XIDErrors", None);
        assert!(exact.matches("XIDErrors") && !exact.matches("XIDErrorsX"));
        assert_eq!(split_star("a*b*c"), ("a", Some("b*c")));
        assert_eq!(split_star("abc"), ("abc", None));
        assert_eq!(StarPattern::new("ab", Some("c")).fixed_len(), 3);
    }
}
