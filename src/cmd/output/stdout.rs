//! Writing what a command prints, where writing can fail: `print!` panics (exit 101) when stdout is a
//! closed pipe (`scan | head -1`) or a full disk (`> /dev/full`). Here:
//!
//! - a closed pipe (EPIPE) ends the command quietly with [`EXIT_CLOSED_PIPE`], 141, the status a shell shows
//!   for kubectl there (Go dies of SIGPIPE: 128 + 13). Nothing is printed: the reader left on purpose.
//! - any other write error (ENOSPC, EIO, ...) is said on stderr, naming stdout, and ends with exit 2, so a
//!   script that redirected the output does not take a cut file for a complete one.
//!
//! Rust ignores SIGPIPE in its binaries, so the write returns EPIPE rather than killing the process; that is
//! kept (the API client's sockets rely on it too).

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Exit code when stdout was closed by its reader: 128 + SIGPIPE, as a shell reports kubectl's.
pub const EXIT_CLOSED_PIPE: u8 = 141;

/// Exit code when stdout cannot be written (a full disk): the commands' error code.
pub const EXIT_WRITE_FAILED: u8 = 2;

/// Writes `text` to stdout and flushes it; `code` when it was written, else the code of the failure (said on
/// stderr unless it was a closed pipe).
pub fn emit(text: &str, code: ExitCode) -> ExitCode {
    match write_all(&mut std::io::stdout().lock(), text) {
        Ok(()) => code,
        Err(e) => write_failed(&e),
    }
}

/// `text` written to `out` and flushed.
pub fn write_all(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The exit code for a failed write to stdout, said on stderr unless the reader closed the pipe.
pub fn write_failed(e: &std::io::Error) -> ExitCode {
    if e.kind() == ErrorKind::BrokenPipe {
        return ExitCode::from(EXIT_CLOSED_PIPE);
    }
    say(&format!(
        "error: writing the output to stdout failed: {e}; the output is incomplete (free space where it is \
         redirected, or write it elsewhere)"
    ));
    ExitCode::from(EXIT_WRITE_FAILED)
}

/// One line on stderr; a stderr that cannot be written (closed, a full disk) is not a reason to panic, as
/// `eprintln!` would.
pub fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails as a closed pipe or a full disk does, after taking `room` bytes.
    struct Failing {
        room: usize,
        kind: ErrorKind,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from(self.kind));
            }
            let n = buf.len().min(self.room);
            self.room -= n;
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_is_quiet_and_a_full_disk_is_an_error() {
        let text = "x".repeat(10_000);
        for kind in [ErrorKind::BrokenPipe, ErrorKind::StorageFull] {
            let e = write_all(&mut Failing { room: 100, kind }, &text).unwrap_err();
            assert_eq!(e.kind(), kind);
        }
        let pipe = write_failed(&std::io::Error::from(ErrorKind::BrokenPipe));
        assert_eq!(pipe, ExitCode::from(EXIT_CLOSED_PIPE));
        let full = write_failed(&std::io::Error::from_raw_os_error(28));
        assert_eq!(full, ExitCode::from(EXIT_WRITE_FAILED));
        assert!(
            write_all(
                &mut Failing {
                    room: usize::MAX,
                    kind: ErrorKind::Other
                },
                &text
            )
            .is_ok()
        );
    }
}
