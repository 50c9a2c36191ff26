//! The layers of `src/`, held by a test rather than by a comment: each top-level module may use only the
//! modules ARCHITECTURE.md's table says it depends on. The pure core (`inventory`) uses nothing of ours, the
//! plumbing (`runtime`) nothing but the error type, the API types (`crd`) nothing at all. Test code (files of
//! tests, and a file's `#[cfg(test)]` module at its end) may reach further: fixtures are read with the
//! sources' dump reader, and round trips go through the publishers' wire conversion.
//!
//! No cluster needed: it reads the source files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level module -> the crate modules its (non-test) code may use.
const ALLOWED: [(&str, &[&str]); 7] = [
    ("inventory", &[]),
    ("runtime", &["error"]),
    ("crd", &[]),
    // The error type names the kubeconfig user and exec plugin of a credential failure (runtime::credentials).
    ("error", &["runtime"]),
    ("sources", &["inventory", "runtime", "error"]),
    (
        "publish",
        &["inventory", "sources", "crd", "runtime", "error"],
    ),
    (
        "cmd",
        &["inventory", "sources", "publish", "crd", "runtime", "error"],
    ),
];

/// Modules of the crate a path `crate::<name>` can name.
const MODULES: [&str; 7] = [
    "inventory",
    "runtime",
    "crd",
    "error",
    "sources",
    "publish",
    "cmd",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Files that hold only tests (or test helpers).
fn is_test_file(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name == "tests.rs"
        || name == "proptests.rs"
        || name == "test_support.rs"
        || name.ends_with("_tests.rs")
        || relative.components().any(|c| c.as_os_str() == "tests")
}

/// The file without its trailing `#[cfg(test)]` module(s): everything from the first `#[cfg(test)]` line that
/// is followed by a `mod` line.
fn non_test_part(text: &str) -> &str {
    let lines: Vec<&str> = text.lines().collect();
    let mut offset = 0;
    for (i, line) in lines.iter().enumerate() {
        let next = lines.get(i + 1).map(|l| l.trim_start()).unwrap_or("");
        if line.trim() == "#[cfg(test)]"
            && (next.starts_with("mod ") || next.starts_with("pub(crate) mod "))
        {
            return &text[..offset];
        }
        offset += line.len() + 1;
    }
    text
}

/// The crate modules a piece of code names: `crate::x::...` and `use crate::{x::.., y}`.
fn used_modules(code: &str) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|part| part.trim().split("::").next().unwrap_or(""))
                .collect()
        } else {
            vec![
                rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or(""),
            ]
        };
        used.extend(
            names
                .into_iter()
                .filter(|n| MODULES.contains(n))
                .map(str::to_owned),
        );
    }
    used
}

fn is_comment(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("//")
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.into_iter().collect();
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    assert!(files.len() > 50, "found {} source files", files.len());
    let mut wrong = Vec::new();
    for path in &files {
        let relative = path.strip_prefix(src()).unwrap();
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs");
        let Some(may_use) = allowed.get(top) else {
            continue; // lib.rs, main.rs: the crate root wires everything
        };
        if is_test_file(relative) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        let code: String = non_test_part(&text)
            .lines()
            .filter(|l| !is_comment(l))
            .collect::<Vec<_>>()
            .join("\n");
        for module in used_modules(&code) {
            if module != top && !may_use.contains(&module.as_str()) {
                wrong.push(format!(
                    "src/{}: uses crate::{module}, which `{top}` must not (it may use: {may_use:?})",
                    relative.display()
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "layer violations:\n{}", wrong.join("\n"));
}

#[test]
fn the_check_sees_every_form_of_path() {
    let code = "use crate::crd::GpuNode;\nuse crate::{error::Error, runtime::health};\nlet x = crate::publish::content::wire::node_entry(n);";
    let used: Vec<String> = used_modules(code).into_iter().collect();
    assert_eq!(used, ["crd", "error", "publish", "runtime"]);
    let file = "use crate::inventory::model::Inventory;\n#[cfg(test)]\nmod tests {\n    use crate::crd::GpuNode;\n}\n";
    assert_eq!(
        used_modules(non_test_part(file))
            .into_iter()
            .collect::<Vec<_>>(),
        ["inventory"]
    );
    assert!(is_test_file(Path::new("inventory/scanner/tests/wild.rs")));
    assert!(is_test_file(Path::new("inventory/dra/scan_tests.rs")));
    assert!(!is_test_file(Path::new("inventory/scanner/mod.rs")));
}
