//! The shape of `src/`, held by tests rather than by a comment. No cluster needed: they read the sources.
//!
//! 1. Layers: each top-level module may use only the modules ARCHITECTURE.md's table says it depends on. The
//!    pure core (`inventory`) uses nothing of ours and no Kubernetes crate (`kube`, `k8s_openapi`: the
//!    conversions live in `sources::convert`); the plumbing (`runtime`) nothing but the error type and the
//!    crate root's `FIELD_MANAGER`; the API types (`crd`) nothing at all. Items of the crate root (`lib.rs`)
//!    count as a layer of their own, `(crate root)`.
//! 2. No file-to-file import circle in `src/` or in `benches/bench_driver/`.
//! 3. No function in `src/` longer than `MAX_FUNCTION_LINES`: a long function is split into steps that
//!    read like a story (the top function says the steps, the helpers do them).
//!
//! Every line of every file is read, except comments, string literals and test code: files of tests and
//! each `#[cfg(test)]` item wherever it sits (test code may reach further: fixtures are read with the
//! sources' dump reader, round trips go through the publishers' wire conversion). An edge is a path from one
//! file to an item of another (`use` trees with nested braces, inline paths, `crate::`, `super::`, `self::`
//! and child-module paths, each resolved to the deepest file it names); `mod x;` is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crate root's items (`crate::FIELD_MANAGER`), as a layer.
const ROOT: &str = "(crate root)";

/// Top-level module -> the crate modules its (non-test) code may use.
const ALLOWED: [(&str, &[&str]); 7] = [
    ("inventory", &[]),
    // The leader lease is written with the crate's field manager name.
    ("runtime", &["error", ROOT]),
    ("crd", &[]),
    // The error type names the kubeconfig user and exec plugin of a credential failure (runtime::credentials).
    ("error", &["runtime"]),
    ("sources", &["inventory", "runtime", "error"]),
    (
        "publish",
        &["inventory", "sources", "crd", "runtime", "error", ROOT],
    ),
    (
        "cmd",
        &[
            "inventory",
            "sources",
            "publish",
            "crd",
            "runtime",
            "error",
            ROOT,
        ],
    ),
];

/// Top-level module -> the external crates its (non-test) code must not name.
const FORBIDDEN_CRATES: [(&str, &[&str]); 1] = [("inventory", &["kube", "k8s_openapi"])];

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------------------
// Reading code: comments, literals and test items blanked out (newlines kept, so line numbers hold).

/// `text` with comments and the contents of string and char literals replaced by spaces.
fn without_comments_and_literals(text: &str) -> Vec<char> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = chars.clone();
    let blank = |out: &mut Vec<char>, from: usize, to: usize| {
        for c in &mut out[from..to.min(chars.len())] {
            if *c != '\n' {
                *c = ' ';
            }
        }
    };
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '/' && next == Some('*') {
            let (mut depth, mut j) = (0usize, i);
            while j < chars.len() {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if c == 'r'
            && (i == 0
                || !is_ident(chars[i - 1])
                || (chars[i - 1] == 'b' && (i < 2 || !is_ident(chars[i - 2]))))
            && matches!(next, Some('"' | '#'))
        {
            // A raw string r"..." or r#"..."#; `r#ident` is a raw identifier.
            let hashes = chars[i + 1..].iter().take_while(|&&h| h == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                i += 1;
                continue;
            }
            let start = i + 2 + hashes;
            let closing: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let end = (start..chars.len())
                .find(|&j| chars[j..].starts_with(&closing))
                .map_or(chars.len(), |j| j + closing.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{..}'); otherwise a lifetime or label, left alone.
            let end = if next == Some('\\') {
                (i + 3..chars.len()).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end + 1);
                    i = end + 1;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    out
}

/// The end (exclusive) of the bracketed group opening at `open`.
fn group_end(code: &[char], open: usize) -> usize {
    let mut depth = 0i64;
    for (j, &c) in code.iter().enumerate().skip(open) {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The attribute `#[...]` (or `#![...]`) starting at `at`: its end and its text without whitespace.
fn attribute_at(code: &[char], at: usize) -> Option<(usize, bool, String)> {
    if code.get(at) != Some(&'#') {
        return None;
    }
    let inner = code.get(at + 1) == Some(&'!');
    let open = at + 1 + usize::from(inner);
    if code.get(open) != Some(&'[') {
        return None;
    }
    let end = group_end(code, open);
    let text: String = code[open + 1..end.saturating_sub(1)]
        .iter()
        .filter(|c| !c.is_whitespace())
        .collect();
    Some((end, inner, text))
}

/// Where the item (or field, arm, statement) starting at `start` ends: after its `;`, after its brace block,
/// before a `}` that closes what holds it, or after a `,` ending a field or arm.
fn item_end(code: &[char], start: usize) -> usize {
    let mut i = start;
    // Further attributes of the same item.
    loop {
        while i < code.len() && code[i].is_whitespace() {
            i += 1;
        }
        match attribute_at(code, i) {
            Some((end, false, _)) => i = end,
            _ => break,
        }
    }
    let word: String = code[i..]
        .iter()
        .take_while(|c| c.is_alphanumeric() || **c == '_')
        .collect();
    let is_item = matches!(
        word.as_str(),
        "fn" | "impl"
            | "mod"
            | "struct"
            | "enum"
            | "use"
            | "const"
            | "static"
            | "type"
            | "trait"
            | "pub"
            | "unsafe"
            | "extern"
            | "macro_rules"
            | "async"
            | "union"
    );
    let mut depth = 0i64;
    while i < code.len() {
        match code[i] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '{' if depth == 0 => return group_end(code, i),
            '{' => depth += 1,
            '}' if depth == 0 => return i,
            '}' => depth -= 1,
            ';' if depth == 0 => return i + 1,
            ',' if depth == 0 && !is_item => return i + 1,
            _ => {}
        }
        i += 1;
    }
    code.len()
}

/// The code of a file that is not test code: comments, literals and every `#[cfg(test)]` item blanked out
/// (a file under `#![cfg(test)]` is all test code).
fn non_test_code(text: &str) -> Vec<char> {
    let mut code = without_comments_and_literals(text);
    let mut i = 0;
    while i < code.len() {
        let Some((attr_end, inner, attr)) = attribute_at(&code, i) else {
            i += 1;
            continue;
        };
        if attr != "cfg(test)" {
            i = attr_end;
            continue;
        }
        let end = if inner {
            code.len()
        } else {
            item_end(&code, attr_end)
        };
        for c in &mut code[i..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        i = end;
    }
    code
}

// ---------------------------------------------------------------------------------------------------------
// Paths: every path from a file's code, resolved to the file it names.

/// A module path (`["inventory", "model"]`; the crate root is empty).
type ModPath = Vec<String>;

/// The `.rs` files under `root` by module path. `main.rs` is the crate root only where there is no
/// `lib.rs` (in `src/`, it is a crate of its own that reaches the library by its name).
fn modules(root: &Path) -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    let has_lib = root.join("lib.rs").exists();
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(root).expect("under the root");
        if has_lib && relative == Path::new("main.rs") {
            continue;
        }
        let mut path: ModPath = relative
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if path.len() == 1 && matches!(path[0].as_str(), "lib" | "main")
            || path.last().is_some_and(|l| l == "mod")
        {
            path.pop();
        }
        modules.insert(path, file);
    }
    modules
}

/// Modules that hold only tests (or test helpers).
fn is_test_module(path: &ModPath) -> bool {
    path.iter().any(|p| p == "tests")
        || path.last().is_some_and(|l| {
            matches!(l.as_str(), "proptests" | "test_support") || l.ends_with("_tests")
        })
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier at `i`, if one starts there.
fn ident_at(code: &[char], i: usize) -> Option<String> {
    if i > 0 && is_ident_char(code[i - 1]) {
        return None;
    }
    let word: String = code[i..]
        .iter()
        .take_while(|c| is_ident_char(**c))
        .collect();
    (!word.is_empty()).then_some(word)
}

fn skip_spaces(code: &[char], mut i: usize) -> usize {
    while i < code.len() && code[i].is_whitespace() {
        i += 1;
    }
    i
}

/// Whether the identifier at `i` continues a path (`a::<here>`) or a field access (`a.<here>`).
fn continues_a_path(code: &[char], i: usize) -> bool {
    let mut j = i;
    while j > 0 && code[j - 1].is_whitespace() {
        j -= 1;
    }
    if j > 0 && code[j - 1] == '.' {
        return true;
    }
    if j >= 2 && code[j - 1] == ':' && code[j - 2] == ':' {
        let mut k = j - 2;
        while k > 0 && code[k - 1].is_whitespace() {
            k -= 1;
        }
        // `a::x`, `Vec<T>::x`; not `-> ::x`.
        let arrow = k >= 2 && code[k - 1] == '>' && code[k - 2] == '-';
        return k > 0 && (is_ident_char(code[k - 1]) || (code[k - 1] == '>' && !arrow));
    }
    false
}

/// The paths of the use tree that follows `at` (just after a path's first segment): `::a::{b, c::{d}}` is
/// `[a, b]` and `[a, c, d]`; `self` and `*` are dropped.
fn use_tree(code: &[char], at: usize) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut i = at;
    loop {
        let j = skip_spaces(code, i);
        if !(code.get(j) == Some(&':') && code.get(j + 1) == Some(&':')) {
            return vec![prefix];
        }
        i = skip_spaces(code, j + 2);
        if code.get(i) == Some(&'{') {
            let end = group_end(code, i);
            let mut paths = Vec::new();
            let (mut depth, mut start) = (0, i + 1);
            for k in i..end {
                match code[k] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {}
                    _ => continue,
                }
                if (code[k] == ',' && depth == 1) || (code[k] == '}' && depth == 0) {
                    let s = skip_spaces(code, start);
                    if let Some(name) = ident_at(code, s) {
                        for rest in use_tree(code, s + name.chars().count()) {
                            let mut path = prefix.clone();
                            path.push(name.clone());
                            path.extend(rest);
                            paths.push(path);
                        }
                    }
                    start = k + 1;
                }
            }
            return paths;
        }
        match ident_at(code, i) {
            Some(name) => {
                i += name.chars().count();
                prefix.push(name);
            }
            None => return vec![prefix],
        }
    }
}

/// One path a file names: where (line), and the module it resolves to or the external crate it starts with.
#[derive(Debug)]
enum Named {
    Module { line: usize, target: ModPath },
    Crate { line: usize, name: String },
}

/// Every crate-internal path in `code` (of the file of module `own`), resolved to the deepest module file
/// it names, and every path that starts with one of `crates`.
fn named(
    code: &[char],
    own: &ModPath,
    files: &BTreeMap<ModPath, PathBuf>,
    crates: &[&str],
) -> Vec<Named> {
    let children: BTreeSet<String> = files
        .keys()
        .filter(|m| m.len() == own.len() + 1 && m.starts_with(own))
        .map(|m| m[own.len()].clone())
        .collect();
    let line_of = |i: usize| code[..i].iter().filter(|c| **c == '\n').count() + 1;
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let Some(word) = ident_at(code, i) else {
            i += 1;
            continue;
        };
        let after = i + word.chars().count();
        let next = skip_spaces(code, after);
        let followed_by_path = code.get(next) == Some(&':') && code.get(next + 1) == Some(&':');
        if continues_a_path(code, i) {
            i = after;
            continue;
        }
        if crates.contains(&word.as_str()) {
            let before: String = {
                let mut j = i;
                while j > 0 && code[j - 1].is_whitespace() {
                    j -= 1;
                }
                let start = j.saturating_sub(5);
                code[start..j].iter().collect()
            };
            if followed_by_path || before.ends_with("use") || before.ends_with("crate") {
                found.push(Named::Crate {
                    line: line_of(i),
                    name: word.clone(),
                });
            }
        } else if followed_by_path
            && (matches!(word.as_str(), "crate" | "super" | "self") || children.contains(&word))
        {
            for path in use_tree(code, after) {
                let (mut start, mut rest): (ModPath, Vec<String>) = match word.as_str() {
                    "crate" => (Vec::new(), path),
                    "self" => (own.clone(), path),
                    "super" => (own[..own.len().saturating_sub(1)].to_vec(), path),
                    child => (
                        own.iter().cloned().chain([child.to_owned()]).collect(),
                        path,
                    ),
                };
                while rest.first().is_some_and(|p| p == "super") {
                    rest.remove(0);
                    start.pop();
                }
                start.extend(rest.into_iter().filter(|p| p != "self" && p != "*"));
                let target = (0..=start.len())
                    .rev()
                    .map(|n| start[..n].to_vec())
                    .find(|m| files.contains_key(m));
                if let Some(target) = target {
                    found.push(Named::Module {
                        line: line_of(i),
                        target,
                    });
                }
            }
        }
        i = after;
    }
    found
}

// ---------------------------------------------------------------------------------------------------------
// The two checks.

/// The layer violations of the crate whose root is `root`, each `file:line: what`.
fn layer_violations(root: &Path) -> Vec<String> {
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.into_iter().collect();
    let forbidden: BTreeMap<&str, &[&str]> = FORBIDDEN_CRATES.into_iter().collect();
    let files = modules(root);
    let mut wrong = Vec::new();
    for (module, file) in &files {
        let Some(top) = module.first() else {
            continue; // lib.rs: the crate root wires everything
        };
        let Some(may_use) = allowed.get(top.as_str()) else {
            continue;
        };
        if is_test_module(module) {
            continue;
        }
        let crates = forbidden.get(top.as_str()).copied().unwrap_or_default();
        let code = non_test_code(&std::fs::read_to_string(file).expect("a source file"));
        let shown = file
            .strip_prefix(root.parent().unwrap_or(root))
            .unwrap_or(file)
            .display();
        for name in named(&code, module, &files, crates) {
            match name {
                Named::Crate { line, name } => wrong.push(format!(
                    "{shown}:{line}: names the crate `{name}`, which `{top}` must not (forbidden: {crates:?})"
                )),
                Named::Module { line, target } => {
                    let layer = target.first().map_or(ROOT, String::as_str);
                    if layer != top && !may_use.contains(&layer) {
                        wrong.push(format!(
                            "{shown}:{line}: uses crate::{}, which `{top}` must not (it may use: {may_use:?})",
                            if target.is_empty() { ROOT.to_owned() } else { target.join("::") }
                        ));
                    }
                }
            }
        }
    }
    wrong
}

/// The file-to-file import circles under `root` (strongly connected components of two files or more), each
/// as a sorted list of files relative to the manifest directory (or to `root`'s parent).
fn import_circles(root: &Path) -> Vec<Vec<String>> {
    let files = modules(root);
    let mut edges: BTreeMap<&ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (module, file) in &files {
        // The crate root declares and wires every module: it is no file among others.
        if module.is_empty() || is_test_module(module) {
            continue;
        }
        let code = non_test_code(&std::fs::read_to_string(file).expect("a source file"));
        let targets = named(&code, module, &files, &[])
            .into_iter()
            .filter_map(|n| match n {
                Named::Module { target, .. }
                    if &target != module && !target.is_empty() && !is_test_module(&target) =>
                {
                    Some(target)
                }
                _ => None,
            })
            .collect();
        edges.insert(module, targets);
    }
    // Tarjan's strongly connected components.
    struct Walk<'a> {
        edges: &'a BTreeMap<&'a ModPath, BTreeSet<ModPath>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        found: Vec<Vec<&'a ModPath>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a ModPath) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        w.on_stack.insert(v);
        for target in &w.edges[v] {
            let Some((&t, _)) = w.edges.get_key_value(target) else {
                continue;
            };
            if !w.index.contains_key(t) {
                visit(w, t);
                let low = w.low[v].min(w.low[t]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(t) {
                let low = w.low[v].min(w.index[t]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = Vec::new();
            while let Some(t) = w.stack.pop() {
                w.on_stack.remove(t);
                component.push(t);
                if t == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.found.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges: &edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            visit(&mut walk, v);
        }
    }
    let base = root.parent().unwrap_or(root);
    let mut circles: Vec<Vec<String>> = walk
        .found
        .into_iter()
        .map(|component| {
            let mut names: Vec<String> = component
                .into_iter()
                .map(|m| {
                    files[m]
                        .strip_prefix(base)
                        .unwrap_or(&files[m])
                        .display()
                        .to_string()
                })
                .collect();
            names.sort();
            names
        })
        .collect();
    circles.sort();
    circles
}

#[test]
fn each_layer_uses_only_the_layers_below_it() {
    let src = manifest_dir().join("src");
    assert!(
        modules(&src).len() > 50,
        "found {} source files",
        modules(&src).len()
    );
    let wrong = layer_violations(&src);
    assert!(wrong.is_empty(), "layer violations:\n{}", wrong.join("\n"));
}

#[test]
fn no_import_circles() {
    // `benches/bench_driver/` is its own binary crate (its root is main.rs).
    let bench_driver = manifest_dir().join("benches").join("bench_driver");
    let circles: Vec<Vec<String>> = import_circles(&manifest_dir().join("src"))
        .into_iter()
        .chain(
            import_circles(&bench_driver)
                .into_iter()
                .map(|c| c.into_iter().map(|f| format!("benches/{f}")).collect()),
        )
        .collect();
    assert!(
        circles.is_empty(),
        "import circles (put what the files share in a leaf file of its own, and name it directly): {circles:#?}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// Functions that read like a story: none longer than `MAX_FUNCTION_LINES`.

/// The longest a product function may be, counted from its `fn` line to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// Functions another change reworks (file, function): still over the limit, and only until that change
/// lands. An entry whose function is no longer over the limit fails the check, so the list only shrinks.
const LONG_FOR_NOW: [(&str, &str); 0] = [];

/// A function longer than the limit: where its `fn` is, its name and its length in lines.
#[derive(Debug, PartialEq)]
struct LongFunction {
    file: String,
    line: usize,
    name: String,
    lines: usize,
}

/// Every `.rs` file under `root`, `main.rs` included, sorted.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    files
}

/// Files of tests: `tests.rs`, `*_tests.rs`, anything under a `tests/` folder (and the other test-only
/// modules `is_test_module` names).
fn is_test_file(root: &Path, file: &Path) -> bool {
    let path: ModPath = file
        .strip_prefix(root)
        .unwrap_or(file)
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    is_test_module(&path)
}

/// The functions with a body in `code` (as `non_test_code` leaves it): name, line of `fn`, line of the
/// closing brace. Each `fn` keyword followed by a name starts one, nested functions and methods included
/// (an outer function's length counts its nested ones); `fn(..)` pointer types and `fn $name` in macros
/// are no functions, and a declaration without a body (`fn f();` in a trait) is skipped.
///
/// Limits, as a brace counter over code without comments and literals: the signature ends at the first `{`
/// outside parentheses and brackets, so a const-generic block in angle brackets (`Foo<{ N }>`) in a
/// signature would be taken for the body; functions a macro generates are not seen.
fn functions(code: &[char]) -> Vec<(String, usize, usize)> {
    let newlines: Vec<usize> = (0..code.len()).filter(|&i| code[i] == '\n').collect();
    let line_of = |at: usize| 1 + newlines.partition_point(|&n| n < at);
    let mut found = Vec::new();
    for at in 0..code.len() {
        if code[at] != 'f' || ident_at(code, at).as_deref() != Some("fn") {
            continue;
        }
        let Some(name) = ident_at(code, skip_spaces(code, at + 2)) else {
            continue;
        };
        let mut depth = 0i64;
        for (i, &c) in code.iter().enumerate().skip(at + 2) {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                ';' | '}' if depth == 0 => break,
                '{' if depth == 0 => {
                    let close = group_end(code, i) - 1;
                    found.push((name, line_of(at), line_of(close)));
                    break;
                }
                _ => {}
            }
        }
    }
    found
}

/// The product functions under `root` longer than `limit` lines, by file and line.
fn long_functions(root: &Path, limit: usize) -> Vec<LongFunction> {
    let mut long = Vec::new();
    for file in rust_files(root) {
        if is_test_file(root, &file) {
            continue;
        }
        let code = non_test_code(&std::fs::read_to_string(&file).expect("a source file"));
        let shown = file
            .strip_prefix(root.parent().unwrap_or(root))
            .unwrap_or(&file)
            .display()
            .to_string();
        for (name, first, last) in functions(&code) {
            let lines = last - first + 1;
            if lines > limit {
                long.push(LongFunction {
                    file: shown.clone(),
                    line: first,
                    name,
                    lines,
                });
            }
        }
    }
    long
}

#[test]
fn no_function_is_longer_than_80_lines() {
    let long = long_functions(&manifest_dir().join("src"), MAX_FUNCTION_LINES);
    let over: Vec<String> = long
        .iter()
        .filter(|f| !LONG_FOR_NOW.contains(&(f.file.as_str(), f.name.as_str())))
        .map(|f| format!("{}:{}: `{}` is {} lines", f.file, f.line, f.name, f.lines))
        .collect();
    assert!(
        over.is_empty(),
        "functions longer than {MAX_FUNCTION_LINES} lines (split each into steps that read like a story):\n{}",
        over.join("\n")
    );
    let stale: Vec<_> = LONG_FOR_NOW
        .iter()
        .filter(|(file, name)| !long.iter().any(|f| f.file == *file && f.name == *name))
        .collect();
    assert!(
        stale.is_empty(),
        "no longer over the limit, remove from LONG_FOR_NOW: {stale:?}"
    );
}

/// What keeps state behind a shared reference or for the process's life: the core's rules are pure functions
/// of what they are handed (the scan memory is plain data lent to a scan, `inventory::memory`), so none of
/// these appear in `src/inventory/` product code. Constant tables built once (`LazyLock`) are program data.
const STATEFUL: [&str; 8] = [
    "Mutex",
    "RwLock",
    "OnceLock",
    "OnceCell",
    "RefCell",
    "Box::leak",
    "thread_local",
    "static mut",
];

/// Each use of a [`STATEFUL`] name in the product code under `root`, as `file:line: name`.
fn stateful_uses(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for file in rust_files(root) {
        if is_test_file(root, &file) {
            continue;
        }
        let code: String = non_test_code(&std::fs::read_to_string(&file).expect("a source file"))
            .into_iter()
            .collect();
        let shown = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .display()
            .to_string();
        for (at, line) in code.lines().enumerate() {
            for name in STATEFUL {
                let whole = line.match_indices(name).any(|(i, _)| {
                    let before = line[..i].chars().next_back();
                    let after = line[i + name.len()..].chars().next();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                        && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
                });
                if whole {
                    found.push(format!("{shown}:{}: {name}", at + 1));
                }
            }
        }
    }
    found
}

#[test]
fn the_core_keeps_no_state() {
    let found = stateful_uses(&manifest_dir().join("src").join("inventory"));
    assert!(
        found.is_empty(),
        "state in the core (a rule's memory belongs in inventory::memory::ScanMemory, lent to the scan; a \
         table in a value handed in):\n{}",
        found.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------------------
// The checks can fail: a small tree with one violation of each kind.

/// A fresh directory under the system's temp dir holding `files` (path, text).
fn synthetic_tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("layers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for (path, text) in files {
        let path = dir.join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("creating a directory");
        std::fs::write(&path, text).expect("writing a file");
    }
    dir.join("src")
}

const SYNTHETIC: [(&str, &str); 10] = [
    (
        "lib.rs",
        "pub mod inventory;\npub mod publish;\npub(crate) const FIELD_MANAGER: &str = \"x\";\n",
    ),
    (
        "inventory/mod.rs",
        "pub mod clean;\npub mod kube_user;\npub mod publish_user;\npub mod late;\npub mod root_user;\n",
    ),
    ("inventory/kube_user.rs", "use kube::Api;\n"),
    (
        "inventory/publish_user.rs",
        "pub fn f() {\n    crate::publish::g();\n}\n",
    ),
    (
        "inventory/late.rs",
        "#[cfg(test)]\nmod tests {\n    use crate::publish::g;\n}\n\npub fn h() -> ::k8s_openapi::api::core::v1::Node {\n    todo!()\n}\n",
    ),
    (
        "inventory/root_user.rs",
        "use crate::{FIELD_MANAGER, inventory::clean};\n",
    ),
    (
        "inventory/clean.rs",
        "// use kube::Api; crate::publish in a comment\n/* kube::Api */\nconst S: &str = \"kube::Api crate::publish::g\";\npub fn ok() -> char {\n    '{'\n}\n#[cfg(test)]\nmod tests {\n    use kube::Api;\n    use crate::publish::g;\n}\n#[cfg(test)]\nfn helper() -> kube::Client {\n    todo!()\n}\npub fn after() -> &'static str {\n    S\n}\n",
    ),
    ("publish/mod.rs", "pub mod a;\npub mod b;\npub fn g() {}\n"),
    ("publish/a.rs", "use super::{b::B, g};\npub struct A;\n"),
    ("publish/b.rs", "use crate::publish::a::A;\npub struct B;\n"),
];

#[test]
fn the_layer_check_reports_each_violation_and_nothing_else() {
    let root = synthetic_tree("layers", &SYNTHETIC);
    let wrong = layer_violations(&root);
    let _ = std::fs::remove_dir_all(root.parent().expect("the tree"));
    let expected = [
        "src/inventory/kube_user.rs:1: names the crate `kube`",
        "src/inventory/late.rs:6: names the crate `k8s_openapi`",
        "src/inventory/publish_user.rs:2: uses crate::publish,",
        &format!("src/inventory/root_user.rs:1: uses crate::{ROOT},"),
    ];
    assert_eq!(wrong.len(), expected.len(), "{wrong:#?}");
    for (found, expected) in wrong.iter().zip(expected) {
        assert!(
            found.starts_with(expected),
            "{found:?} should start with {expected:?}"
        );
    }
}

#[test]
fn the_circle_check_finds_two_files_importing_each_other() {
    let root = synthetic_tree("circles", &SYNTHETIC);
    let circles = import_circles(&root);
    let _ = std::fs::remove_dir_all(root.parent().expect("the tree"));
    assert_eq!(circles, [["src/publish/a.rs", "src/publish/b.rs"]]);
}

#[test]
fn test_items_are_skipped_wherever_they_sit_and_only_they() {
    let text = "use a::b;\n#[cfg(test)]\nmod tests;\nfn f() {}\n#[cfg(test)]\n#[allow(unused)]\nimpl X {\n    fn g() { let s = \"}\"; }\n}\nstruct S {\n    #[cfg(test)]\n    probe: u8,\n    kept: u8,\n}\nuse crate::c;\n";
    let code: String = non_test_code(text).into_iter().collect();
    let lines: Vec<&str> = code.lines().map(str::trim).collect();
    assert_eq!(
        lines,
        [
            "use a::b;",
            "",
            "",
            "fn f() {}",
            "",
            "",
            "",
            "",
            "",
            "struct S {",
            "",
            "",
            "kept: u8,",
            "}",
            "use crate::c;"
        ]
    );
}

#[test]
fn the_length_check_counts_each_function_from_fn_to_its_brace_and_skips_tests() {
    let a = "pub fn short() -> char {\n    '{'\n}\npub fn long<T>(t: T) -> usize\nwhere\n    T: Fn(u8) -> u8,\n{\n    let s = r#\"}}}\"#;\n    let f = |x: u8| { x };\n    fn inner(p: fn(u8) -> u8) -> u8 {\n        p(1)\n    }\n    // } a brace in a comment\n    s.len() + usize::from(inner(t) + f(1))\n}\ntrait T {\n    fn declared(&self);\n    fn given(&self) {}\n}\nmacro_rules! m {\n    ($n:ident) => {\n        fn $n() {\n        }\n    };\n}\n#[cfg(test)]\nfn long_test_helper() {\n\n\n\n\n\n}\n";
    let long_body = "fn long_test() {\n\n\n\n\n\n}\n";
    let root = synthetic_tree(
        "lengths",
        &[
            ("lib.rs", "pub mod a;\n#[cfg(test)]\nmod tests;\n"),
            ("a.rs", a),
            ("main.rs", "fn main() {\n\n\n\n\n}\n"),
            ("tests.rs", long_body),
            ("a_tests.rs", long_body),
            ("x/tests/b.rs", long_body),
        ],
    );
    let long = long_functions(&root, 5);
    let _ = std::fs::remove_dir_all(root.parent().expect("the tree"));
    let found: Vec<(&str, usize, &str, usize)> = long
        .iter()
        .map(|f| (f.file.as_str(), f.line, f.name.as_str(), f.lines))
        .collect();
    assert_eq!(
        found,
        [("src/a.rs", 4, "long", 12), ("src/main.rs", 1, "main", 6)]
    );
}

#[test]
fn the_state_check_finds_a_lock_a_leak_and_a_global_and_skips_tests_comments_and_longer_names() {
    let code = "use std::sync::Mutex;\n// a Mutex in a comment\nstruct MutexGuardian;\nfn f() -> &'static str {\n    Box::leak(String::new().into_boxed_str())\n}\nstatic S: std::sync::OnceLock<u8> = std::sync::OnceLock::new();\nconst T: &str = \"RefCell\";\n#[cfg(test)]\nmod t {\n    use std::sync::RwLock;\n}\n";
    let root = synthetic_tree(
        "state",
        &[
            ("lib.rs", "pub mod a;\n#[cfg(test)]\nmod tests;\n"),
            ("a.rs", code),
            ("tests.rs", "use std::cell::RefCell;\n"),
        ],
    );
    let found = stateful_uses(&root);
    let _ = std::fs::remove_dir_all(root.parent().expect("the tree"));
    assert_eq!(
        found,
        ["a.rs:1: Mutex", "a.rs:5: Box::leak", "a.rs:7: OnceLock"]
    );
}
