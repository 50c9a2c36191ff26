//! `--max-input-bytes`: the cap on a `-f` dump, shared by the commands that read one (`scan`, `fit`,
//! `quotas`).

use clap::Args;

use crate::sources::dump::DEFAULT_MAX_INPUT_BYTES;

/// How much of a dump may be read.
#[derive(Debug, Args, Clone)]
pub struct InputArgs {
    /// The most a `-f` dump may take: its text, and the bytes it expands to once read (YAML aliases count
    /// the bytes they copy, each object at least 2 KiB). A larger dump is refused (exit 2) before it takes
    /// memory. A size: `536870912`, `512Mi`, `2Gi`.
    #[arg(long, env = "GPUINV_MAX_INPUT_BYTES", value_name = "SIZE",
          default_value = "512Mi", value_parser = parse_size)]
    pub max_input_bytes: u64,
}

impl Default for InputArgs {
    fn default() -> Self {
        InputArgs {
            max_input_bytes: DEFAULT_MAX_INPUT_BYTES,
        }
    }
}

/// A byte size: digits, then `Ki`, `Mi` or `Gi` (or nothing); at least 1 KiB, so that a slip (`256` for
/// `256Mi`) is caught here and not as every dump refused.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let (digits, unit) = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .map_or((trimmed, ""), |at| trimmed.split_at(at));
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?} is not a size like 268435456, 512Mi or 2Gi"))?;
    let factor: u64 = match unit.trim() {
        "" => 1,
        "Ki" | "KiB" => 1 << 10,
        "Mi" | "MiB" => 1 << 20,
        "Gi" | "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "{text:?}: unknown unit {other:?} (use Ki, Mi or Gi)"
            ));
        }
    };
    let bytes = number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))?;
    if bytes < 1024 {
        return Err(format!(
            "{text:?} is under 1Ki: no dump fits; did you mean {text}Mi?"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_their_units_and_slips_are_refused() {
        assert_eq!(parse_size("256Mi"), Ok(256 << 20));
        assert_eq!(parse_size("2Gi"), Ok(2 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("256").unwrap_err().contains("256Mi"));
        assert!(parse_size("1Ti").unwrap_err().contains("unknown unit"));
        assert!(parse_size("-5").is_err());
        assert!(parse_size("99999999999999999999Gi").is_err());
        assert_eq!(InputArgs::default().max_input_bytes, 512 << 20);
    }
}
