//! The core's label selector: parsing selector strings (`kubectl -l` syntax) for flags and offline scans,
//! and matching a selector against a node's interned labels. A GpuInventory's `spec.nodeSelector` arrives
//! as `kube`'s selector and is turned into this at the edge (`sources::convert::k8s_selector`).

use std::collections::BTreeSet;
use std::fmt;

use crate::inventory::text_map::TextMap;

/// How a requirement compares a label's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// The label is set to one of the values.
    In,
    /// The label is unset or set to none of the values.
    NotIn,
    /// The label is set (any value).
    Exists,
    /// The label is unset.
    DoesNotExist,
    /// `key=value`: the label is set to the one value.
    Equal,
    /// `key!=value`: the label is unset or set to another value.
    NotEqual,
}

/// One term of a selector: a key, how it is compared, and the values (`Exists`/`DoesNotExist`: none;
/// `Equal`/`NotEqual`: one).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The comparison.
    pub operator: Operator,
    /// The values compared with.
    pub values: BTreeSet<String>,
}

impl Requirement {
    /// A requirement with these values.
    pub fn new(
        key: impl Into<String>,
        operator: Operator,
        values: impl IntoIterator<Item = String>,
    ) -> Requirement {
        Requirement {
            key: key.into(),
            operator,
            values: values.into_iter().collect(),
        }
    }

    /// Whether `labels` satisfy the requirement.
    pub fn matches(&self, labels: &TextMap) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In | Operator::Equal => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn | Operator::NotEqual => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }

    /// Whether every node carrying all of `pinned` (labels with their values) satisfies the requirement,
    /// whatever else it carries.
    pub fn implied_by(&self, pinned: &std::collections::BTreeMap<String, String>) -> bool {
        let value = pinned.get(&self.key);
        match self.operator {
            Operator::In | Operator::Equal => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotIn | Operator::NotEqual => value.is_some_and(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => false,
        }
    }

    /// The one value of an `Equal`/`NotEqual` term.
    fn value(&self) -> &str {
        self.values.iter().next().map_or("", String::as_str)
    }
}

/// A label selector: every requirement must hold. The empty selector selects every node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// The selector of these requirements.
    pub fn new(requirements: impl IntoIterator<Item = Requirement>) -> LabelSelector {
        LabelSelector(requirements.into_iter().collect())
    }

    /// Whether it selects every node (it has no requirement).
    pub fn selects_all(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it selects every node carrying all of `pinned` (labels with their values), whatever else the
    /// node carries: a Kueue flavor whose `nodeLabels` imply an inventory's selector lies wholly inside it.
    pub fn implied_by(&self, pinned: &std::collections::BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| r.implied_by(pinned))
    }

    /// Its requirements, in order.
    pub fn requirements(&self) -> &[Requirement] {
        &self.0
    }
}

/// The `kubectl -l` text of the selector (a scan memo's key, too).
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let values = || r.values.iter().cloned().collect::<Vec<_>>().join(",");
            match r.operator {
                Operator::In => write!(f, "{} in ({})", r.key, values())?,
                Operator::NotIn => write!(f, "{} notin ({})", r.key, values())?,
                Operator::Exists => write!(f, "{}", r.key)?,
                Operator::DoesNotExist => write!(f, "!{}", r.key)?,
                Operator::Equal => write!(f, "{}={}", r.key, r.value())?,
                Operator::NotEqual => write!(f, "{}!={}", r.key, r.value())?,
            }
        }
        Ok(())
    }
}

/// A selector's terms, matched against [`TextMap`] labels (read out of the selector once per scan, not once
/// per node).
#[derive(Clone, Debug)]
pub struct LabelMatcher(Vec<Requirement>);

impl LabelMatcher {
    /// The terms of `selector`.
    pub fn new(selector: &LabelSelector) -> LabelMatcher {
        LabelMatcher(selector.0.clone())
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &TextMap) -> bool {
        self.0.iter().all(|term| term.matches(labels))
    }
}

/// Parses `a=b,c!=d,e,!f,g in (h,i),j notin (k)` into a selector. Empty text selects everything.
pub fn parse_selector(text: &str) -> Result<LabelSelector, String> {
    let mut expressions = Vec::new();
    for term in split_terms(text)? {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        expressions.push(parse_term(term).map_err(|e| format!("label selector {text:?}: {e}"))?);
    }
    Ok(LabelSelector(expressions))
}

/// The `key=value` terms of a selector string, e.g. to label an object so that the selector picks it.
pub(crate) fn equality_labels(text: &str) -> Vec<(String, String)> {
    split_terms(text)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|term| match parse_term(term.trim()) {
            Ok(r) if r.operator == Operator::Equal => {
                let value = r.value().to_owned();
                Some((r.key, value))
            }
            _ => None,
        })
        .collect()
}

/// The label keys a selector string names, each once, in order (`a=b,!c,d in (e)`: `a`, `c`, `d`).
pub(crate) fn selector_keys(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for term in split_terms(text).unwrap_or_default() {
        let Ok(Requirement { key, .. }) = parse_term(term.trim()) else {
            continue;
        };
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    keys
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Result<Vec<&str>, String> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        if depth < 0 {
            return Err(format!("label selector {text:?}: unbalanced ')'"));
        }
    }
    if depth != 0 {
        return Err(format!("label selector {text:?}: unbalanced '('"));
    }
    terms.push(&text[start..]);
    Ok(terms)
}

fn parse_term(term: &str) -> Result<Requirement, String> {
    if let Some((key, values)) = split_set(term, " notin ") {
        return Ok(Requirement::new(valid_key(key)?, Operator::NotIn, values?));
    }
    if let Some((key, values)) = split_set(term, " in ") {
        return Ok(Requirement::new(valid_key(key)?, Operator::In, values?));
    }
    let one = |value: &str| [value.trim().to_owned()];
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::new(
            valid_key(key)?,
            Operator::NotEqual,
            one(value),
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::new(
            valid_key(key)?,
            Operator::Equal,
            one(value),
        ));
    }
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::new(
            valid_key(key)?,
            Operator::DoesNotExist,
            [],
        ));
    }
    Ok(Requirement::new(valid_key(term)?, Operator::Exists, []))
}

fn split_set<'a>(term: &'a str, op: &str) -> Option<(&'a str, Result<BTreeSet<String>, String>)> {
    let (key, rest) = term.split_once(op)?;
    let values = rest
        .trim()
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .map(|inner| inner.split(',').map(|v| v.trim().to_owned()).collect())
        .ok_or_else(|| format!("{term:?}: expected a value list in parentheses"));
    Some((key, values))
}

pub(crate) fn valid_key(key: &str) -> Result<String, String> {
    let key = key.trim();
    let ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if ok {
        Ok(key.to_owned())
    } else {
        Err(format!("{key:?} is not a valid label key"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_keys_are_named_once_in_order() {
        assert_eq!(
            selector_keys("a=b,!c,d in (e,f),a!=x,g"),
            ["a", "c", "d", "g"]
        );
        assert!(selector_keys("").is_empty());
    }

    fn labels(pairs: &[(&str, &str)]) -> TextMap {
        pairs.iter().copied().collect()
    }

    #[test]
    fn parses_kubectl_syntax() {
        let s = parse_selector("pool=gpu, tier in (a,b),!cordoned,zone!=x,gpu").unwrap();
        let matcher = LabelMatcher::new(&s);
        assert!(matcher.matches(&labels(&[
            ("pool", "gpu"),
            ("tier", "b"),
            ("zone", "y"),
            ("gpu", "")
        ])));
        assert!(!matcher.matches(&labels(&[("pool", "gpu"), ("tier", "c"), ("gpu", "")])));
        assert!(!matcher.matches(&labels(&[
            ("pool", "gpu"),
            ("tier", "a"),
            ("gpu", "1"),
            ("cordoned", "")
        ])));
        assert!(!matcher.matches(&labels(&[
            ("pool", "gpu"),
            ("tier", "a"),
            ("gpu", "1"),
            ("zone", "x")
        ])));
        assert!(matcher.matches(&labels(&[("pool", "gpu"), ("tier", "a"), ("gpu", "1")])));
        assert_eq!(
            s.to_string(),
            "pool=gpu,tier in (a,b),!cordoned,zone!=x,gpu"
        );
        assert!(parse_selector("").unwrap().selects_all());
        assert!(!s.selects_all());
        assert!(parse_selector("a in (b").is_err());
        assert!(parse_selector("bad key=1").is_err());
    }

    #[test]
    fn equality_terms() {
        assert_eq!(
            equality_labels("a=1,b!=2,c in (3),d==4"),
            vec![("a".into(), "1".into()), ("d".into(), "4".into())]
        );
    }
}
