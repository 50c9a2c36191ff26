//! `-o jsonpath=TEMPLATE`: kubectl's template language (text with `{...}` actions) over the document
//! `-o json` prints. The paths themselves are evaluated by `jsonpath-rust` (RFC 9535, the crate kube's own
//! client uses for kubeconfig auth); this file only turns kubectl's spelling into RFC 9535's and runs the
//! template: literal text, `{PATH}`, `{range PATH}...{end}`, and string literals `{"\n"}` / `{'\t'}`.
//!
//! kubectl's path spelling read here: `.a.b`, `$.a`, `@.a`, `..a`, `[0]`, `[*]`, `[0:2]`, `['k']`,
//! `[?(@.x=="y")]`, and `\.` for a dot inside a key (`.labels.nvidia\.com/gpu\.product`). Keys may hold any
//! character but `.`, `[` and `\`. Several results print separated by one space; strings raw, other values as
//! compact JSON; a path that matches nothing prints nothing (kubectl's `--allow-missing-template-keys`).

use jsonpath_rust::JsonPath;
use serde_json::Value;

/// A parsed template; equal when written alike.
#[derive(Debug, Clone)]
pub struct Template {
    text: String,
    nodes: Vec<Node>,
}

impl PartialEq for Template {
    fn eq(&self, other: &Template) -> bool {
        self.text == other.text
    }
}

impl Eq for Template {}

#[derive(Debug, Clone)]
enum Node {
    /// Printed as it is.
    Text(String),
    /// The values at an RFC 9535 path (relative to the item a `range` is at).
    Path(String),
    /// Each value at the path, the body printed once per value.
    Range(String, Vec<Node>),
}

impl Template {
    /// Parses a template, every path checked: an error says what is wrong and where.
    pub fn parse(text: &str) -> Result<Template, String> {
        let text = strip_quotes(text);
        let mut stack: Vec<(String, Vec<Node>)> = Vec::new();
        let mut nodes: Vec<Node> = Vec::new();
        let mut rest = text;
        let mut at = 0;
        while !rest.is_empty() {
            let Some(open) = rest.find('{') else {
                nodes.push(Node::Text(rest.to_owned()));
                break;
            };
            if open > 0 {
                nodes.push(Node::Text(rest[..open].to_owned()));
            }
            let close = action_end(&rest[open..]).ok_or_else(|| {
                format!(
                    "the `{{` at character {} is not closed by a `}}`",
                    at + open + 1
                )
            })?;
            let action = rest[open + 1..open + close].trim();
            if action == "end" {
                let (path, outer) = stack
                    .pop()
                    .ok_or_else(|| "`{end}` without a `{range ...}` before it".to_owned())?;
                let body = std::mem::replace(&mut nodes, outer);
                nodes.push(Node::Range(path, body));
            } else if let Some(path) = action.strip_prefix("range ") {
                stack.push((rfc_path(path.trim())?, std::mem::take(&mut nodes)));
            } else if action.starts_with('"') || action.starts_with('\'') {
                nodes.push(Node::Text(literal(action)?));
            } else if action.is_empty() {
                return Err(format!("an empty `{{}}` at character {}", at + open + 1));
            } else {
                nodes.push(Node::Path(rfc_path(action)?));
            }
            at += open + close + 1;
            rest = &rest[open + close + 1..];
        }
        if !stack.is_empty() {
            return Err("a `{range ...}` is not closed by `{end}`".to_owned());
        }
        Ok(Template {
            text: text.to_owned(),
            nodes,
        })
    }

    /// The template as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The template run over `document`.
    pub fn render(&self, document: &Value) -> Result<String, String> {
        let mut out = String::new();
        render(&self.nodes, document, &mut out)?;
        Ok(out)
    }
}

fn render(nodes: &[Node], current: &Value, out: &mut String) -> Result<(), String> {
    for node in nodes {
        match node {
            Node::Text(text) => out.push_str(text),
            Node::Path(path) => {
                let values = query(current, path)?;
                for (i, value) in values.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    match value {
                        Value::String(s) => out.push_str(s),
                        other => out.push_str(&other.to_string()),
                    }
                }
            }
            Node::Range(path, body) => {
                let values = query(current, path)?;
                // `{range .items}` ranges over the list itself, as kubectl's does.
                let items: Vec<&Value> = match values.as_slice() {
                    [Value::Array(list)] => list.iter().collect(),
                    _ => values,
                };
                for item in items {
                    render(body, item, out)?;
                }
            }
        }
    }
    Ok(())
}

fn query<'v>(value: &'v Value, path: &str) -> Result<Vec<&'v Value>, String> {
    value.query(path).map_err(|e| format!("path {path}: {e}"))
}

/// A template quoted whole, as `-o "jsonpath='{...}'"` leaves it.
fn strip_quotes(text: &str) -> &str {
    for quote in ['\'', '"'] {
        if let Some(inner) = text
            .trim()
            .strip_prefix(quote)
            .and_then(|t| t.strip_suffix(quote))
            && inner.starts_with('{')
        {
            return inner;
        }
    }
    text
}

/// The offset of the `}` closing the action opened at `text[0]`, quotes inside it skipped.
fn action_end(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
        escaped = false;
    }
    None
}

/// A string literal action: `"\n"`, `'\t'`, `"text"` with `\n`, `\t`, `\r`, `\\` and the quote escaped.
fn literal(action: &str) -> Result<String, String> {
    let quote = action.chars().next().unwrap_or('"');
    let inner = action
        .strip_prefix(quote)
        .and_then(|a| a.strip_suffix(quote))
        .ok_or_else(|| format!("the string {action} is not closed"))?;
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other @ ('\\' | '"' | '\'')) => out.push(other),
            other => {
                return Err(format!(
                    "unknown escape \\{} in {action}",
                    other.unwrap_or(' ')
                ));
            }
        }
    }
    Ok(out)
}

/// kubectl's spelling of a path as RFC 9535's: `$` first, each `.key` as `['key']` (so keys with `-`, `/`
/// and `\.` read), brackets and `..` as they are. Checked by the crate's parser.
fn rfc_path(path: &str) -> Result<String, String> {
    let mut chars = path.chars().peekable();
    let mut out = String::from("$");
    if matches!(chars.peek(), Some('$' | '@')) {
        chars.next();
    }
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                // A bracket, copied whole (quotes and nested brackets of a filter skipped).
                let mut depth = 1;
                let mut quote: Option<char> = None;
                out.push('[');
                for c in chars.by_ref() {
                    out.push(c);
                    match (quote, c) {
                        (Some(q), c) if c == q => quote = None,
                        (None, '\'' | '"') => quote = Some(c),
                        (None, '[') => depth += 1,
                        (None, ']') => depth -= 1,
                        _ => {}
                    }
                    if depth == 0 {
                        break;
                    }
                }
                if depth != 0 {
                    return Err(format!("path {path:?}: a `[` is not closed"));
                }
            }
            '.' => {
                if chars.peek() == Some(&'.') {
                    chars.next();
                    out.push_str("..");
                    if chars.peek() == Some(&'[') {
                        continue;
                    }
                } else if chars.peek() == Some(&'[') || chars.peek().is_none() {
                    continue;
                }
                let mut key = String::new();
                while let Some(&c) = chars.peek() {
                    match c {
                        '.' | '[' => break,
                        '\\' => {
                            chars.next();
                            key.extend(chars.next());
                        }
                        _ => {
                            key.push(c);
                            chars.next();
                        }
                    }
                }
                if key == "*" {
                    out.push_str(if out.ends_with("..") { "*" } else { "[*]" });
                } else {
                    let key = key.replace('\\', "\\\\").replace('\'', "\\'");
                    out.push_str(&format!("['{key}']"));
                }
            }
            other => {
                return Err(format!(
                    "path {path:?}: `{other}` where a `.key` or `[...]` was expected (paths start with `.`, \
                     as in {{.nodes[*].name}})"
                ));
            }
        }
    }
    jsonpath_rust::parser::parse_json_path(&out).map_err(|e| format!("path {path:?}: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(template: &str, document: &Value) -> String {
        Template::parse(template).unwrap().render(document).unwrap()
    }

    #[test]
    fn kubectl_templates_read_as_kubectl_reads_them() {
        let doc = json!({
            "totalGpus": 12,
            "nodes": [
                {"name": "a", "count": 8, "labels": {"nvidia.com/gpu.product": "H100", "x-y": "1"}},
                {"name": "b", "count": 4, "labels": {}}
            ]
        });
        assert_eq!(run("{.nodes[*].name}", &doc), "a b");
        assert_eq!(run("{.totalGpus}", &doc), "12");
        assert_eq!(run("total={.totalGpus}\n", &doc), "total=12\n");
        assert_eq!(
            run(
                "{range .nodes[*]}{.name}{\"\\t\"}{.count}{\"\\n\"}{end}",
                &doc
            ),
            "a\t8\nb\t4\n"
        );
        assert_eq!(run("{range .nodes}{.name},{end}", &doc), "a,b,");
        assert_eq!(
            run("{.nodes[0].labels.nvidia\\.com/gpu\\.product}", &doc),
            "H100"
        );
        assert_eq!(run("{.nodes[0].labels.x-y}", &doc), "1");
        assert_eq!(run("{.nodes[?(@.count==4)].name}", &doc), "b");
        assert_eq!(run("{..name}", &doc), "a b");
        assert_eq!(run("'{.nodes[1].name}'", &doc), "b");
        assert_eq!(run("{$.nodes[1].labels}", &doc), "{}");
        assert_eq!(
            run("{.missing}", &doc),
            "",
            "a missing key prints nothing, as kubectl"
        );
    }

    #[test]
    fn a_bad_template_says_what_and_where() {
        let err = |t: &str| Template::parse(t).unwrap_err();
        assert!(err("{.a").contains("character 1"), "{}", err("{.a"));
        assert!(err("x{end}").contains("without a `{range"));
        assert!(err("{range .a}{.b}").contains("not closed by `{end}`"));
        assert!(err("{.a[}").contains("not closed") || err("{.a[}").contains("path"));
        assert!(err("{nodes}").contains("paths start with `.`"));
        assert!(err("{}").contains("empty"));
        assert!(err("{.a[?(@.x==)]}").contains("path"));
    }
}
