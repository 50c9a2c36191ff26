//! `kube`'s label selector (a GpuInventory's `spec.nodeSelector`, `matchLabels` and `matchExpressions`)
//! into the core's [`LabelSelector`]: term by term, so the core matches exactly what `kube` would.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector as ApiLabelSelector;
use kube::core::{Expression, Selector};

use crate::inventory::selector::{LabelSelector, Operator, Requirement};

/// The core's selector of `selector`'s terms.
pub fn label_selector(selector: Selector) -> LabelSelector {
    LabelSelector::new(selector.into_iter().map(|term| match term {
        Expression::In(key, values) => Requirement::new(key, Operator::In, values),
        Expression::NotIn(key, values) => Requirement::new(key, Operator::NotIn, values),
        Expression::Exists(key) => Requirement::new(key, Operator::Exists, []),
        Expression::DoesNotExist(key) => Requirement::new(key, Operator::DoesNotExist, []),
        Expression::Equal(key, value) => Requirement::new(key, Operator::Equal, [value]),
        Expression::NotEqual(key, value) => Requirement::new(key, Operator::NotEqual, [value]),
    }))
}

/// The core's selector of an API object's label selector, or why it is not one (an unknown operator, `In`
/// without values, ...), as `kube` says it.
pub fn api_label_selector(selector: &ApiLabelSelector) -> Result<LabelSelector, String> {
    Selector::try_from(selector.clone())
        .map(label_selector)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use kube::core::SelectorExt;

    use super::*;
    use crate::inventory::selector::{LabelMatcher, parse_selector};
    use crate::inventory::text_map::TextMap;

    const LABEL_SETS: [&[(&str, &str)]; 6] = [
        &[("pool", "gpu"), ("tier", "b"), ("zone", "y"), ("gpu", "")],
        &[("pool", "gpu"), ("tier", "c"), ("gpu", "")],
        &[
            ("pool", "gpu"),
            ("tier", "a"),
            ("gpu", "1"),
            ("cordoned", ""),
        ],
        &[("pool", "gpu"), ("tier", "a"), ("gpu", "1"), ("zone", "x")],
        &[("pool", "gpu"), ("tier", "a"), ("gpu", "1")],
        &[],
    ];

    /// The core's matcher agrees with kube's on every label set, term by term.
    fn agree(kube_selector: &Selector, core: &LabelSelector) {
        let matcher = LabelMatcher::new(core);
        for set in LABEL_SETS {
            let map: BTreeMap<String, String> = set
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect();
            let interned: TextMap = set.iter().copied().collect();
            assert_eq!(
                matcher.matches(&interned),
                kube_selector.matches(&map),
                "{kube_selector} on {set:?}"
            );
        }
    }

    #[test]
    fn the_core_matches_what_kube_matches() {
        let api: ApiLabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"pool": "gpu"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "cordoned", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "NotIn", "values": ["x"]},
                {"key": "gpu", "operator": "Exists"},
            ]
        }))
        .unwrap();
        let kube_selector = Selector::try_from(api.clone()).unwrap();
        let core = api_label_selector(&api).unwrap();
        assert_eq!(core.requirements().len(), 5);
        agree(&kube_selector, &core);
        // The same terms typed on the command line select the same nodes.
        let typed = parse_selector("pool=gpu,tier in (a,b),!cordoned,zone notin (x),gpu").unwrap();
        agree(&kube_selector, &typed);
        // `=` and `!=` terms, as kube holds them.
        let equality: Selector = [
            Expression::Equal("pool".into(), "gpu".into()),
            Expression::NotEqual("zone".into(), "x".into()),
        ]
        .into_iter()
        .collect();
        agree(&equality, &label_selector(equality.clone()));
        agree(&equality, &parse_selector("pool=gpu,zone!=x").unwrap());
        assert!(label_selector(Selector::default()).selects_all());
    }

    #[test]
    fn a_malformed_api_selector_is_an_error() {
        let api: ApiLabelSelector = serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "tier", "operator": "Near", "values": ["a"]}]
        }))
        .unwrap();
        assert!(api_label_selector(&api).is_err());
    }
}
