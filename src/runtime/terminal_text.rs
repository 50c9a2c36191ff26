//! Text from other people's components (condition messages, label values, API error messages) made safe for
//! a terminal and for line-oriented logs.
//!
//! A node whose Ready message carries `ESC[2J` would clear the reader's screen, an OSC sequence would retitle
//! the terminal (kubectl's CVE-2021-25743), a newline would forge a second log record, and bidirectional
//! overrides reorder what is shown. [`visible`] escapes all of them so they can be seen, never obeyed.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` must not reach a terminal as it is: C0 controls (newline and tab included), DEL, C1 controls,
/// and the bidirectional embedding, override and isolate characters.
fn is_unsafe(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every unsafe character escaped visibly: `\n`, `\r`, `\t`, `\x1b` for C0 controls and DEL,
/// `\u{9b}` and `\u{202e}` for the others. Borrowed when nothing needed escaping.
pub(crate) fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert!(matches!(
            visible("kubelet is posting ready status"),
            Cow::Borrowed(_)
        ));
        assert_eq!(visible("PLEG \x1b[2J down"), "PLEG \\x1b[2J down");
        assert_eq!(visible("\x1b]0;pwned\x07title"), "\\x1b]0;pwned\\x07title");
        assert_eq!(
            visible("line one\nNOTICE forged"),
            "line one\\nNOTICE forged"
        );
        assert_eq!(visible("tab\there\r"), "tab\\there\\r");
        assert_eq!(visible("c1 \u{9b}2J del \x7f"), "c1 \\u{9b}2J del \\x7f");
        assert_eq!(visible("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(
            visible("NVIDIA-H100 80GB — ok ✓"),
            "NVIDIA-H100 80GB — ok ✓",
            "printable text is kept"
        );
    }
}
