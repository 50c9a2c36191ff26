//! The documentation's links resolve: every relative link and image in README.md, CONTRIBUTING.md,
//! ARCHITECTURE.md, deploy/README.md and docs/*.md names a file or directory of this repository, and every
//! `#anchor` (on another file or in the same page) is the GitHub slug of one of the target's headings. Also:
//! README.md stays the five-minute read (at most 200 lines). No cluster; reads only files inside the repository.

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

/// The line with its inline code spans blanked out (a `](` inside backticks is no link). Backticks are
/// kept, so the text around a span stays where it was.
fn without_code_spans(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        // The closing run of exactly the same length.
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
                out.extend(std::iter::repeat_n('`', run));
                out.extend(std::iter::repeat_n(' ', j - (i + run)));
                out.extend(std::iter::repeat_n('`', run));
                i = j + run;
            }
            None => {
                out.extend(std::iter::repeat_n('`', run));
                i += run;
            }
        }
    }
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
