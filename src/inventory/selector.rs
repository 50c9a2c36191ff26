//! Parsing label selector strings (`kubectl -l` syntax) for flags and offline scans, and matching a
//! selector against a node's interned labels.

use std::collections::BTreeSet;

use kube::core::{Expression, Selector};

use crate::inventory::text_map::TextMap;

/// A selector's terms, matched against [`TextMap`] labels as `kube`'s `SelectorExt` matches a `BTreeMap`
/// (the terms are read out of the selector once per scan, not once per node).
#[derive(Clone, Debug)]
pub struct LabelMatcher(Vec<Expression>);

impl LabelMatcher {
    /// The terms of `selector`.
    pub fn new(selector: &Selector) -> LabelMatcher {
        LabelMatcher(selector.clone().into_iter().collect())
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &TextMap) -> bool {
        self.0.iter().all(|term| match term {
            Expression::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Expression::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Expression::Exists(key) => labels.contains_key(key),
            Expression::DoesNotExist(key) => !labels.contains_key(key),
            Expression::Equal(key, value) => labels.get(key) == Some(value.as_str()),
            Expression::NotEqual(key, value) => labels.get(key) != Some(value.as_str()),
        })
    }
}

/// Parses `a=b,c!=d,e,!f,g in (h,i),j notin (k)` into a selector. Empty text selects everything.
pub fn parse_selector(text: &str) -> Result<Selector, String> {
    let mut expressions = Vec::new();
    for term in split_terms(text)? {
        let term = term.trim();
        if term.is_empty() {
            continue;
        }
        expressions.push(parse_term(term).map_err(|e| format!("label selector {text:?}: {e}"))?);
    }
    Ok(expressions.into_iter().collect())
}

/// The `key=value` terms of a selector string, e.g. to label an object so that the selector picks it.
pub(crate) fn equality_labels(text: &str) -> Vec<(String, String)> {
    split_terms(text)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|term| match parse_term(term.trim()) {
            Ok(Expression::Equal(k, v)) => Some((k, v)),
            _ => None,
        })
        .collect()
}

/// The label keys a selector string names, each once, in order (`a=b,!c,d in (e)`: `a`, `c`, `d`).
pub(crate) fn selector_keys(text: &str) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for term in split_terms(text).unwrap_or_default() {
        let key = match parse_term(term.trim()) {
            Ok(
                Expression::In(k, _)
                | Expression::NotIn(k, _)
                | Expression::Equal(k, _)
                | Expression::NotEqual(k, _)
                | Expression::Exists(k)
                | Expression::DoesNotExist(k),
            ) => k,
            Err(_) => continue,
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

fn parse_term(term: &str) -> Result<Expression, String> {
    if let Some((key, values)) = split_set(term, " notin ") {
        return Ok(Expression::NotIn(valid_key(key)?, values?));
    }
    if let Some((key, values)) = split_set(term, " in ") {
        return Ok(Expression::In(valid_key(key)?, values?));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Expression::NotEqual(
            valid_key(key)?,
            value.trim().to_owned(),
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Expression::Equal(valid_key(key)?, value.trim().to_owned()));
    }
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(valid_key(key)?));
    }
    Ok(Expression::Exists(valid_key(term)?))
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

fn valid_key(key: &str) -> Result<String, String> {
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
    use kube::core::SelectorExt;
    use std::collections::BTreeMap;

    #[test]
    fn selector_keys_are_named_once_in_order() {
        assert_eq!(
            selector_keys("a=b,!c,d in (e,f),a!=x,g"),
            ["a", "c", "d", "g"]
        );
        assert!(selector_keys("").is_empty());
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn parses_kubectl_syntax() {
        let s = parse_selector("pool=gpu, tier in (a,b),!cordoned,zone!=x,gpu").unwrap();
        assert!(s.matches(&labels(&[
            ("pool", "gpu"),
            ("tier", "b"),
            ("zone", "y"),
            ("gpu", "")
        ])));
        assert!(!s.matches(&labels(&[("pool", "gpu"), ("tier", "c"), ("gpu", "")])));
        assert!(parse_selector("").unwrap().selects_all());
        // The interned labels' matcher agrees with kube's, term by term.
        let matcher = LabelMatcher::new(&s);
        for set in [
            &[("pool", "gpu"), ("tier", "b"), ("zone", "y"), ("gpu", "")][..],
            &[("pool", "gpu"), ("tier", "c"), ("gpu", "")],
            &[
                ("pool", "gpu"),
                ("tier", "a"),
                ("gpu", "1"),
                ("cordoned", ""),
            ],
            &[("pool", "gpu"), ("tier", "a"), ("gpu", "1"), ("zone", "x")],
            &[("pool", "gpu"), ("tier", "a"), ("gpu", "1")],
        ] {
            let interned: TextMap = set.iter().copied().collect();
            assert_eq!(
                matcher.matches(&interned),
                s.matches(&labels(set)),
                "{set:?}"
            );
        }
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
