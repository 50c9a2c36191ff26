//! The knobs of the bench driver ([`bench::Settings`]: BENCH_*, set by hack/bench.sh) and of the soak
//! ([`soak::Settings`]: SOAK_*, set by hack/soak.sh), as typed settings: each a `clap` parser whose every field is
//! an option (`--nodes`) and an environment variable (`BENCH_NODES`), with its default and a doc comment that is
//! its `--help`. [`parse`] reads them as the programs start.
//!
//! A variable set to the empty string counts as unset: the knob takes its default, as the scripts' `${X:-}`
//! leave it. A knob that lists words ("1000 5000") is one value, split at whitespace.

use std::time::Duration;

pub mod bench;
pub mod scale;
pub mod soak;

/// Parses `S` from the command line and the environment, as [`clap::Parser::parse`] does (`--help` lists every
/// knob with its variable and default; a bad value exits 2 with clap's message), except that a variable set to
/// the empty string is ignored, as if it were unset.
pub fn parse<S: clap::Parser>() -> S {
    try_parse_from(std::env::args_os()).unwrap_or_else(|e| e.exit())
}

/// [`parse`] of `args` (the program's name first), the error returned.
fn try_parse_from<S: clap::Parser>(
    args: impl IntoIterator<Item = impl Into<std::ffi::OsString> + Clone>,
) -> Result<S, clap::Error> {
    let mut command = without_empty_env(S::command());
    let mut matches = command.try_get_matches_from_mut(args)?;
    S::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut command))
}

/// `command` with the environment variable taken off every argument whose variable is set but empty (clap
/// would read it as the empty value).
fn without_empty_env(command: clap::Command) -> clap::Command {
    command.mut_args(|arg| {
        let empty = arg
            .get_env()
            .and_then(std::env::var_os)
            .is_some_and(|value| value.is_empty());
        if empty {
            arg.env(clap::builder::Resettable::<clap::builder::OsStr>::Reset)
        } else {
            arg
        }
    })
}

/// The words of a list knob, each parsed by `word`.
fn words<T>(value: &str, word: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    value.split_whitespace().map(word).collect()
}

/// A list knob's words as they are (e.g. a wrapper command and its arguments).
fn strings(value: &str) -> Result<Vec<String>, String> {
    words(value, |w| Ok(w.to_owned()))
}

/// A list knob of whole numbers.
fn whole_numbers(value: &str) -> Result<Vec<usize>, String> {
    words(value, |w| {
        w.parse()
            .map_err(|_| format!("{w}: expected whole numbers"))
    })
}

/// A whole number; 0 counts as 1 (a rate, a period in nodes, a concurrency).
fn at_least_one(value: &str) -> Result<u64, String> {
    let n: u64 = value
        .parse()
        .map_err(|_| format!("{value}: expected a whole number"))?;
    Ok(n.max(1))
}

/// [`at_least_one`], as a count.
fn at_least_one_usize(value: &str) -> Result<usize, String> {
    at_least_one(value).map(|n| n as usize)
}

/// Whole seconds.
fn secs(value: &str) -> Result<Duration, String> {
    value
        .parse()
        .map(Duration::from_secs)
        .map_err(|_| format!("{value}: expected whole seconds"))
}

/// Whole milliseconds.
fn millis(value: &str) -> Result<Duration, String> {
    value
        .parse()
        .map(Duration::from_millis)
        .map_err(|_| format!("{value}: expected whole milliseconds"))
}

/// `S` from `args` alone, every environment variable ignored (the unit tests must not read the developer's).
#[cfg(test)]
fn parse_args<S: clap::Parser>(args: &[&str]) -> Result<S, clap::Error> {
    let mut command = S::command()
        .mut_args(|arg| arg.env(clap::builder::Resettable::<clap::builder::OsStr>::Reset));
    let mut matches = command.try_get_matches_from_mut(args)?;
    S::from_arg_matches_mut(&mut matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_knobs_split_at_whitespace() {
        assert_eq!(whole_numbers(" 1000  5000 "), Ok(vec![1000, 5000]));
        assert_eq!(whole_numbers(""), Ok(vec![]));
        assert!(whole_numbers("1000 many").is_err());
        assert_eq!(
            strings("heaptrack --record-only"),
            Ok(vec!["heaptrack".to_owned(), "--record-only".to_owned()])
        );
    }

    /// Set in the copy of this test binary that [`empty_variables_count_as_unset`] runs.
    const CHILD: &str = "GPU_INVENTORY_TESTKIT_EMPTY_ENV_CHILD";

    /// The variables are the child's own (a test must not set variables in its own process): run again as a
    /// child process with BENCH_NODES and BENCH_PREVIOUS_BIN empty and BENCH_CHANGES set, it parses them.
    #[test]
    fn empty_variables_count_as_unset() {
        if std::env::var_os(CHILD).is_some() {
            let s: bench::Settings = try_parse_from(["bench-driver"]).unwrap();
            assert_eq!(s.nodes, [1000, 5000]);
            assert_eq!(s.previous_bin, None);
            assert_eq!(s.changes, 7);
            let e = try_parse_from::<bench::Settings>(["bench-driver", "--changes", "many"]);
            assert!(e.is_err());
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "settings::tests::empty_variables_count_as_unset"])
            .env(CHILD, "1")
            .env("BENCH_NODES", "")
            .env("BENCH_PREVIOUS_BIN", "")
            .env("BENCH_CHANGES", "7")
            .status()
            .unwrap();
        assert!(status.success(), "the child parse failed: {status}");
    }

    #[test]
    fn zero_counts_as_one_where_a_knob_needs_one() {
        assert_eq!(at_least_one("0"), Ok(1));
        assert_eq!(at_least_one("20"), Ok(20));
        assert!(at_least_one("-1").is_err());
        assert_eq!(secs("120"), Ok(Duration::from_secs(120)));
        assert_eq!(millis("500"), Ok(Duration::from_millis(500)));
    }
}
