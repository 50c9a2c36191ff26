//! A dump as a tree that keeps every scalar's text and how it was written, so that where the text is read
//! decides its type (see [`super::decode`]), not the YAML parser's guess.
//!
//! YAML comes from the event parser under serde-saphyr ([`granit_parser`]); JSON from `serde_json` (`json.rs`),
//! whose strings, numbers, booleans and nulls are typed by the JSON itself.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Marker, Parser, ScalarStyle, Tag};

use super::budget::Budget;

/// What one node of the tree costs beyond its text: the node itself (a map's entry holds two).
pub(super) const NODE_BYTES: usize = std::mem::size_of::<Tree>();

/// A node of the dump, with where it starts in the text.
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    /// What the node holds.
    pub(crate) value: Value,
    /// Where it starts (YAML only).
    pub(crate) at: At,
}

/// Line and column (both from 1) of a node in YAML text; `line` 0 when unknown (JSON).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct At {
    pub(crate) line: usize,
    pub(crate) column: usize,
}

/// Spends `bytes` of `budget` on the node at `at`; past the cap, the error says where.
pub(super) fn charge(budget: &mut Budget, bytes: usize, at: At) -> Result<(), String> {
    budget.spend(bytes).map_err(|e| match at.line {
        0 => e,
        line => format!("line {line}, column {}: {e}", at.column),
    })
}

impl At {
    fn of(marker: &Marker) -> At {
        At {
            line: marker.line(),
            column: marker.col() + 1,
        }
    }
}

/// The contents of a node.
#[derive(Clone, Debug)]
pub(crate) enum Value {
    /// A string whatever it spells: a quoted or block YAML scalar, one tagged `!!str` or `!`, or a JSON string.
    Text(String),
    /// A plain (unquoted) YAML scalar: `08`, `1.10`, `true`, `gpu-1`. Its type is the reader's to decide.
    Plain(String),
    /// A JSON number.
    Number(serde_json::Number),
    /// A JSON boolean.
    Bool(bool),
    /// A JSON null.
    Null,
    /// A sequence.
    Seq(Vec<Tree>),
    /// A mapping, in the order written (a repeated key appears twice; readers keep the last).
    Map(Vec<(Tree, Tree)>),
}

/// Plain scalars YAML 1.2 reads as null.
pub(crate) fn is_plain_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

impl Tree {
    /// A string node.
    pub(crate) fn text(text: &str, at: At) -> Tree {
        Tree {
            value: Value::Text(text.to_owned()),
            at,
        }
    }

    /// The scalar text of a string or plain node.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::Text(text) | Value::Plain(text) => Some(text),
            _ => None,
        }
    }

    /// Null, or nothing written (`key:`).
    pub(crate) fn is_null(&self) -> bool {
        match &self.value {
            Value::Null => true,
            Value::Plain(text) => is_plain_null(text),
            _ => false,
        }
    }

    /// The value of `key` in a mapping (the last one when repeated, as decoding keeps it).
    pub(crate) fn get(&self, key: &str) -> Option<&Tree> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `key` in a mapping, to change it.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Tree> {
        match &mut self.value {
            Value::Map(entries) => entries
                .iter_mut()
                .rev()
                .find(|(k, _)| k.as_str() == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Takes `key` out of a mapping; the last value when repeated.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Tree> {
        let Value::Map(entries) = &mut self.value else {
            return None;
        };
        let mut removed = None;
        entries.retain_mut(|(k, v)| {
            if k.as_str() == Some(key) {
                removed = Some(std::mem::replace(v, Tree::text("", v.at)));
                false
            } else {
                true
            }
        });
        removed
    }
}

/// A collection being read: its entries so far, and its anchor.
struct Open {
    map: bool,
    items: Vec<Tree>,
    anchor: usize,
    at: At,
    /// Bytes it takes, itself included (an alias copies them; see [`parse_yaml`]).
    bytes: usize,
    /// Levels of nodes in it, itself included.
    height: usize,
}

/// The deepest a tree may be, aliases included: a little more than the parser's own nesting limit (255), so
/// that an alias of a deep node inside another deep node (each within the parser's limit) cannot build a tree
/// deep enough to exhaust the stack of whoever walks it.
pub(crate) const MAX_DEPTH: usize = 300;

/// Reads YAML text as a tree; `Ok(None)` when it holds no document.
///
/// Aliases are expanded by copying their anchored node, and every node is charged to `budget` by the bytes
/// it takes (an alias by the bytes of what it copies, an anchor once more for the copy kept of it), so an
/// alias bomb is an error instead of exhausting memory; so is a tree deeper than [`MAX_DEPTH`]. Merge keys
/// (`<<`) are read as ordinary keys: neither kubectl nor PyYAML writes them. More than one document (`---`)
/// is an error: a dump is one object or one List.
pub(crate) fn parse_yaml(text: &str, budget: &mut Budget) -> Result<Option<Tree>, String> {
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, (Tree, usize, usize)> = HashMap::new();
    let mut root = None;
    let mut documents = 0;
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| {
            let at = At::of(e.marker());
            format!(
                "invalid YAML at line {}, column {}: {}",
                at.line,
                at.column,
                e.info()
            )
        })?;
        let at = At::of(&span.start);
        // `bytes` is what `node` takes, `height` its levels; an alias copies all of its node's.
        let (node, bytes, height, anchor) = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                one_document(documents, at)?;
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let bytes = NODE_BYTES.saturating_add(text.len());
                charge(budget, bytes, at)?;
                let value = scalar(text.into_owned(), style, tag.as_deref());
                (Tree { value, at }, bytes, 1, anchor)
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                charge(budget, NODE_BYTES, at)?;
                open.push(Open {
                    map: matches!(event, Event::MappingStart(..)),
                    items: Vec::new(),
                    anchor,
                    at,
                    bytes: NODE_BYTES,
                    height: 1,
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let Some(done) = open.pop() else {
                    return Err(format!(
                        "line {}: a collection ends that never began",
                        at.line
                    ));
                };
                let (bytes, height, anchor) = (done.bytes, done.height, done.anchor);
                (closed(done), bytes, height, anchor)
            }
            Event::Alias(id) => {
                let Some((node, bytes, height)) = anchors.get(&id) else {
                    return Err(format!(
                        "line {}, column {}: an alias to a node that contains it",
                        at.line, at.column
                    ));
                };
                charge(budget, *bytes, at)?;
                (node.clone(), *bytes, *height, 0)
            }
            _ => continue,
        };
        within_depth(open.len().saturating_add(height), at)?;
        if anchor != 0 {
            // The copy kept for later aliases takes memory of its own.
            charge(budget, bytes, at)?;
            anchors.insert(anchor, (node.clone(), bytes, height));
        }
        match open.last_mut() {
            Some(parent) => parent.add(node, bytes, height),
            None => root = Some(node),
        }
    }
    Ok(root)
}

/// Refuses a second document.
fn one_document(documents: usize, at: At) -> Result<(), String> {
    if documents > 1 {
        return Err(format!(
            "line {}: a second YAML document; put the objects in one List, as `kubectl get -o yaml` does",
            at.line
        ));
    }
    Ok(())
}

/// Refuses a node `depth` levels deep, past [`MAX_DEPTH`].
fn within_depth(depth: usize, at: At) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!(
            "line {}, column {}: nested more than {MAX_DEPTH} levels deep (aliases included); a Kubernetes \
             object is never this deep",
            at.line, at.column
        ));
    }
    Ok(())
}

/// A scalar's value: plain (read by type later) unless quoted, a block, or tagged a string.
fn scalar(text: String, style: ScalarStyle, tag: Option<&Tag>) -> Value {
    if style == ScalarStyle::Plain && !tag.is_some_and(is_string_tag) {
        Value::Plain(text)
    } else {
        Value::Text(text)
    }
}

/// A collection that ended, as a node: a map's items paired into entries, a sequence's as they are.
fn closed(done: Open) -> Tree {
    let value = if done.map {
        let mut entries = Vec::with_capacity(done.items.len() / 2);
        let mut items = done.items.into_iter();
        while let (Some(key), Some(value)) = (items.next(), items.next()) {
            entries.push((key, value));
        }
        Value::Map(entries)
    } else {
        Value::Seq(done.items)
    };
    Tree { value, at: done.at }
}

impl Open {
    /// Adds a node taking `bytes`, `height` levels deep, to the collection.
    fn add(&mut self, node: Tree, bytes: usize, height: usize) {
        self.items.push(node);
        self.bytes = self.bytes.saturating_add(bytes);
        self.height = self.height.max(height.saturating_add(1));
    }
}

/// `!!str` and the non-specific `!` make a plain scalar a string.
fn is_string_tag(tag: &Tag) -> bool {
    tag.is_yaml_core_schema_tag("str") || (tag.handle().is_empty() && tag.suffix() == "!")
}
