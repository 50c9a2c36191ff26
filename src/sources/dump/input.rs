//! Reading a dump's bytes from a file or stdin, bounded: at most the cap and one byte more is read, and a NUL
//! byte (binary data, `/dev/zero`, UTF-16 text) ends the read at once, so that no input is read until memory
//! runs out.

use std::io::Read;
use std::path::Path;

use super::error::NodeDumpError;

/// How much is read at a time: a NUL byte is found within the first this many bytes of `/dev/zero`.
const CHUNK: usize = 64 * 1024;

/// The dump at `path` (`-`: stdin), at most `limit` bytes; its name for messages is the path or `<stdin>`.
pub fn read_dump_bytes(path: &str, limit: u64) -> Result<(Vec<u8>, String), NodeDumpError> {
    if path == "-" {
        let source = "<stdin>".to_owned();
        let bytes = read_bounded(std::io::stdin().lock(), limit, &source)?;
        return Ok((bytes, source));
    }
    let unreadable = |message: String| NodeDumpError::Unreadable {
        source_name: path.to_owned(),
        message,
    };
    if Path::new(path).is_dir() {
        return Err(unreadable(
            "is a directory; -f takes one file, as `kubectl get nodes,pods -A -o yaml > dump.yaml` writes \
             it (or - for stdin)"
                .to_owned(),
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| unreadable(format!("cannot open: {e}")))?;
    let bytes = read_bounded(file, limit, path)?;
    Ok((bytes, path.to_owned()))
}

/// Reads `input` to its end, refusing more than `limit` bytes or a NUL byte as soon as either is read.
pub(crate) fn read_bounded(
    input: impl Read,
    limit: u64,
    source: &str,
) -> Result<Vec<u8>, NodeDumpError> {
    let mut bounded = input.take(limit.saturating_add(1));
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let read = match bounded.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(NodeDumpError::Unreadable {
                    source_name: source.to_owned(),
                    message: format!("reading failed: {e}"),
                });
            }
        };
        let start = bytes.len();
        bytes.extend_from_slice(&chunk[..read]);
        if let Some(nul) = chunk[..read].iter().position(|&b| b == 0) {
            return Err(not_text(&bytes, start + nul, source));
        }
        if bytes.len() as u64 > limit {
            return Err(NodeDumpError::TooLarge {
                source_name: source.to_owned(),
                limit,
            });
        }
    }
    Ok(bytes)
}

/// Why `bytes`, with a NUL byte at `nul`, are not a dump: the first invalid UTF-8 before it, else the NUL.
pub(crate) fn not_text(bytes: &[u8], nul: usize, source: &str) -> NodeDumpError {
    let source_name = source.to_owned();
    if let Err(e) = std::str::from_utf8(&bytes[..nul.min(bytes.len())]) {
        let (line, column) = line_and_column(bytes, e.valid_up_to());
        return NodeDumpError::NotText {
            source_name,
            line,
            column,
        };
    }
    let (line, column) = line_and_column(bytes, nul);
    NodeDumpError::Binary {
        source_name,
        line,
        column,
    }
}

/// Line and column (both from 1, the column in characters) of the byte at `offset`, as an editor shows them;
/// the bytes before it need not be valid UTF-8 (an invalid one counts as one column).
pub(crate) fn line_and_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |newline| newline + 1);
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    // Continuation bytes (10xxxxxx) do not start a character.
    let column = before[line_start..]
        .iter()
        .filter(|&&b| b & 0xC0 != 0x80)
        .count()
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        let text = "a: 1\nbé: \u{1F600}x".as_bytes();
        let x = text.iter().position(|&b| b == b'x').unwrap();
        assert_eq!(line_and_column(text, x), (2, 6));
        assert_eq!(line_and_column(text, 0), (1, 1));
    }

    #[test]
    fn more_than_the_cap_is_refused_after_reading_one_byte_past_it() {
        let input = std::io::repeat(b'a').take(1 << 20);
        let error = read_bounded(input, 1000, "big").expect_err("past the cap");
        assert!(matches!(error, NodeDumpError::TooLarge { limit: 1000, .. }));
        assert!(error.to_string().contains("--max-input-bytes"), "{error}");
        assert_eq!(
            read_bounded(&b"kind: List"[..], 10, "fits").unwrap(),
            b"kind: List"
        );
    }

    #[test]
    fn a_nul_byte_stops_the_read_with_its_place() {
        let input = std::io::repeat(0).take(u64::MAX);
        let error = read_bounded(input, u64::MAX, "zero").expect_err("binary");
        assert!(matches!(
            error,
            NodeDumpError::Binary {
                line: 1,
                column: 1,
                ..
            }
        ));
        let error = read_bounded(&b"a: 1\nb: \0"[..], 100, "f").expect_err("binary");
        assert!(error.to_string().contains("line 2, column 4"), "{error}");
        // The first of the two: an invalid byte before the NUL is said as such.
        let error = read_bounded(&[0xff, 0xfe, 0, b'A'][..], 100, "f").expect_err("not text");
        assert!(
            error
                .to_string()
                .contains("not UTF-8 text (an invalid byte at line 1, column 1)"),
            "{error}"
        );
    }
}
