//! Interned text and sorted maps of it: what a node's labels and resource lists are held as.
//!
//! A fleet repeats its label keys and most of its values (a pool of 2,000 nodes shares its product, zone,
//! driver version and instance type), and a `BTreeMap<String, String>` holds each of them once per node:
//! that was most of the node cache (docs/scale.md). Here each distinct string is held once for the whole
//! process and freed when the last node naming it goes; a map is one sorted slice of pointer pairs.

use std::fmt;

use internment::ArcIntern;

/// A string held once per process (the interner frees it with its last holder). Compares by pointer.
pub type Text = ArcIntern<str>;

/// A small sorted map of interned keys to interned values (a node's labels, a resource list).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct TextMap(Box<[(Text, Text)]>);

impl TextMap {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// The value of an interned `key`, found by pointer (a scan of the few entries, no string compared):
    /// faster than [`TextMap::get`] where one key is asked of many maps, as the quota rules ask every node.
    pub fn get_interned(&self, key: &Text) -> Option<&Text> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The entries as held, sorted by key (values shared, not copied).
    pub fn entries(&self) -> &[(Text, Text)] {
        &self.0
    }

    /// The entries, sorted by key.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + Clone {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Keeps the last value of a repeated key, as a JSON object decoded into a map does.
impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for TextMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(entries: I) -> Self {
        let mut pairs: Vec<(Text, Text)> = entries
            .into_iter()
            .map(|(k, v)| (Text::from(k.as_ref()), Text::from(v.as_ref())))
            .collect();
        // Stable: of equal keys the last given stays last, and dedup keeps the first of a run, so reverse.
        pairs.reverse();
        pairs.sort_by(|(a, _), (b, _)| a.cmp(b));
        pairs.dedup_by(|later, kept| later.0 == kept.0);
        Self(pairs.into_boxed_slice())
    }
}

impl fmt::Debug for TextMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_a_sorted_map_and_shares_its_strings() {
        let a: TextMap = [("zone", "a"), ("gpu", "H100"), ("zone", "b")]
            .into_iter()
            .collect();
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [("gpu", "H100"), ("zone", "b")]
        );
        assert_eq!(a.get("gpu"), Some("H100"));
        assert_eq!(a.get("absent"), None);
        assert!(a.contains_key("zone") && !a.contains_key("zon"));
        let b: TextMap = [("gpu".to_owned(), "H100".to_owned())]
            .into_iter()
            .collect();
        // One allocation for "H100", whichever node names it.
        assert!(std::ptr::eq(
            a.get("gpu").unwrap().as_ptr(),
            b.get("gpu").unwrap().as_ptr()
        ));
        assert_eq!(format!("{b:?}"), r#"{"gpu": "H100"}"#);
        assert!(TextMap::default().is_empty());
    }
}
