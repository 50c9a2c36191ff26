//! Reading the environment knobs of the bench driver (BENCH_*, hack/bench.sh) and the soak (SOAK_*,
//! hack/soak.sh): a variable that is unset or empty takes its default.

use std::path::PathBuf;
use std::time::Duration;

use crate::Res;

/// The value of `name`, if it is set and not empty.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The value of `name`, or `default` when it is unset or empty.
pub fn env_str(name: &str, default: &str) -> String {
    var(name).unwrap_or_else(|| default.to_owned())
}

/// The whole number `name`, or `default` when it is unset or empty; panics naming the variable when it is
/// something else (the bench driver's way).
pub fn env_num(name: &str, default: u64) -> u64 {
    env_str(name, &default.to_string())
        .parse()
        .unwrap_or_else(|_| panic!("{name} must be a whole number"))
}

/// The path `name`, which hack/soak.sh sets: an error naming the variable when it is unset or empty.
pub fn required(name: &str) -> Res<PathBuf> {
    var(name)
        .map(PathBuf::from)
        .ok_or_else(|| format!("{name} is not set (hack/soak.sh sets it; see its header)").into())
}

/// The number `name`, or `default` when it is unset or empty; an error naming the variable and its value when
/// it is something else (the soak's way).
pub fn num<T: std::str::FromStr>(name: &str, default: T) -> Res<T> {
    match var(name) {
        None => Ok(default),
        Some(v) => v
            .parse()
            .map_err(|_| format!("{name}={v}: expected a number").into()),
    }
}

/// [`num`] seconds, as a duration.
pub fn secs(name: &str, default: u64) -> Res<Duration> {
    Ok(Duration::from_secs(num(name, default)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable no test sets (setting variables in a multi-threaded test binary is unsound).
    const UNSET: &str = "GPU_INVENTORY_TESTKIT_NEVER_SET";

    #[test]
    fn an_unset_variable_takes_its_default() {
        assert_eq!(var(UNSET), None);
        assert_eq!(env_str(UNSET, "1000 5000"), "1000 5000");
        assert_eq!(env_num(UNSET, 300), 300);
        assert_eq!(num(UNSET, 0.10).unwrap(), 0.10);
        assert_eq!(secs(UNSET, 60).unwrap(), Duration::from_secs(60));
        let missing = required(UNSET).unwrap_err().to_string();
        assert!(
            missing.starts_with(&format!("{UNSET} is not set")),
            "{missing}"
        );
    }
}
