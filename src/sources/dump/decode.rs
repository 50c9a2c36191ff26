//! Decoding a [`Tree`] into the API types, where the target type decides what a plain YAML scalar is.
//!
//! kubectl quotes every string that could read as something else, but PyYAML (`yaml.safe_dump`) and people
//! follow YAML 1.1, where `08`, `1e3` and `0o17` are strings and so are written unquoted; a YAML 1.2 parser
//! reads them as numbers. So:
//!
//! - a **string** position (labels, annotations, every `String` field and `map[string]string`, map keys)
//!   reads any scalar as its text exactly as written: `08` → `"08"`, `1.10` → `"1.10"` (not `1.1`),
//!   `true` → `"true"`, `yes` → `"yes"`, `0x1F` → `"0x1F"`, `1e3` → `"1e3"`, `~` → `"~"`;
//! - a **number** or **boolean** position reads a plain scalar by the YAML 1.2 core schema (`8`, `+8`,
//!   `0x1F`, `0o17`, `1e3`, `.inf`; `true`/`True`/`TRUE`), and a quoted one is an error, as in JSON;
//! - an **untyped** position (`Quantity`, `IntOrString`, free-form JSON such as an opaque driver's
//!   parameters) reads a plain scalar as null or a boolean by the YAML 1.2 core schema, as a number only
//!   when the number prints back exactly as written (`8`, `-3`, `0.5`), else as its text: `08`, `1.10`,
//!   `+5`, `.5`, `1e3`, `0x1F` and `yes` stay strings, so nothing is lost by rounding it to a number.
//!
//! Errors name the field (`spec.devices[0].capacity["memory"]`) and, for YAML, its line and column.

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, Unexpected, Visitor};

use super::decode_error::{DecodeError, Step, key_segment};
use super::scalars::{Integer, Untyped, core_bool, core_float, core_integer, untyped};
use super::tree::{Tree, Value};

/// Decodes `tree` as a `T`.
pub(crate) fn decode<'de, T: de::Deserialize<'de>>(tree: &'de Tree) -> Result<T, DecodeError> {
    T::deserialize(tree).map_err(|e| e.located(tree.at))
}

/// Decodes the value of `key` in the mapping `tree`; `None` when the key is missing or null.
pub(crate) fn decode_field<'de, T: de::Deserialize<'de>>(
    tree: &'de Tree,
    key: &str,
) -> Result<Option<T>, DecodeError> {
    let Value::Map(entries) = &tree.value else {
        return Ok(None);
    };
    // The last entry of `key`, as `Tree::get` reads it.
    match entries.iter().rposition(|(k, _)| k.as_str() == Some(key)) {
        None => Ok(None),
        Some(index) => {
            let value = &entries[index].1;
            <Option<T> as de::Deserialize>::deserialize(value)
                .map_err(|e| e.within(format!(".{key}"), Step::Entry(index), value.at))
        }
    }
}

impl Tree {
    fn invalid<T>(&self, expected: &dyn de::Expected) -> Result<T, DecodeError> {
        let unexpected = match &self.value {
            // Unquoted, it is not a "string" to the reader who wrote it: show it as written.
            Value::Plain(text) => {
                return Err(de::Error::custom(format_args!(
                    "invalid type: `{text}`, expected {expected}"
                )));
            }
            Value::Text(text) => Unexpected::Str(text),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(n), _, _) => Unexpected::Unsigned(n),
                (_, Some(n), _) => Unexpected::Signed(n),
                (_, _, n) => Unexpected::Float(n.unwrap_or(f64::NAN)),
            },
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Null => Unexpected::Other("null"),
            Value::Seq(_) => Unexpected::Seq,
            Value::Map(_) => Unexpected::Map,
        };
        Err(de::Error::invalid_type(unexpected, expected))
    }
}

fn visit_number<'de, V: Visitor<'de>>(
    n: &serde_json::Number,
    visitor: V,
) -> Result<V::Value, DecodeError> {
    if let Some(n) = n.as_u64() {
        visitor.visit_u64(n)
    } else if let Some(n) = n.as_i64() {
        visitor.visit_i64(n)
    } else {
        visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

impl<'de> Tree {
    fn integer<V: Visitor<'de>>(&'de self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Plain(text) => match core_integer(text) {
                Some(Integer::Signed(n)) => visitor.visit_i64(n),
                Some(Integer::Unsigned(n)) => visitor.visit_u64(n),
                None => self.invalid(&visitor),
            },
            Value::Number(n) => visit_number(n, visitor),
            _ => self.invalid(&visitor),
        }
    }

    fn float<V: Visitor<'de>>(&'de self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Plain(text) => match core_float(text) {
                Some(n) => visitor.visit_f64(n),
                None => self.invalid(&visitor),
            },
            Value::Number(n) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
            _ => self.invalid(&visitor),
        }
    }

    fn string<V: Visitor<'de>>(&'de self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Text(text) | Value::Plain(text) => visitor.visit_borrowed_str(text),
            Value::Number(n) => visitor.visit_string(n.to_string()),
            Value::Bool(b) => visitor.visit_borrowed_str(if *b { "true" } else { "false" }),
            _ => self.invalid(&visitor),
        }
    }
}

macro_rules! integers {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            self.integer(visitor)
        }
    )*};
}

macro_rules! strings {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
            self.string(visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for &'de Tree {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Text(text) => visitor.visit_borrowed_str(text),
            Value::Plain(text) => match untyped(text) {
                Untyped::Null => visitor.visit_unit(),
                Untyped::Bool(b) => visitor.visit_bool(b),
                Untyped::Unsigned(n) => visitor.visit_u64(n),
                Untyped::Signed(n) => visitor.visit_i64(n),
                Untyped::Float(n) => visitor.visit_f64(n),
                Untyped::Text => visitor.visit_borrowed_str(text),
            },
            Value::Number(n) => visit_number(n, visitor),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Null => visitor.visit_unit(),
            Value::Seq(items) => visitor.visit_seq(Items::new(items)),
            Value::Map(entries) => visitor.visit_map(Entries::new(entries)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Plain(text) => match core_bool(text) {
                Some(b) => visitor.visit_bool(b),
                None => self.invalid(&visitor),
            },
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => self.invalid(&visitor),
        }
    }

    integers! { deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
    deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.float(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        self.float(visitor)
    }

    strings! { deserialize_char deserialize_str deserialize_string deserialize_bytes
    deserialize_byte_buf deserialize_identifier }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        if self.is_null() {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        if self.is_null() {
            visitor.visit_unit()
        } else {
            self.invalid(&visitor)
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Seq(items) => visitor.visit_seq(Items::new(items)),
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Map(entries) => visitor.visit_map(Entries::new(entries)),
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match &self.value {
            Value::Text(text) | Value::Plain(text) => {
                let variant: StrDeserializer<'_, DecodeError> = text.as_str().into_deserializer();
                visitor.visit_enum(variant)
            }
            Value::Map(entries) => {
                visitor.visit_enum(MapAccessDeserializer::new(Entries::new(entries)))
            }
            _ => self.invalid(&visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }
}

/// A sequence's items, each error placed at its index.
struct Items<'de> {
    items: std::iter::Enumerate<std::slice::Iter<'de, Tree>>,
}

impl<'de> Items<'de> {
    fn new(items: &'de [Tree]) -> Self {
        Items {
            items: items.iter().enumerate(),
        }
    }
}

impl<'de> de::SeqAccess<'de> for Items<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        match self.items.next() {
            Some((index, item)) => seed
                .deserialize(item)
                .map(Some)
                .map_err(|e| e.within(format!("[{index}]"), Step::Item(index), item.at)),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A mapping's entries, each error placed at its key.
struct Entries<'de> {
    entries: std::iter::Enumerate<std::slice::Iter<'de, (Tree, Tree)>>,
    /// The entry whose key was read last, and its position.
    current: Option<(usize, &'de (Tree, Tree))>,
}

impl<'de> Entries<'de> {
    fn new(entries: &'de [(Tree, Tree)]) -> Self {
        Entries {
            entries: entries.iter().enumerate(),
            current: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let Some((index, entry)) = self.entries.next() else {
            return Ok(None);
        };
        self.current = Some((index, entry));
        let (key, _) = entry;
        seed.deserialize(key)
            .map(Some)
            .map_err(|e| e.within(key_segment(key), Step::Entry(index), key.at))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DecodeError> {
        let Some((index, (key, value))) = self.current.take() else {
            return Err(de::Error::custom("a value was asked for before its key"));
        };
        seed.deserialize(value)
            .map_err(|e| e.within(key_segment(key), Step::Entry(index), value.at))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}
