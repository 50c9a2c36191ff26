//! The documentation's links resolve: every relative link and image in README.md, CONTRIBUTING.md,
//! ARCHITECTURE.md, deploy/README.md and docs/*.md names a file or directory of this repository, and every
//! `#anchor` (on another file or in the same page) is the GitHub slug of one of the target's headings. Every
//! code span of README.md, ARCHITECTURE.md and docs/*.md that names a path (`src/lib.rs`, `read_node.rs`) or
//! an item of the code (`inventory::scan`, `ChangeSignal::notify`) names one that exists (what counts as
//! either, and what is skipped, is listed above `TOP_DIRS`). Also: README.md stays the five-minute read (at
//! most 200 lines). No cluster; reads only files inside the repository.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

/// The repository root (the crate's manifest directory).
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose links are checked, relative to the root.
fn checked_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = [
        "README.md",
        "CONTRIBUTING.md",
        "ARCHITECTURE.md",
        "deploy/README.md",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("readable docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| PathBuf::from("docs").join(path.file_name().expect("a file name")))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A fence opening or closing a code block (```` ``` ```` or `~~~`, up to 3 spaces of indentation): its
/// character and length.
fn fence(line: &str) -> Option<(char, usize)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let ch = rest.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let len = rest.chars().take_while(|&c| c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// The lines outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (index, line) in text.lines().enumerate() {
        match (open, fence(line)) {
            (None, Some(f)) => open = Some(f),
            (Some((ch, len)), Some((c, l)))
                if c == ch && l >= len && line.trim().chars().all(|x| x == ch) =>
            {
                open = None
            }
            (None, None) => out.push((index + 1, line)),
            _ => {}
        }
    }
    out
}

/// Each inline code span of a line, in char indices: where its opening run of backticks starts, where its
/// closing run (of exactly the same length) starts, and the run's length. A run without its closing run is
/// literal text.
fn code_span_bounds(chars: &[char]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let mut j = i + run;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let len = chars[j..].iter().take_while(|&&c| c == '`').count();
                if len == run {
                    close = Some(j);
                    break;
                }
                j += len;
            } else {
                j += 1;
            }
        }
        match close {
            Some(j) => {
                out.push((i, j, run));
                i = j + run;
            }
            None => i += run,
        }
    }
    out
}

/// The line with its inline code spans blanked out (a `](` inside backticks is no link). Backticks are
/// kept, so the text around a span stays where it was.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut at = 0;
    for (open, close, run) in code_span_bounds(&chars) {
        out.extend(&chars[at..open]);
        out.extend(std::iter::repeat_n('`', run));
        out.extend(std::iter::repeat_n(' ', close - (open + run)));
        out.extend(std::iter::repeat_n('`', run));
        at = close + run;
    }
    out.extend(&chars[at..]);
    out
}

/// Every link or image target in the text, with its line: inline `[text](target)` / `![alt](target)` and
/// reference definitions `[label]: target`. Fenced code and inline code are not Markdown, so not searched.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, raw) in prose_lines(text) {
        let line = without_code_spans(raw);
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix('[')
            && let Some(end) = rest.find("]:").filter(|&end| !rest[..end].contains(']'))
            && let Some(target) = rest[end + 2..].split_whitespace().next()
        {
            out.push((
                number,
                target.trim_matches(|c| c == '<' || c == '>').to_string(),
            ));
            continue;
        }
        let mut search = line.as_str();
        while let Some(at) = search.find("](") {
            let after = &search[at + 2..];
            // Up to the parenthesis that closes the target (balanced, as CommonMark allows).
            let mut depth = 0usize;
            let mut end = after.len();
            for (i, c) in after.char_indices() {
                match c {
                    '(' => depth += 1,
                    ')' if depth == 0 => {
                        end = i;
                        break;
                    }
                    ')' => depth -= 1,
                    _ => {}
                }
            }
            let inside = after[..end].trim();
            let target = if let Some(bracketed) = inside.strip_prefix('<') {
                bracketed.split('>').next().unwrap_or_default()
            } else {
                inside.split_whitespace().next().unwrap_or_default() // drop a "title"
            };
            out.push((number, target.to_string()));
            search = &after[end.min(after.len())..];
        }
    }
    out
}

/// A heading's text as GitHub renders it for its anchor: link syntax reduced to the link text.
fn heading_text(heading: &str) -> String {
    let mut out = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|i| close + i) else {
            break;
        };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// GitHub's anchor for a heading: lowercase; letters, digits, `-` and `_` kept; each space becomes `-`;
/// everything else (punctuation, backticks, emphasis stars) dropped.
fn slug(heading: &str) -> String {
    heading_text(heading)
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The text of an ATX heading (`# ...` to `###### ...`, up to 3 spaces of indentation), without the
/// optional closing `#`s.
fn atx_heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.chars().take_while(|&c| c == '#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let text = &rest[level..];
    if !(text.is_empty() || text.starts_with(' ') || text.starts_with('\t')) {
        return None; // `#133784)` is text, not a heading
    }
    let text = text.trim();
    let closed = text.trim_end_matches('#');
    if closed.len() < text.len() && (closed.is_empty() || closed.ends_with(' ')) {
        Some(closed.trim_end())
    } else {
        Some(text)
    }
}

/// The anchors a page's headings get on GitHub (a repeated heading gets `-1`, `-2`, ... appended).
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for (_, line) in prose_lines(text) {
        let Some(heading) = atx_heading(line) else {
            continue;
        };
        let base = slug(heading);
        let count = seen.entry(base.clone()).or_insert(0);
        let anchor = if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        };
        *count += 1;
        out.insert(anchor);
    }
    out
}

/// `path` with `.` and `..` resolved lexically; `None` when it would climb above its start (outside the
/// repository, which this test never reads).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

fn is_external(target: &str) -> bool {
    let lower = target.to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// What is wrong with the relative links of one page (`page`: relative to the root), one message each.
fn check_page(page: &Path, cache: &mut HashMap<PathBuf, HashSet<String>>) -> Vec<String> {
    let root = root();
    let text = std::fs::read_to_string(root.join(page))
        .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let dir = page.parent().unwrap_or(Path::new(""));
    let mut problems = Vec::new();
    for (line, target) in link_targets(&text) {
        if is_external(&target) {
            continue;
        }
        let here = format!("{}:{line}: link `{target}`", page.display());
        if target.is_empty() {
            problems.push(format!("{here}: empty target"));
            continue;
        }
        let (file, anchor) = match target.split_once('#') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (target.as_str(), None),
        };
        let linked = if file.is_empty() {
            page.to_path_buf()
        } else {
            match normalize(&dir.join(file)) {
                Some(path) => path,
                None => {
                    problems.push(format!("{here}: points outside the repository"));
                    continue;
                }
            }
        };
        let on_disk = root.join(&linked);
        if !on_disk.exists() {
            problems.push(format!("{here}: {} does not exist", linked.display()));
            continue;
        }
        let Some(anchor) = anchor else {
            continue;
        };
        if on_disk.extension().is_none_or(|ext| ext != "md") || !on_disk.is_file() {
            problems.push(format!(
                "{here}: an anchor on {}, which is not a Markdown file",
                linked.display()
            ));
            continue;
        }
        let known = cache.entry(linked.clone()).or_insert_with(|| {
            let text = std::fs::read_to_string(&on_disk)
                .unwrap_or_else(|e| panic!("{}: {e}", linked.display()));
            anchors(&text)
        });
        if !known.contains(anchor) {
            let mut near: Vec<&String> = known
                .iter()
                .filter(|a| a.contains(anchor) || anchor.contains(a.as_str()))
                .collect();
            near.sort();
            let hint = if near.is_empty() {
                String::new()
            } else {
                format!(
                    " (similar: {})",
                    near.iter()
                        .map(|a| format!("#{a}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            problems.push(format!(
                "{here}: no heading in {} has the anchor `#{anchor}`{hint}",
                linked.display()
            ));
        }
    }
    problems
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut cache = HashMap::new();
    let pages = checked_pages();
    assert!(pages.len() > 4, "docs/ holds the reference pages");
    let problems: Vec<String> = pages
        .iter()
        .flat_map(|page| check_page(page, &mut cache))
        .collect();
    assert!(
        problems.is_empty(),
        "{} broken link(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn readme_is_at_most_200_lines() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = text.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines, at most 200: move the detail into docs/ or CONTRIBUTING.md"
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("What is free (allocation)"), "what-is-free-allocation");
    assert_eq!(
        slug("`GpuNode`: one per GPU node"),
        "gpunode-one-per-gpu-node"
    );
    assert_eq!(
        slug("The kubectl plugin: `kubectl gpu-inventory`"),
        "the-kubectl-plugin-kubectl-gpu-inventory"
    );
    assert_eq!(
        slug("The 2-minute form (`tests/soak.rs`, in `make test`)"),
        "the-2-minute-form-testssoakrs-in-make-test"
    );
    assert_eq!(slug("The Helm chart's tests"), "the-helm-charts-tests");
    assert_eq!(slug("What happens when..."), "what-happens-when");
    assert_eq!(
        slug("Agreement with KEP-5677 (ResourcePoolStatusRequest)"),
        "agreement-with-kep-5677-resourcepoolstatusrequest"
    );
    assert_eq!(
        slug("snake_case and [a link](x.md)"),
        "snake_case-and-a-link"
    );
    assert_eq!(atx_heading("## Title ##"), Some("Title"));
    assert_eq!(atx_heading("#133784) is counted once"), None);
    let page = "# A\n## B\n## B\n```\n# not a heading\n```\n";
    let found = anchors(page);
    for anchor in ["a", "b", "b-1"] {
        assert!(found.contains(anchor), "{anchor} in {found:?}");
    }
    assert!(!found.contains("not-a-heading"));
}

#[test]
fn links_are_found_outside_code_only() {
    let text = "see [a](docs/a.md#x) and ![img](p.png \"title\")\n\
                `[not](code.md)` but [`code`](b.md)\n\
                ```sh\n[inside](fence.md)\n```\n\
                [ref]: c.md#y\n\
                [p](f(1).md) [ext](https://example.com)\n";
    let found: Vec<(usize, String)> = link_targets(text);
    let expected: Vec<(usize, String)> = [
        (1, "docs/a.md#x"),
        (1, "p.png"),
        (2, "b.md"),
        (6, "c.md#y"),
        (7, "f(1).md"),
        (7, "https://example.com"),
    ]
    .iter()
    .map(|(line, target)| (*line, target.to_string()))
    .collect();
    assert_eq!(found, expected);
    assert!(
        is_external("https://example.com")
            && is_external("mailto:a@b")
            && !is_external("docs/a.md")
    );
    assert_eq!(
        normalize(Path::new("deploy/../docs/a.md")),
        Some(PathBuf::from("docs/a.md"))
    );
    assert_eq!(normalize(Path::new("../outside.md")), None);
}

// ---------------------------------------------------------------------------------------------------------
// Code spans that name a path or an item of the code name one that exists.
//
// In README.md, ARCHITECTURE.md and docs/*.md, each inline code span outside fenced code is checked when it
// names:
// - a path: a span of path characters only (letters, digits, `.`, `_`, `-`, `/`) that
//   - starts with a top-level directory (`TOP_DIRS`; after an optional `./`): it exists, from the root (a
//     trailing `/` asks for a directory);
//   - else ends in one of `PATH_EXTENSIONS` (`read_node.rs`, `scanner/read_node.rs`): some file of the
//     repository, `target/` and `.git/` aside, is or ends with those path components;
//   - else starts with the name of a module directory of `src/` and ends without an extension
//     (`publish/content/plan/`, `inventory/quotas`): something under `src/` is or ends with them;
// - an item: `::`-separated identifiers (and maybe a trailing `()`) whose first segment is `crate`, `testkit`
//   or the name of a module anywhere in `src/` (`inventory`, `backoff`, `wire`). Segments naming modules
//   resolve child by child to files (`a/b.rs`, `a/b/mod.rs`); the first that is no module is defined in that
//   module's file or under its directory (`fn`, `struct`, `enum`, `trait`, `type`, `const`, `static`, `mod`,
//   `union`, `macro_rules!`, or named by a `pub use`: a re-export), and a segment after it is its member (as
//   below). A name several modules share (`dra`, `health`) passes when one of them resolves;
// - a member: `Type::member` where `Type` is a struct, enum, trait or type alias of `src/` or `testkit/src/`:
//   a file defining `Type` or holding an `impl` for it defines `member` (as above) or lists it as a field or
//   an enum variant.
//
// Skipped, because they name nothing of this repository or no single thing:
// - spans with whitespace or other characters than the above (`( ) < > { } [ ] = * | , : " ' $ @ # ...`):
//   commands, flags with values, `key=value` labels, globs and `<placeholder>`s, calls with arguments,
//   YAML and JSON, `a::{b, c}`;
// - URLs (`://`), absolute and home paths (`/healthz`, `~/.kube/config`), spans starting with `-` (flags);
// - spans in the text of a link to a URL (`[HAMi `docs/develop/protocol.md`](https://...)`): another
//   project's file;
// - paths that start with neither a top-level directory nor a module directory of `src/` and end in no
//   extension of ours: label keys and resource names (`nvidia.com/gpu`), API groups (`resource.k8s.io/v1`),
//   other projects' files and packages (`pkg/util/tas/tas.go`, `./cmd/kueue`), `target/` outputs;
// - items whose first segment is no module of ours (`kube::Resource`, the soak's
//   `faults::shortest_window`), and `Type::member` when `Type` is not ours.

/// The repository's top-level directories: a span starting with one names a path from the root.
const TOP_DIRS: [&str; 11] = [
    "src", "tests", "docs", "hack", "deploy", "charts", "benches", "testkit", "examples", ".ci",
    ".github",
];

/// A span ending in one of these names a file of the repository, wherever it sits.
const PATH_EXTENSIONS: [&str; 6] = ["rs", "md", "sh", "tsv", "yaml", "toml"];

/// The pages whose code spans are checked, relative to the root.
fn span_pages() -> Vec<PathBuf> {
    checked_pages()
        .into_iter()
        .filter(|page| {
            page == Path::new("README.md")
                || page == Path::new("ARCHITECTURE.md")
                || page.starts_with("docs")
        })
        .collect()
}

/// The char ranges of a line's link texts whose target is a URL (`[text](https://...)`). `chars`: the line
/// with its code spans blanked out.
fn external_link_texts(chars: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for close in 0..chars.len().saturating_sub(1) {
        if chars[close] != ']' || chars[close + 1] != '(' {
            continue;
        }
        let target: String = chars[close + 2..]
            .iter()
            .take_while(|&&c| c != ')')
            .collect();
        if !is_external(target.trim_start_matches('<')) {
            continue;
        }
        // The `[` that opens this text (brackets nest).
        let mut depth = 0usize;
        for open in (0..close).rev() {
            match chars[open] {
                ']' => depth += 1,
                '[' if depth == 0 => {
                    out.push((open, close));
                    break;
                }
                '[' => depth -= 1,
                _ => {}
            }
        }
    }
    out
}

/// Every inline code span outside fenced code and outside the text of links to URLs, with its line: its
/// text, trimmed.
fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (number, line) in prose_lines(text) {
        let chars: Vec<char> = line.chars().collect();
        let blanked: Vec<char> = without_code_spans(line).chars().collect();
        let external = external_link_texts(&blanked);
        for (open, close, run) in code_span_bounds(&chars) {
            if external
                .iter()
                .any(|&(start, end)| start < open && close < end)
            {
                continue;
            }
            let inside: String = chars[open + run..close].iter().collect();
            out.push((number, inside.trim().to_string()));
        }
    }
    out
}

/// What a code span names, when it names something this test checks.
#[derive(Debug, PartialEq)]
enum Named {
    /// A path from the repository root.
    RootPath(String),
    /// The last components of a path of the repository (a file name, `scanner/read_node.rs`).
    PathTail(String),
    /// The last components of a path under `src/` (`publish/content/plan/`).
    SrcPathTail(String),
    /// Modules and items, the first segment a module of ours, `crate` or `testkit`.
    Item(Vec<String>),
    /// `Type::member`.
    Member(String, String),
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// What `span` names; `None` when it is skipped (the list above). `modules`: the names of `src/`'s modules;
/// `module_dirs`: the names of its module directories.
fn classify(span: &str, modules: &HashSet<String>, module_dirs: &HashSet<String>) -> Option<Named> {
    if span.contains("::") {
        let path = span.strip_suffix("()").unwrap_or(span);
        let segments: Vec<&str> = path.split("::").collect();
        if !segments.iter().all(|s| is_identifier(s)) {
            return None;
        }
        let first = segments[0];
        if first == "crate" || first == "testkit" || modules.contains(first) {
            return Some(Named::Item(
                segments.iter().map(|s| s.to_string()).collect(),
            ));
        }
        let is_type = first.starts_with(|c: char| c.is_ascii_uppercase());
        return (is_type && segments.len() == 2 && path == span)
            .then(|| Named::Member(first.to_string(), segments[1].to_string()));
    }
    if span.is_empty()
        || span.starts_with(['-', '/', '~'])
        || !span
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'))
    {
        return None;
    }
    let (dotted, path) = match span.strip_prefix("./") {
        Some(path) => (true, path),
        None => (false, span),
    };
    let components: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    if components
        .iter()
        .any(|c| c.is_empty() || *c == "." || *c == "..")
    {
        return None;
    }
    let last = components[components.len() - 1];
    let extension = last
        .rsplit_once('.')
        .filter(|(stem, _)| !stem.is_empty())
        .map(|(_, ext)| ext);
    if path.contains('/') && TOP_DIRS.contains(&components[0]) {
        Some(Named::RootPath(path.to_string()))
    } else if extension.is_some_and(|ext| PATH_EXTENSIONS.contains(&ext)) {
        Some(Named::PathTail(path.to_string()))
    } else if !dotted
        && path.contains('/')
        && module_dirs.contains(components[0])
        && extension.is_none()
    {
        Some(Named::SrcPathTail(path.to_string()))
    } else {
        None
    }
}

/// A module of a crate: its file and the directory its children sit in (which may not exist).
#[derive(Clone, Debug)]
struct Module {
    file: PathBuf,
    dir: PathBuf,
}

/// What the checks read of the repository, gathered once.
struct Index {
    /// Every file and directory of the repository but `target/` and `.git/`: its path from the root with
    /// `/` separators, and whether it is a directory.
    entries: Vec<(String, bool)>,
    /// Module name -> the modules of that name in `src/`.
    modules: HashMap<String, Vec<Module>>,
    /// The names of `src/`'s module directories.
    module_dirs: HashSet<String>,
    /// Each `.rs` file of `src/` and `testkit/src/`, with its text.
    sources: Vec<(PathBuf, String)>,
}

/// The files and directories under `dir`, depth first.
fn walk(dir: &Path, out: &mut Vec<(PathBuf, bool)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let is_dir = path.is_dir();
        out.push((path.clone(), is_dir));
        if is_dir {
            walk(&path, out);
        }
    }
}

impl Index {
    fn read() -> Index {
        let root = root();
        let mut all = Vec::new();
        for entry in std::fs::read_dir(&root).expect("the repository root") {
            let path = entry.expect("a readable entry").path();
            if path.ends_with("target") || path.ends_with(".git") {
                continue;
            }
            let is_dir = path.is_dir();
            all.push((path.clone(), is_dir));
            if is_dir {
                walk(&path, &mut all);
            }
        }
        let entries = all
            .iter()
            .map(|(path, is_dir)| {
                let parts: Vec<String> = path
                    .strip_prefix(&root)
                    .expect("under the root")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                (parts.join("/"), *is_dir)
            })
            .collect();
        let src = root.join("src");
        let mut modules: HashMap<String, Vec<Module>> = HashMap::new();
        let mut module_dirs = HashSet::new();
        let mut sources = Vec::new();
        for (path, is_dir) in &all {
            let in_src = path.starts_with(&src);
            let name = path
                .file_stem()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            if *is_dir {
                if in_src && path.join("mod.rs").is_file() {
                    module_dirs.insert(name.clone());
                    modules.entry(name).or_default().push(Module {
                        file: path.join("mod.rs"),
                        dir: path.clone(),
                    });
                }
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            if in_src || path.starts_with(root.join("testkit/src")) {
                let text = std::fs::read_to_string(path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                sources.push((path.clone(), text));
            }
            if in_src && !["mod", "lib", "main"].contains(&name.as_str()) {
                let dir = path.with_extension("");
                if dir.is_dir() {
                    module_dirs.insert(name.clone());
                }
                modules.entry(name).or_default().push(Module {
                    file: path.clone(),
                    dir,
                });
            }
        }
        Index {
            entries,
            modules,
            module_dirs,
            sources,
        }
    }

    /// The texts of a module: its file and every file under its directory.
    fn module_texts(&self, module: &Module) -> impl Iterator<Item = &str> {
        self.sources
            .iter()
            .filter(|(path, _)| path == &module.file || path.starts_with(&module.dir))
            .map(|(_, text)| text.as_str())
    }

    /// Some entry whose path starts with `under` is `tail` or ends with `/tail` (and is a directory when
    /// `tail` ends with `/`).
    fn has_tail(&self, tail: &str, under: &str) -> bool {
        let want_dir = tail.ends_with('/');
        let tail = tail.trim_end_matches('/');
        let suffix = format!("/{tail}");
        self.entries.iter().any(|(path, is_dir)| {
            (*is_dir || !want_dir)
                && path.starts_with(under)
                && (path == tail || path.ends_with(&suffix))
        })
    }
}

/// The byte offsets where `word` occurs in `text` as a whole identifier.
fn word_positions<'a>(text: &'a str, word: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(word)
        .map(|(at, _)| at)
        .filter(move |&at| {
            !text[..at].chars().next_back().is_some_and(is_ident_char)
                && !text[at + word.len()..]
                    .chars()
                    .next()
                    .is_some_and(is_ident_char)
        })
}

/// The text before `at` ends with the keyword `keyword` (and whitespace).
fn after_keyword(text: &str, at: usize, keyword: &str) -> bool {
    let before = text[..at].trim_end();
    before.ends_with(keyword)
        && !before[..before.len() - keyword.len()]
            .chars()
            .next_back()
            .is_some_and(is_ident_char)
}

/// The `pub use` statements of `text` (any visibility), each from `pub` to its `;`.
fn reexports(text: &str) -> impl Iterator<Item = &str> {
    let mut offset = 0;
    text.split_inclusive('\n').filter_map(move |line| {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim_start();
        let rest = trimmed.strip_prefix("pub")?;
        let rest = match rest.strip_prefix('(') {
            Some(inside) => &inside[inside.find(')')? + 1..],
            None => rest,
        };
        if !rest.trim_start().starts_with("use ") {
            return None;
        }
        let from = start + (line.len() - trimmed.len());
        let end = text[from..].find(';').map_or(text.len(), |i| from + i);
        Some(&text[from..end])
    })
}

/// `text` defines `name` (`fn name`, `struct name`, ...) or re-exports it.
fn defines(text: &str, name: &str) -> bool {
    const KEYWORDS: [&str; 10] = [
        "fn",
        "struct",
        "enum",
        "trait",
        "type",
        "const",
        "static",
        "mod",
        "union",
        "macro_rules!",
    ];
    word_positions(text, name).any(|at| KEYWORDS.iter().any(|kw| after_keyword(text, at, kw)))
        || reexports(text).any(|statement| word_positions(statement, name).next().is_some())
}

/// A line of `text` lists `name` as a field (`name: ...`) or an enum variant (`Name,`, `Name(`, `Name {`).
fn lists_member(text: &str, name: &str) -> bool {
    text.lines().any(|line| {
        let mut rest = line.trim_start();
        for visibility in ["pub(crate) ", "pub(super) ", "pub "] {
            rest = rest.strip_prefix(visibility).unwrap_or(rest);
        }
        rest.strip_prefix(name).is_some_and(|after| {
            after.is_empty()
                || (after.starts_with([':', ',', '(', ' ', '{']) && !after.starts_with("::"))
        })
    })
}

/// The texts of the files of `src/` and `testkit/src/` that define `ty` or hold an `impl` for it.
fn type_texts<'a>(index: &'a Index, ty: &str) -> Vec<&'a str> {
    index
        .sources
        .iter()
        .map(|(_, text)| text.as_str())
        .filter(|text| {
            word_positions(text, ty).any(|at| {
                ["struct", "enum", "trait", "type"]
                    .iter()
                    .any(|kw| after_keyword(text, at, kw))
            }) || text.lines().any(|line| {
                line.trim_start().starts_with("impl") && word_positions(line, ty).next().is_some()
            })
        })
        .collect()
}

/// What is missing for `ty::member`, if anything (nothing when `ty` is not ours).
fn check_member(index: &Index, ty: &str, member: &str) -> Option<String> {
    let texts = type_texts(index, ty);
    let found = texts.is_empty()
        || texts
            .iter()
            .any(|text| defines(text, member) || lists_member(text, member));
    (!found).then(|| {
        format!("`{ty}` has no `{member}` (no fn, const or type of its impls, no field or variant)")
    })
}

/// A path from the root, for messages.
fn shown(path: &Path) -> String {
    let root = root();
    path.strip_prefix(&root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Follows `rest` from `module`: modules child by child, then an item defined there and maybe its member.
fn resolve_from(index: &Index, mut module: Module, rest: &[String]) -> Result<(), String> {
    for (at, segment) in rest.iter().enumerate() {
        let file = module.dir.join(format!("{segment}.rs"));
        let dir = module.dir.join(segment);
        if file.is_file() {
            module = Module { file, dir };
            continue;
        }
        if dir.join("mod.rs").is_file() {
            module = Module {
                file: dir.join("mod.rs"),
                dir,
            };
            continue;
        }
        if !index
            .module_texts(&module)
            .any(|text| defines(text, segment))
        {
            let place = if module.dir.is_dir() {
                format!("{} or under {}/", shown(&module.file), shown(&module.dir))
            } else {
                shown(&module.file)
            };
            return Err(format!("no module or item `{segment}` in {place}"));
        }
        return match rest.get(at + 1) {
            Some(member) => check_member(index, segment, member).map_or(Ok(()), Err),
            None => Ok(()),
        };
    }
    Ok(())
}

/// What is missing for an item path, if anything.
fn check_item(index: &Index, segments: &[String]) -> Option<String> {
    let root = root();
    let starts: Vec<Module> = match segments[0].as_str() {
        "crate" => vec![Module {
            file: root.join("src/lib.rs"),
            dir: root.join("src"),
        }],
        "testkit" => vec![Module {
            file: root.join("testkit/src/lib.rs"),
            dir: root.join("testkit/src"),
        }],
        name => index.modules.get(name).cloned().unwrap_or_default(),
    };
    let mut problems = Vec::new();
    for start in starts {
        match resolve_from(index, start, &segments[1..]) {
            Ok(()) => return None,
            Err(problem) => problems.push(problem),
        }
    }
    problems.sort();
    problems.dedup();
    Some(problems.join("; "))
}

/// What is missing for one span, if anything.
fn check_named(index: &Index, named: &Named) -> Option<String> {
    match named {
        Named::RootPath(path) => {
            let on_disk = root().join(path.trim_end_matches('/'));
            if path.ends_with('/') && !on_disk.is_dir() {
                Some(format!("no directory {path} in the repository"))
            } else if !on_disk.exists() {
                Some(format!("no {path} in the repository"))
            } else {
                None
            }
        }
        Named::PathTail(tail) => (!index.has_tail(tail, ""))
            .then(|| format!("no file of the repository is or ends with {tail}")),
        Named::SrcPathTail(tail) => (!index.has_tail(tail, "src/"))
            .then(|| format!("nothing under src/ is or ends with {tail}")),
        Named::Item(segments) => check_item(index, segments),
        Named::Member(ty, member) => check_member(index, ty, member),
    }
}

/// What is wrong with the code spans of a page (`page`: its name in messages), one message each, and how
/// many spans were checked.
fn check_spans(page: &Path, text: &str, index: &Index) -> (Vec<String>, usize) {
    let modules: HashSet<String> = index.modules.keys().cloned().collect();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (line, span) in code_spans(text) {
        let Some(named) = classify(&span, &modules, &index.module_dirs) else {
            continue;
        };
        checked += 1;
        if let Some(missing) = check_named(index, &named) {
            problems.push(format!("{}:{line}: `{span}`: {missing}", page.display()));
        }
    }
    (problems, checked)
}

#[test]
fn code_spans_name_paths_and_items_that_exist() {
    let index = Index::read();
    let mut problems = Vec::new();
    let mut checked = 0;
    for page in span_pages() {
        let text = std::fs::read_to_string(root().join(&page))
            .unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let (found, count) = check_spans(&page, &text, &index);
        problems.extend(found);
        checked += count;
    }
    eprintln!("checked {checked} code spans naming a path or an item");
    // A check that stopped recognising spans would pass on anything: the pages name hundreds.
    assert!(checked > 200, "only {checked} code spans were checked");
    assert!(
        problems.is_empty(),
        "{} code span(s) name a path or an item that does not exist:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn spans_are_classified_precisely() {
    let modules: HashSet<String> = ["inventory", "backoff", "wire", "dra"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let module_dirs: HashSet<String> = ["inventory", "publish", "cmd"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let classify = |span: &str| classify(span, &modules, &module_dirs);
    let owned = |segments: &[&str]| segments.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        classify("src/lib.rs"),
        Some(Named::RootPath("src/lib.rs".into()))
    );
    assert_eq!(
        classify("./hack/bench.sh"),
        Some(Named::RootPath("hack/bench.sh".into()))
    );
    assert_eq!(
        classify("tests/common/"),
        Some(Named::RootPath("tests/common/".into()))
    );
    assert_eq!(
        classify("read_node.rs"),
        Some(Named::PathTail("read_node.rs".into()))
    );
    assert_eq!(
        classify("scanner/read_node.rs"),
        Some(Named::PathTail("scanner/read_node.rs".into()))
    );
    assert_eq!(
        classify("publish/content/plan/"),
        Some(Named::SrcPathTail("publish/content/plan/".into()))
    );
    assert_eq!(
        classify("inventory::scan"),
        Some(Named::Item(owned(&["inventory", "scan"])))
    );
    assert_eq!(
        classify("crate::FIELD_MANAGER"),
        Some(Named::Item(owned(&["crate", "FIELD_MANAGER"])))
    );
    assert_eq!(
        classify("wire::node_entry()"),
        Some(Named::Item(owned(&["wire", "node_entry"])))
    );
    assert_eq!(
        classify("ChangeSignal::notify"),
        Some(Named::Member("ChangeSignal".into(), "notify".into()))
    );
    for skipped in [
        "nvidia.com/gpu",
        "resource.k8s.io/v1",
        "nvidia.com/gpu.present=true",
        "kube::Resource",
        "internment::ArcIntern<str>",
        "dra::{DraSlice, DraClaim, DraClass}",
        "inventory::scan(ScanInput::nodes(..))",
        "LabelSelector::default()",
        "src/sources/<kind>.rs",
        "src/inventory/vendors/registry/*.tsv",
        "hack/local-cluster.sh stop-apiserver",
        "kubectl apply -k deploy/",
        "--status-nodes-budget",
        "https://example.com/a.md",
        "/healthz",
        "~/.kube/config",
        "pkg/util/tas/tas.go",
        "./cmd/kueue",
        "target/bench/results.json",
        "status.topology[]",
        "::",
    ] {
        assert_eq!(classify(skipped), None, "{skipped}");
    }
}

#[test]
fn spans_in_fences_and_in_links_to_urls_are_not_read() {
    let text = "`a.rs` and [`b.rs`](docs/b.md) and [HAMi `c.rs`](https://example.com/c.rs)\n\
                ```sh\n`d.rs`\n```\n\
                ``e.rs``\n";
    let spans: Vec<(usize, String)> = code_spans(text);
    let expected: Vec<(usize, String)> = [(1, "a.rs"), (1, "b.rs"), (5, "e.rs")]
        .iter()
        .map(|(line, span)| (*line, span.to_string()))
        .collect();
    assert_eq!(spans, expected);
}

/// The check fails on what does not exist, and only on that: each wrong span below is reported, with its
/// line, and none of the right ones.
#[test]
fn wrong_spans_are_reported() {
    let index = Index::read();
    let right = "`src/lib.rs` `read_node.rs` `scanner/read_node.rs` `publish/content/plan/` \
                 `inventory::scan` `crate::FIELD_MANAGER` `backoff::WATCH` `dra::resolve` \
                 `vendors::built_in()` `ChangeSignal::notify` `ClusterNode::registers` \
                 `inventory::allocation::GpuPod` `testkit::settings::bench::ScaleShape`";
    let wrong = [
        "src/no_such_file.rs",
        // It exists, but is no directory.
        "tests/docs_links.rs/",
        "no_such_file.rs",
        "publish/no_such_dir/",
        "inventory::no_such_item",
        "inventory::no_such_module::scan",
        "crate::NO_SUCH_CONST",
        "ChangeSignal::no_such_method",
    ];
    let wrong_text: String = wrong.iter().map(|span| format!("`{span}`\n")).collect();
    let text = format!("{right}\n{wrong_text}");
    let (problems, checked) = check_spans(Path::new("page.md"), &text, &index);
    assert_eq!(checked, 13 + wrong.len(), "{problems:#?}");
    assert_eq!(problems.len(), wrong.len(), "{problems:#?}");
    for (i, problem) in problems.iter().enumerate() {
        assert!(
            problem.starts_with(&format!("page.md:{}: `", i + 2)),
            "{problem}"
        );
    }
}
