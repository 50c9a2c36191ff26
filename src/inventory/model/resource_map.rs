//! The map type of a node entry's per-resource figures.

/// A node entry's per-resource figures (capacity, allocatable, allocated, free) and notes: a map sorted by
/// name in one flat vector. A node has one to a few resources, and a `BTreeMap` spends a whole leaf (eleven
/// slots, 360-720 B) on each of its maps however few they hold: a held GPU entry was 4,493 B with them and
/// is 3,345 B without (`make memory-model`, docs/scale.md). Lookups are a binary search over those few.
pub type ResourceMap<V> = litemap::LiteMap<String, V>;
