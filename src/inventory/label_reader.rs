//! Reading node labels: number-valued ones record an `InvalidLabel` issue when they do not parse, odd but
//! usable values are read and explained in notes. Every vendor module reads its labels through this.

use crate::inventory::model::{Issue, IssueReason};
use crate::inventory::text_map::TextMap;

/// One MiB in bytes; also the largest plausible GPU memory in MiB (1 TiB), above which a memory label is bytes.
pub(crate) const MIB: u64 = 1_048_576;

/// Reads labels: number-valued ones record an `InvalidLabel` issue when they do not parse; odd but usable
/// values (surrounding spaces, empty values, memory in bytes) are read and explained in notes.
#[derive(Debug, Default)]
pub(crate) struct LabelReader<'a> {
    labels: Option<&'a TextMap>,
    invalid: Vec<Issue>,
    notes: Vec<String>,
}

/// A memory label read as MiB, and whether its value was in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MemoryMib {
    /// MiB.
    pub(crate) mib: u64,
    /// The label held bytes (read as `bytes / 1 MiB`).
    pub(crate) was_bytes: bool,
}

impl<'a> LabelReader<'a> {
    /// Wraps a node's labels (absent labels read as empty).
    pub(crate) fn new(labels: Option<&'a TextMap>) -> Self {
        Self {
            labels,
            invalid: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// The raw value of a label.
    pub(crate) fn get(&self, key: &str) -> Option<&'a str> {
        self.labels?.get(key)
    }

    /// All labels, for prefix scans.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + use<'a> {
        self.labels.into_iter().flat_map(TextMap::iter)
    }

    /// A text label, trimmed. Absent or empty = `None` (an empty value is noted, never an issue).
    pub(crate) fn text(&mut self, key: &str) -> Option<&'a str> {
        let raw = self.get(key)?;
        let value = raw.trim();
        if value.is_empty() {
            self.note(format!("label {key} is empty and was ignored"));
            return None;
        }
        if value.len() != raw.len() {
            self.note(format!(
                "label {key} has spaces around its value ({:?}); read as {value:?}",
                shown(raw)
            ));
        }
        Some(value)
    }

    /// A count-like label (`u32` range). Absent or empty = `None`; unparsable = `None` plus an issue.
    pub(crate) fn count(&mut self, key: &str) -> Option<u64> {
        self.number(key, u64::from(u32::MAX))
    }

    /// A size-like label (fits a Kubernetes int64). Absent or empty = `None`; unparsable = `None` plus an issue.
    pub(crate) fn size(&mut self, key: &str) -> Option<u64> {
        self.number(key, i64::MAX as u64)
    }

    /// A per-GPU memory label in MiB. A multiple of 1,048,576 above it (over 1 TiB if it were MiB) is bytes, as
    /// a 2022 GPU Feature Discovery release wrote: it is read as MiB and noted. 0 is unknown (GFD writes 0 when it
    /// cannot read the memory, e.g. on a `-MIG-INVALID` GPU).
    pub(crate) fn memory_mib(&mut self, key: &str) -> Option<MemoryMib> {
        let value = self.size(key)?;
        if value == 0 {
            self.note(format!(
                "label {key}=0 gives no memory size (GPU Feature Discovery writes 0 when it cannot read it): unknown"
            ));
            return None;
        }
        if value <= MIB {
            return Some(MemoryMib {
                mib: value,
                was_bytes: false,
            });
        }
        if value % MIB != 0 {
            // Not a whole number of MiB in bytes either: kept as written, but said to be implausible.
            self.note(format!(
                "label {key}={value} is over 1 TiB per GPU if read as MiB, yet not a whole number of MiB in bytes: \
                 kept as MiB; check the label"
            ));
            return Some(MemoryMib {
                mib: value,
                was_bytes: false,
            });
        }
        let mib = value / MIB;
        self.note(format!(
            "label {key}={value} is in bytes (a 2022 GPU Feature Discovery release wrote bytes): read as {mib} MiB"
        ));
        Some(MemoryMib {
            mib,
            was_bytes: true,
        })
    }

    fn number(&mut self, key: &str, max: u64) -> Option<u64> {
        let raw = self.get(key)?;
        let value = raw.trim();
        if value.is_empty() {
            self.note(format!("label {key} is empty and was ignored"));
            return None;
        }
        match parse_non_negative(value, max) {
            Some(n) => {
                if value.len() != raw.len() {
                    self.note(format!(
                        "label {key} has spaces around its value ({:?}); read as {n}",
                        shown(raw)
                    ));
                }
                Some(n)
            }
            None => {
                self.invalid.push(invalid_label(key, raw, max));
                None
            }
        }
    }

    /// Records a note about how a value was read.
    pub(crate) fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// The `InvalidLabel` issues and the notes collected so far.
    pub(crate) fn finish(self) -> (Vec<Issue>, Vec<String>) {
        (self.invalid, self.notes)
    }
}

/// A label value as shown in messages: at most 64 characters (values can be up to 63; dumps can hold more).
fn shown(value: &str) -> String {
    value.chars().take(64).collect()
}

/// Parses a plain decimal non-negative integer no larger than `max` (no sign, no spaces, no unit).
fn parse_non_negative(value: &str, max: u64) -> Option<u64> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse::<u64>().ok().filter(|n| *n <= max)
}

fn invalid_label(key: &str, value: &str, max: u64) -> Issue {
    // Values can be up to 63 characters; keep the message short and printable either way.
    let shown = shown(value);
    Issue::new(
        IssueReason::InvalidLabel,
        format!(
            "label {key} has value {shown:?}, which is not a whole number between 0 and {max}; \
             it was read as unknown. Fix or remove the label (GPU Feature Discovery writes plain integers)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_integers_only() {
        assert_eq!(parse_non_negative("0", 10), Some(0));
        assert_eq!(parse_non_negative("08", 10), Some(8));
        for bad in [
            "",
            "abc",
            "15GB",
            "-5",
            "+5",
            " 5",
            "5 ",
            "1.5",
            "99999999999999999999",
        ] {
            assert_eq!(parse_non_negative(bad, u64::MAX), None, "{bad:?}");
        }
        assert_eq!(parse_non_negative("11", 10), None);
    }
}
