//! Digests of content that is only ever compared: what a cache keeps instead of a copy.
//!
//! The GpuNode watch holds one object per GPU node, each with its node's full detail (every device); keeping
//! a copy of each, and of each write until the watch brings it back, held the detail of the whole fleet
//! twice more than the model does. The publisher only asks "is it the same?", which a digest answers.

use std::hash::{DefaultHasher, Hasher};
use std::io;

use serde::Serialize;

/// A 128-bit digest of a value's JSON form. Equal values have equal digests; two different values share
/// one with a chance of about 2^-128, far below that of a lost watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Digest(u64, u64);

impl Digest {
    /// The digest of `value` serialized as JSON (streamed into the hash: no copy is made).
    pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> Self {
        let mut halves = Halves {
            first: DefaultHasher::new(),
            second: DefaultHasher::new(),
        };
        // Two independent halves: the second starts from a different state.
        halves.second.write_u64(0x9e37_79b9_7f4a_7c15);
        // The hasher has no I/O errors, and our types (string-keyed maps) always serialize; a value that
        // did not would be digested up to where it failed, the same way on both sides of a comparison.
        let _ = serde_json::to_writer(&mut halves, value);
        Digest(halves.first.finish(), halves.second.finish())
    }
}

/// Feeds serialized bytes to both hashers.
struct Halves {
    first: DefaultHasher,
    second: DefaultHasher,
}

impl io::Write for Halves {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.first.write(bytes);
        self.second.write(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn equal_values_agree_and_a_changed_one_does_not() {
        let a: BTreeMap<&str, u32> = [("a", 1), ("b", 2)].into();
        let same: BTreeMap<&str, u32> = [("b", 2), ("a", 1)].into();
        let changed: BTreeMap<&str, u32> = [("a", 1), ("b", 3)].into();
        assert_eq!(Digest::of(&a), Digest::of(&same));
        assert_ne!(Digest::of(&a), Digest::of(&changed));
        assert_ne!(Digest::of("ab"), Digest::of(&["a", "b"]));
        let Digest(first, second) = Digest::of(&a);
        assert_ne!(first, second, "the halves are independent");
    }
}
