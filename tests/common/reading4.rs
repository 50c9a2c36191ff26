//! The fourth round of real objects (tests/fixtures/reading4/): each group's expected readings (written from
//! the sources, `<group>-expected.tsv`) and how a node entry, as `scan -o json` prints it and the status
//! holds it, is held to one of them. The unit tier checks the same tables against the core
//! (`src/inventory/scanner/tests/reading_fourth.rs`); these are what a user sees from the CLI and the
//! operator.

use serde_json::Value;

/// The groups, each a `<group>-nodes.yaml` with its `<group>-expected.tsv`.
pub const GROUPS: [&str; 7] = [
    "sharing", "npu", "tail", "signals", "vendors", "health", "more",
];

/// The objects read otherwise than the expert, by name, with why (the unit tier lists the same).
pub const NOT_YET: [&str; 1] = ["health-longpt-5002544-a30-mig-2g12gb"];

/// One row of an expected-reading table.
pub struct Expected {
    pub node: String,
    /// `-`: no accelerator node (not listed); `unknown`: listed with no vendor.
    pub vendor: String,
    pub count: Option<u64>,
    pub product: Option<String>,
    pub count_from: Option<String>,
    pub reasons: Vec<String>,
    pub not_reasons: Vec<String>,
}

/// The expected readings of a group.
pub fn expected(group: &str) -> Vec<Expected> {
    let path = super::fixture_path(&format!("reading4/{group}-expected.tsv"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let cell = |c: &str| (c != "-" && c != "?").then(|| c.to_owned());
    let list = |c: &str| -> Vec<String> {
        c.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty() && *r != "-")
            .map(str::to_owned)
            .collect()
    };
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let c: Vec<&str> = line.split('\t').collect();
            assert_eq!(c.len(), 7, "{path}: {line}");
            Expected {
                node: c[0].to_owned(),
                vendor: c[1].to_owned(),
                count: c[2].parse().ok(),
                product: cell(c[3]),
                count_from: cell(c[4]),
                reasons: list(c[5]),
                not_reasons: list(c[6]),
            }
        })
        .collect()
}

/// Lower case without spaces, `-` and `_`: how product tokens are compared.
fn squeezed(text: &str) -> String {
    text.chars()
        .filter(|c| !matches!(c, ' ' | '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect()
}

/// What is wrong with `entry` (a node entry as JSON; `None`: not listed) against `want`; empty when it
/// agrees. `labels`: the object's labels (a count from the vendor's own count label is no `derivedFrom`
/// entry). `ignored`: reasons not judged here, with why the caller gives.
pub fn disagreements(
    want: &Expected,
    entry: Option<&Value>,
    labels: &serde_json::Map<String, Value>,
    ignored: &[&str],
) -> Vec<String> {
    let mut wrong = Vec::new();
    let Some(e) = entry else {
        if want.vendor != "-" {
            wrong.push(format!(
                "not listed; the expert reads a {} node",
                want.vendor
            ));
        }
        return wrong;
    };
    if want.vendor == "-" {
        wrong.push(format!(
            "listed ({}), but it is no accelerator node",
            e["vendor"]
        ));
        return wrong;
    }
    let vendor = e["vendor"].as_str().unwrap_or("unknown");
    if vendor != want.vendor {
        wrong.push(format!("vendor {vendor}, expected {}", want.vendor));
    }
    let derived = e["derivedFrom"]["count"].as_str();
    if let Some(n) = want.count
        && e["count"].as_u64() != Some(n)
    {
        wrong.push(format!("count {} ({derived:?}), expected {n}", e["count"]));
    }
    if let Some(p) = &want.product
        && !e["product"]
            .as_str()
            .is_some_and(|got| squeezed(got).contains(&squeezed(p)))
    {
        wrong.push(format!("product {}, expected one naming {p}", e["product"]));
    }
    if let (Some(from), Some(_)) = (&want.count_from, want.count) {
        let told = match derived {
            Some(d) => d.contains(from.as_str()),
            None => labels.contains_key(from),
        };
        if !told {
            wrong.push(format!("count from {derived:?}, expected {from}"));
        }
    }
    let got: Vec<&str> = e["issues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["reason"].as_str())
        .collect();
    for r in want
        .reasons
        .iter()
        .filter(|r| !ignored.contains(&r.as_str()))
    {
        if !got.contains(&r.as_str()) {
            wrong.push(format!("no {r} (issues {got:?})"));
        }
    }
    for r in want
        .not_reasons
        .iter()
        .filter(|r| !ignored.contains(&r.as_str()))
    {
        if got.contains(&r.as_str()) {
            wrong.push(format!("false alarm {r}"));
        }
    }
    wrong
}

/// Fails with every disagreement of the objects not in [`NOT_YET`] (and names a listed one that now agrees).
pub fn assert_agree(failures: &[(String, String)], rows: usize) {
    let fixed: Vec<&str> = NOT_YET
        .iter()
        .copied()
        .filter(|n| !failures.iter().any(|(node, _)| node == n))
        .collect();
    let unexpected: Vec<String> = failures
        .iter()
        .filter(|(node, _)| !NOT_YET.contains(&node.as_str()))
        .map(|(node, why)| format!("{node}: {why}"))
        .collect();
    eprintln!(
        "fourth round: {rows} objects, {} disagreements outside the {} known",
        unexpected.len(),
        NOT_YET.len()
    );
    assert!(
        fixed.is_empty(),
        "these now agree: take them off NOT_YET: {fixed:?}"
    );
    assert!(
        unexpected.is_empty(),
        "{} disagreements:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
