//! What a dump may cost: its text, and the bytes it expands to once read.
//!
//! A dump is charged by what reading it builds, not by its length: a YAML alias copies its anchored node, so
//! a 1 MB file of one anchored 1 MiB string aliased 2,000 times builds 2 GB. Counting nodes (as before) let
//! such a file through; counting bytes does not. One cap (`--max-input-bytes`) bounds the text read and the
//! bytes it expands to, so the memory a dump takes stays a small multiple of the cap whatever it holds.

/// The default cap on a dump's text and on what it expands to: 512 MiB. kubectl's YAML expands to about 3.6
/// times its text once read (every key and short value is a node), so this fits about 140 MB of YAML: some
/// 3,000 nodes and 20,000 pods; a larger export takes `--max-input-bytes`.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 512 * 1024 * 1024;

/// What one object read from a dump costs beyond its tree: its decoded API type with nothing set is about
/// this size (a `Pod` is the largest the scan reads). An item of `{}` is 3 bytes of text but a whole object,
/// so 6 MB of them (2 million objects) is refused instead of taking gigabytes.
pub(super) const OBJECT_BYTES: usize = 2048;

/// The bytes spent reading one dump, against its cap.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    used: u64,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: u64) -> Budget {
        Budget { limit, used: 0 }
    }

    /// Spends `bytes`, or says that the dump expands past the cap (the caller says where).
    pub(crate) fn spend(&mut self, bytes: usize) -> Result<(), String> {
        self.used = self.used.saturating_add(bytes as u64);
        if self.used <= self.limit {
            return Ok(());
        }
        Err(format!(
            "the dump expands to more than {} bytes once read (--max-input-bytes; YAML aliases \
             count the bytes they copy, each object at least {OBJECT_BYTES}); if the file is a real \
             export, raise --max-input-bytes, else it is not a dump kubectl writes",
            self.limit
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_past_the_cap_names_the_flag() {
        let mut budget = Budget::new(100);
        budget.spend(60).unwrap();
        budget.spend(40).unwrap();
        let error = budget.spend(1).expect_err("past the cap");
        assert!(error.contains("--max-input-bytes"), "{error}");
        assert!(error.contains("more than 100 bytes"), "{error}");
    }
}
