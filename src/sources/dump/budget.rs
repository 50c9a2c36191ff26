//! What a dump may cost: its text, and the bytes it expands to once read.
//!
//! A dump is charged by what reading it builds, not by its length: a YAML alias copies its anchored node, so
//! a 1 MB file of one anchored 1 MiB string aliased 2,000 times builds 2 GB. Counting nodes (as before) let
//! such a file through; counting bytes does not. One cap (`--max-input-bytes`) bounds the text read and the
//! bytes it expands to, so the memory a dump takes stays a small multiple of the cap whatever it holds.

use std::mem::size_of;

use super::tree::{At, Tree, Value};

/// The default cap on a dump's text and on what it expands to: 256 MiB (a `kubectl get -o yaml` of about
/// 5,000 nodes and 30,000 pods fits; a larger one takes `--max-input-bytes`).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 * 1024 * 1024;

/// What one node of the tree costs beyond its text: the node itself (a map's entry holds two).
pub(super) const NODE_BYTES: usize = size_of::<Tree>();

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

    /// Spends `bytes` on something at `at`, or says that the dump expands past the cap.
    pub(crate) fn spend(&mut self, bytes: usize, at: At) -> Result<(), String> {
        self.used = self.used.saturating_add(bytes as u64);
        if self.used <= self.limit {
            return Ok(());
        }
        let place = if at.line == 0 {
            String::new()
        } else {
            format!("line {}, column {}: ", at.line, at.column)
        };
        Err(format!(
            "{place}the dump expands to more than {} bytes once read (--max-input-bytes; YAML aliases \
             count the bytes they copy, each object at least {OBJECT_BYTES}); if the file is a real \
             export, raise --max-input-bytes, else it is not a dump kubectl writes",
            self.limit
        ))
    }
}

/// The bytes a tree takes, its text and its nodes (what an alias of it copies).
pub(super) fn tree_bytes(tree: &Tree) -> usize {
    // Iterative: a tree's depth is bounded by the parsers, but a walk needs no stack either way.
    let mut stack = vec![tree];
    let mut total = 0usize;
    while let Some(node) = stack.pop() {
        total = total.saturating_add(NODE_BYTES);
        match &node.value {
            Value::Text(text) | Value::Plain(text) => total = total.saturating_add(text.len()),
            Value::Seq(items) => stack.extend(items),
            Value::Map(entries) => stack.extend(entries.iter().flat_map(|(k, v)| [k, v])),
            Value::Number(_) | Value::Bool(_) | Value::Null => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spending_past_the_cap_names_the_flag_and_the_place() {
        let mut budget = Budget::new(100);
        budget.spend(60, At::default()).unwrap();
        let error = budget
            .spend(41, At { line: 3, column: 7 })
            .expect_err("past the cap");
        assert!(error.starts_with("line 3, column 7: "), "{error}");
        assert!(error.contains("--max-input-bytes"), "{error}");
        assert!(error.contains("more than 100 bytes"), "{error}");
    }

    #[test]
    fn a_tree_costs_its_text_and_its_nodes() {
        let at = At::default();
        let tree = Tree {
            value: Value::Seq(vec![Tree::text("abcd", at), Tree::text("", at)]),
            at,
        };
        assert_eq!(tree_bytes(&tree), 3 * NODE_BYTES + 4);
    }
}
