//! The shipped tables: every row parses, names a known vendor and a source, and the lookups read them.

use super::*;

#[test]
fn every_shipped_row_parses_with_a_source_and_a_known_vendor() {
    let (registry, errors) = Registry::parse(&FILES);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert!(registry.vendors.len() >= 15, "{}", registry.vendors.len());
    let mut names: Vec<&str> = registry.vendors.iter().map(|v| v.name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), registry.vendors.len(), "a vendor listed twice");
    assert!(
        registry.read_by_registry().count() + super::super::super::model::Vendor::ALL.len()
            <= super::super::super::model::Vendor::SLOTS,
        "more registered vendors than a scope's label signals can hold"
    );
}

#[test]
fn a_bad_row_is_reported_by_file_and_line_and_the_others_stay() {
    let files = [
        (
            "vendors.tsv",
            "# c\nacme\tAcme\tNPUs\tregistry\tacme.io\t-\thttps://example.com\nbad\trow\n",
        ),
        (
            "resources.tsv",
            "acme.io/npu\tacme\tdevice\t-\thttps://example.com\nacme.io/x\tacme\tgallons\t-\thttps://e.com\n\
             acme.io/y\tnobody\tdevice\t-\thttps://e.com\nacme.io/z\tacme\tdevice\t-\tnot-a-url\n",
        ),
    ];
    let (registry, errors) = Registry::parse(&files);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(registry.vendors.len(), 1);
    assert_eq!(registry.resources.len(), 1, "{shown:?}");
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("vendors.tsv:3: 2 columns")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("resources.tsv:2: unit \"gallons\"")),
        "{shown:?}"
    );
    assert!(
        shown.iter().any(|e| e.contains("vendor \"nobody\"")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("resources.tsv:4") && e.contains("https://")),
        "{shown:?}"
    );
}

#[test]
fn a_shared_domain_and_a_row_outside_its_vendor_s_domains_are_reported() {
    let files = [
        (
            "vendors.tsv",
            "acme\tAcme\tNPUs\tregistry\tacme.io\t-\thttps://e.com\n\
             zeta\tZeta\tNPUs\tregistry\tzeta.io,acme.io\t-\thttps://e.com\n",
        ),
        (
            "resources.tsv",
            "zeta.io/npu\tacme\tdevice\t-\thttps://e.com\n",
        ),
    ];
    let (_, errors) = Registry::parse(&files);
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        shown
            .iter()
            .any(|e| e.contains("domain acme.io is both acme's and zeta's")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.contains("zeta.io/npu is outside acme's domains (acme.io)")),
        "{shown:?}"
    );
}

#[test]
fn lookups_prefer_an_exact_name_then_the_longest_prefix() {
    let r = &*REGISTRY;
    assert_eq!(
        r.resource("huawei.com/Ascend310P").map(|x| x.unit),
        Some(RowUnit::Device)
    );
    assert_eq!(
        r.resource("huawei.com/Ascend310P-memory").map(|x| x.unit),
        Some(RowUnit::Capacity)
    );
    assert_eq!(r.resource("example.com/gpu"), None);
    // A name of a registered vendor's domain that no row names is read as whole devices.
    assert_eq!(
        crate::inventory::vendors::unit_of("hygon.com/anything"),
        Some(crate::inventory::vendors::vendor_table::Unit::Device)
    );
    assert_eq!(
        r.pci_product("1002", "74B5"),
        Some("AMD Instinct MI300X VF")
    );
}

/// docs/vendors.md's registry section is the table the code reads: every vendor, resource, label, sharing
/// layer, health condition and non-accelerator row appears there as written, and the section says how many PCI
/// rows there are (`make registry-doc` writes it).
#[test]
fn docs_vendors_md_lists_every_row_of_the_registry() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/vendors.md");
    let doc = std::fs::read_to_string(path).expect("docs/vendors.md");
    let section = doc
        .split_once("## The registry")
        .map(|(_, s)| s)
        .expect("docs/vendors.md has a section '## The registry'");
    let (registry, _) = Registry::parse(&FILES);
    let pattern = |name: &str, suffix: Option<&str>| match suffix {
        Some(s) => format!("`{name}*{s}`"),
        None => format!("`{name}`"),
    };
    let mut missing: Vec<String> = Vec::new();
    let mut need = |text: String| {
        if !section.contains(&text) {
            missing.push(text);
        }
    };
    for v in &registry.vendors {
        need(format!("`{}` ({})", v.name, v.display));
    }
    for r in &registry.resources {
        need(pattern(r.name.prefix(), r.name.suffix()));
    }
    for l in &registry.labels {
        need(match l.value_prefix {
            Some(p) => format!("`{}={p}*`", l.key),
            None => format!("`{}`", l.key),
        });
    }
    for s in &registry.sharing_layers {
        need(pattern(s.key.prefix(), s.key.suffix()));
    }
    for n in &registry.not_accelerators {
        need(format!("`{}`", n.prefix));
    }
    for h in &registry.health_conditions {
        let problem = if h.problem_when_true { "True" } else { "False" };
        need(format!("| `{}` | {} |", h.type_, h.reporter));
        need(format!("| {problem} |"));
    }
    need(format!(
        "({} rows, `pci_devices.tsv`)",
        registry.pci_devices.len()
    ));
    assert!(
        missing.is_empty(),
        "docs/vendors.md's registry section lacks {missing:?}: regenerate it from the TSV files"
    );
}

/// The built-in vendors' rows are the rules their modules apply: each names the unit the module gives.
#[test]
fn built_in_vendors_rows_agree_with_their_modules() {
    use crate::inventory::vendors::vendor_table::Unit;
    let (registry, _) = Registry::parse(&FILES);
    for row in &registry.resources {
        let Some((_, vendor)) = registry.vendor(row.vendor) else {
            continue;
        };
        // A pattern is tried with a name it covers.
        let name = match row.name.suffix() {
            Some(suffix) => format!("{}2{suffix}", row.name.prefix()),
            None => row.name.prefix().to_owned(),
        };
        let module = crate::inventory::vendors::unit_of(&name);
        let want = crate::inventory::vendors::registered::unit(row.unit);
        assert_eq!(
            module,
            Some(want),
            "{name} ({}, builtin: {})",
            vendor.name,
            vendor.builtin
        );
        assert_ne!(
            module,
            Some(Unit::Capacity).filter(|_| row.unit != RowUnit::Capacity)
        );
    }
}
