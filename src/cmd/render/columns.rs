//! Aligned text columns, the layout every table `scan` prints shares.
//!
//! A cell is cut at [`MAX_CELL_CHARS`] characters, with a mark saying how many were left out: live data can
//! join thousands of labels into one cell, and a table of 100,000-character cells is read by no one (the
//! whole values are in `-o json`). Cells are padded by hand, not with `{:<w$}`: Rust's format width stops at
//! 65,535 and panics past it.

use crate::runtime::terminal_text::visible;

/// The most characters of one cell a table shows; the rest is replaced by [`cut_mark`].
pub(crate) const MAX_CELL_CHARS: usize = 4096;

/// Left-aligned columns two spaces apart, the header first.
pub(crate) fn columns(header: &[&str], rows: &[Vec<String>]) -> String {
    aligned(header, rows, true)
}

/// As [`columns`], without the header line when `headers` is false (`--no-headers`).
pub(crate) fn aligned(header: &[&str], rows: &[Vec<String>], headers: bool) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| shown_cell(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| -> String {
        let mut text = String::new();
        for (i, (cell, width)) in cells.zip(&widths).enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(cell);
            pad(&mut text, width.saturating_sub(cell.chars().count()));
        }
        text.trim_end().to_owned() + "\n"
    };
    let mut out = if headers {
        line(&mut header.iter().copied())
    } else {
        String::new()
    };
    for row in &rows {
        out += &line(&mut row.iter().map(String::as_str));
    }
    out
}

/// `n` spaces at the end of `text`.
pub(crate) fn pad(text: &mut String, n: usize) {
    text.extend(std::iter::repeat_n(' ', n));
}

/// A cell as a table shows it: escaped ([`visible`]), then cut at [`MAX_CELL_CHARS`].
pub(crate) fn shown_cell(cell: &str) -> String {
    cut(&visible(cell))
}

/// `text` cut at [`MAX_CELL_CHARS`] characters, with [`cut_mark`] after the part kept.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_CELL_CHARS) {
        None => text.to_owned(),
        Some((at, _)) => {
            let left_out = text[at..].chars().count();
            format!("{}{}", &text[..at], cut_mark(left_out))
        }
    }
}

/// What ends a cut cell: `…(+N chars)`, N the characters left out.
pub(crate) fn cut_mark(left_out: usize) -> String {
    format!("…(+{left_out} chars)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_of_any_length_is_cut_with_a_mark_and_never_panics() {
        let huge = "p".repeat(100_000);
        let table = columns(&["NAME", "PRODUCT"], &[vec!["gpu-a".into(), huge.clone()]]);
        let row = table.lines().nth(1).unwrap();
        assert!(row.starts_with("gpu-a  "), "{row}");
        assert!(
            row.ends_with(&format!("{}…(+95904 chars)", "p".repeat(10))),
            "{}",
            &row[row.len() - 40..]
        );
        assert_eq!(
            row.chars().count(),
            "gpu-a  ".len() + MAX_CELL_CHARS + cut_mark(95_904).chars().count()
        );
        // A cut cell in the first column pads the next under it: widths past 65,535 would have panicked.
        let wide = aligned(
            &["A", "B"],
            &[
                vec![huge.repeat(2), "x".into()],
                vec!["y".into(), "z".into()],
            ],
            false,
        );
        let lines: Vec<&str> = wide.lines().collect();
        assert_eq!(lines.len(), 2, "no header with --no-headers");
        // Both rows end in a one-character cell: as many characters each, the last column is aligned.
        assert_eq!(
            lines[0].chars().count(),
            lines[1].chars().count(),
            "aligned"
        );
        assert!(lines[1].ends_with("  z") && lines[0].ends_with(")  x"));
        assert_eq!(cut("short"), "short");
        assert_eq!(
            cut(&"é".repeat(MAX_CELL_CHARS)),
            "é".repeat(MAX_CELL_CHARS),
            "counted in characters"
        );
    }
}
