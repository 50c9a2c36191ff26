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
    assert_eq!(
        r.vendor_of_domain("hygon.com/anything").map(|v| v.name),
        Some("hygon")
    );
    assert_eq!(
        r.pci_product("1002", "74B5"),
        Some("AMD Instinct MI300X VF")
    );
}
