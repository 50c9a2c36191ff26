//! What the scan derives from one node alone, kept with the node so the next scan of the same node version
//! need not derive it again.
//!
//! A change touches a few nodes, yet every scan reads all of them: at 65,000 nodes, reading each one's labels
//! again for the scope and for the verdict "not a GPU node" was over 100 ms a scan (`make scan-cost`). The
//! node watch replaces a node's `Arc` only when the node changed, so a value derived from it stays true for
//! as long as that `Arc` lives; a changed node is a new `ClusterNode` with nothing derived yet.

use std::fmt;
use std::sync::Mutex;

/// A value derived from the node it sits in (or nothing yet). It is not part of the node's value: two nodes
/// compare equal whatever they have derived, and a clone starts with nothing.
pub struct Derived<T>(Mutex<Option<T>>);

impl<T: Copy> Derived<T> {
    /// The value derived so far, if any.
    pub fn get(&self) -> Option<T> {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `value`.
    pub fn set(&self, value: T) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(value);
    }
}

impl<T> Default for Derived<T> {
    fn default() -> Self {
        Self(Mutex::new(None))
    }
}

impl<T> Clone for Derived<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> PartialEq for Derived<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> fmt::Debug for Derived<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Derived")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_no_part_of_the_value() {
        let a = Derived::default();
        a.set(7u64);
        assert_eq!(a.get(), Some(7));
        assert_eq!(a.clone().get(), None, "a clone derives afresh");
        assert_eq!(a, Derived::default());
    }
}
