//! Reading JSON text as a [`Tree`], each node charged to the dump's budget as it is built: JSON has no
//! aliases, but 512 MiB of `{},` is 180 million objects, and building them all before counting them (as a
//! `serde_json::Value` first would) takes gigabytes before any cap is checked.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::budget::Budget;
use super::tree::{At, NODE_BYTES, Tree, Value};

/// Reads `text` as a tree within `budget`; serde_json's errors end with "at line L column C".
pub(super) fn parse_json(text: &str, budget: &mut Budget) -> Result<Tree, String> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let tree = Charged { budget }
        .deserialize(&mut deserializer)
        .and_then(|tree| deserializer.end().map(|()| tree))
        .map_err(|e| format!("invalid JSON: {e}"))?;
    Ok(tree)
}

/// Builds one node, charging it (and its text) before it is kept.
struct Charged<'b> {
    budget: &'b mut Budget,
}

impl Charged<'_> {
    fn node<E: de::Error>(&mut self, value: Value, text: usize) -> Result<Tree, E> {
        self.budget
            .spend(NODE_BYTES.saturating_add(text))
            .map_err(E::custom)?;
        Ok(Tree {
            value,
            at: At::default(),
        })
    }
}

impl<'de> DeserializeSeed<'de> for Charged<'_> {
    type Value = Tree;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Tree, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Charged<'_> {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(mut self, b: bool) -> Result<Tree, E> {
        self.node(Value::Bool(b), 0)
    }

    fn visit_i64<E: de::Error>(mut self, n: i64) -> Result<Tree, E> {
        self.node(Value::Number(n.into()), 0)
    }

    fn visit_u64<E: de::Error>(mut self, n: u64) -> Result<Tree, E> {
        self.node(Value::Number(n.into()), 0)
    }

    fn visit_f64<E: de::Error>(mut self, n: f64) -> Result<Tree, E> {
        // serde_json never yields a NaN or an infinity (`1e400` is its own error).
        let number = serde_json::Number::from_f64(n)
            .ok_or_else(|| E::custom(format_args!("the number {n} is not one JSON holds")))?;
        self.node(Value::Number(number), 0)
    }

    fn visit_str<E: de::Error>(mut self, text: &str) -> Result<Tree, E> {
        self.node(Value::Text(text.to_owned()), text.len())
    }

    fn visit_string<E: de::Error>(mut self, text: String) -> Result<Tree, E> {
        let len = text.len();
        self.node(Value::Text(text), len)
    }

    fn visit_unit<E: de::Error>(mut self) -> Result<Tree, E> {
        self.node(Value::Null, 0)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Charged {
            budget: &mut *self.budget,
        })? {
            items.push(item);
        }
        self.node(Value::Seq(items), 0)
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let key = Charged {
                budget: &mut *self.budget,
            }
            .visit_string::<A::Error>(key)?;
            let value = map.next_value_seed(Charged {
                budget: &mut *self.budget,
            })?;
            entries.push((key, value));
        }
        self.node(Value::Map(entries), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_read_as_a_tree_of_typed_scalars() {
        let mut budget = Budget::new(1 << 20);
        let tree = parse_json(r#"{"a": [1, -2, 0.5, true, null, "08"]}"#, &mut budget).unwrap();
        let Some(Tree {
            value: Value::Seq(items),
            ..
        }) = tree.get("a")
        else {
            panic!("a sequence: {tree:?}");
        };
        assert!(matches!(items[0].value, Value::Number(_)));
        assert!(matches!(items[3].value, Value::Bool(true)));
        assert!(matches!(items[4].value, Value::Null));
        assert_eq!(items[5].as_str(), Some("08"));
    }

    #[test]
    fn json_past_the_budget_is_refused_while_it_is_read() {
        let text = format!("[{}{{}}]", "{},".repeat(10_000));
        let error = parse_json(&text, &mut Budget::new(64 * 1024)).unwrap_err();
        assert!(
            error.contains("expands to more than 65536 bytes"),
            "{error}"
        );
        assert!(error.contains("at line 1 column"), "where: {error}");
        let error = parse_json("{\"a\": 1} x", &mut Budget::new(1024)).unwrap_err();
        assert!(
            error.starts_with("invalid JSON: trailing characters"),
            "{error}"
        );
    }
}
