//! Labels of the form `<prefix><kind>=<value>` and their counted form `<prefix><kind>.<value>=<count>`, as
//! AMD's node labeller writes them (`amd.com/gpu.vram=192G`, `beta.amd.com/gpu.vram.16G=1`). In the counted
//! form the label's value is how many devices have that property: never a boolean, and never the property.

use std::collections::BTreeMap;

use crate::inventory::label_reader::LabelReader;

/// A node's labels of one family, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CountedLabels {
    /// `<kind>=<value>`: the value, trimmed, and the label it came from.
    pub(crate) plain: BTreeMap<&'static str, (String, String)>,
    /// `<kind>.<value>=<count>`: per kind, each value with its count, sorted by value.
    pub(crate) counted: BTreeMap<&'static str, Vec<(String, u64)>>,
}

impl CountedLabels {
    /// Reads every label under one of `prefixes` whose kind is one of `kinds` (longest kind first, so that
    /// `compute-memory-partition` is not read as a `compute` value). Counts that do not parse are
    /// `InvalidLabel` issues, through the reader.
    pub(crate) fn read(
        labels: &mut LabelReader<'_>,
        prefixes: &[&str],
        kinds: &[&'static str],
    ) -> CountedLabels {
        let mut by_length: Vec<&'static str> = kinds.to_vec();
        by_length.sort_by_key(|k| std::cmp::Reverse(k.len()));
        let keys: Vec<(&str, &str)> = labels
            .iter()
            .filter_map(|(key, _)| {
                let rest = prefixes.iter().find_map(|p| key.strip_prefix(p))?;
                Some((key, rest))
            })
            .collect();
        let mut found = CountedLabels::default();
        for (key, rest) in keys {
            let Some(kind) = by_length
                .iter()
                .find(|k| rest == **k || rest.starts_with(&format!("{k}.")))
            else {
                continue;
            };
            if rest == *kind {
                if let Some(value) = labels.text(key) {
                    // The first prefix wins (the current labels over the `beta.` ones).
                    found
                        .plain
                        .entry(kind)
                        .or_insert_with(|| (value.to_owned(), key.to_owned()));
                }
                continue;
            }
            let value = &rest[kind.len() + 1..];
            if let Some(count) = labels.count(key).filter(|_| !value.is_empty()) {
                let values = found.counted.entry(kind).or_default();
                if !values.iter().any(|(v, _)| v == value) {
                    values.push((value.to_owned(), count));
                    values.sort();
                }
            }
        }
        found
    }

    /// The value of a kind: the plain label's, else the counted value held by the most devices.
    pub(crate) fn value(&self, kind: &str) -> Option<(&str, &str)> {
        if let Some((value, key)) = self.plain.get(kind) {
            return Some((value, key));
        }
        self.counted
            .get(kind)?
            .iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
            .map(|(value, _)| (value.as_str(), "counted"))
    }

    /// How many devices the counted labels of `kind` count (every value's count, summed).
    pub(crate) fn devices(&self, kind: &str) -> Option<u64> {
        let values = self.counted.get(kind)?;
        Some(
            values
                .iter()
                .fold(0u64, |sum, (_, n)| sum.saturating_add(*n)),
        )
    }

    /// Whether any label of the family was read.
    pub(crate) fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.counted.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_value_after_the_last_dot_is_a_count() {
        let map = labels(&[
            ("beta.amd.com/gpu.cu-count.64", "1"),
            ("beta.amd.com/gpu.device-id.6860", "1"),
            ("beta.amd.com/gpu.vram.16G", "1"),
            ("amd.com/gpu.driver-version.6.12.12", "8"),
            ("amd.com/gpu.compute-memory-partition", "cpx_nps4"),
            ("amd.com/gpu.unknown-kind.x", "3"),
        ]);
        let map: crate::inventory::text_map::TextMap = map.iter().collect();
        let mut reader = LabelReader::new(Some(&map));
        let read = CountedLabels::read(
            &mut reader,
            &["amd.com/gpu.", "beta.amd.com/gpu."],
            &[
                "cu-count",
                "device-id",
                "vram",
                "driver-version",
                "compute-memory-partition",
                "compute",
            ],
        );
        assert_eq!(read.devices("cu-count"), Some(1), "1 GPU, not 64");
        assert_eq!(read.value("cu-count"), Some(("64", "counted")));
        assert_eq!(read.value("vram"), Some(("16G", "counted")));
        assert_eq!(read.value("driver-version"), Some(("6.12.12", "counted")));
        assert_eq!(read.devices("driver-version"), Some(8));
        assert_eq!(
            read.value("compute-memory-partition"),
            Some(("cpx_nps4", "amd.com/gpu.compute-memory-partition"))
        );
        assert_eq!(read.value("compute"), None);
        assert!(!read.counted.contains_key("unknown-kind"));
    }

    #[test]
    fn a_count_that_is_not_a_number_is_an_issue_not_a_device() {
        let map = labels(&[("beta.amd.com/gpu.family.AI", "yes")]);
        let map: crate::inventory::text_map::TextMap = map.iter().collect();
        let mut reader = LabelReader::new(Some(&map));
        let read = CountedLabels::read(&mut reader, &["beta.amd.com/gpu."], &["family"]);
        assert_eq!(read.devices("family"), None);
        let (issues, _) = reader.finish();
        assert_eq!(issues.len(), 1);
        assert!(issues[0].message.contains("beta.amd.com/gpu.family.AI"));
    }
}
