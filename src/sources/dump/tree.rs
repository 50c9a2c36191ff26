//! A dump as a tree that keeps every scalar's text and how it was written, so that where the text is read
//! decides its type (see [`super::decode`]), not the YAML parser's guess.
//!
//! YAML comes from the event parser under serde-saphyr ([`granit_parser`]); JSON from `serde_json`, whose
//! strings, numbers, booleans and nulls are typed by the JSON itself.

use std::collections::HashMap;

use serde_saphyr::granit_parser::{Event, Marker, Parser, ScalarStyle, Tag};

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

/// Reads the JSON value as a tree.
pub(crate) fn from_json(value: serde_json::Value) -> Tree {
    let value = match value {
        serde_json::Value::Null => Value::Null,
        serde_json::Value::Bool(b) => Value::Bool(b),
        serde_json::Value::Number(n) => Value::Number(n),
        serde_json::Value::String(s) => Value::Text(s),
        serde_json::Value::Array(items) => Value::Seq(items.into_iter().map(from_json).collect()),
        serde_json::Value::Object(entries) => Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Tree::text(&k, At::default()), from_json(v)))
                .collect(),
        ),
    };
    Tree {
        value,
        at: At::default(),
    }
}

/// A collection being read: its entries so far, and its anchor.
struct Open {
    map: bool,
    items: Vec<Tree>,
    anchor: usize,
    at: At,
    /// Nodes in it, itself included (aliases copy them; see [`parse_yaml`]).
    size: usize,
}

/// Reads YAML text as a tree; `Ok(None)` when it holds no document.
///
/// Aliases are expanded by copying their anchored node. The copies may hold at most four nodes per byte of
/// text, so an alias bomb (anchors of anchors of anchors) is an error instead of exhausting memory. Merge
/// keys (`<<`) are read as ordinary keys: neither kubectl nor PyYAML writes them. More than one document
/// (`---`) is an error: a dump is one object or one List.
pub(crate) fn parse_yaml(text: &str) -> Result<Option<Tree>, String> {
    let budget = text.len().saturating_mul(4).saturating_add(1024);
    let mut used = 0usize;
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, (Tree, usize)> = HashMap::new();
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
        // `size` counts the nodes in `node`; `cost` the new ones (an alias copies all of its node's).
        let (node, size, anchor, cost) = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(format!(
                        "line {}: a second YAML document; put the objects in one List, as `kubectl get \
                         -o yaml` does",
                        at.line
                    ));
                }
                continue;
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value = scalar(text.into_owned(), style, tag.as_deref());
                (Tree { value, at }, 1, anchor, 1)
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                open.push(Open {
                    map: matches!(event, Event::MappingStart(..)),
                    items: Vec::new(),
                    anchor,
                    at,
                    size: 1,
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
                let (size, anchor) = (done.size, done.anchor);
                (closed(done), size, anchor, 1)
            }
            Event::Alias(id) => {
                let Some((node, size)) = anchors.get(&id) else {
                    return Err(format!(
                        "line {}, column {}: an alias to a node that contains it",
                        at.line, at.column
                    ));
                };
                (node.clone(), *size, 0, *size)
            }
            _ => continue,
        };
        used = spend(used, cost, budget, &at)?;
        if anchor != 0 {
            anchors.insert(anchor, (node.clone(), size));
        }
        match open.last_mut() {
            Some(parent) => parent.add(node, size),
            None => root = Some(node),
        }
    }
    Ok(root)
}

/// The nodes made so far after `cost` more, unless that is past the budget.
fn spend(used: usize, cost: usize, budget: usize, at: &At) -> Result<usize, String> {
    let used = used.saturating_add(cost);
    if used > budget {
        return Err(format!(
            "line {}, column {}: aliases expand to more than {budget} nodes (4 per byte of text)",
            at.line, at.column
        ));
    }
    Ok(used)
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
    /// Adds a node of `size` nodes to the collection.
    fn add(&mut self, node: Tree, size: usize) {
        self.items.push(node);
        self.size = self.size.saturating_add(size);
    }
}

/// `!!str` and the non-specific `!` make a plain scalar a string.
fn is_string_tag(tag: &Tag) -> bool {
    tag.is_yaml_core_schema_tag("str") || (tag.handle().is_empty() && tag.suffix() == "!")
}
