//! kubectl's output conventions, the same on every command: `-o table|wide|json|yaml|name|jsonpath=TEMPLATE`
//! ([`OutputFormat`]), `--no-headers` (handled by each table), and output written so that a closed pipe or a
//! full disk ends the command with a clear code instead of a panic ([`stdout`]).
//!
//! Each command hands [`formatted`] the document its `-o json` prints, the kind/name of what it lists (for
//! `-o name`) and its table; `-o jsonpath=` runs over exactly the JSON document, as kubectl's does.

pub mod jsonpath;
pub mod stdout;

use serde::Serialize;

use crate::error::{Error, Result};
use jsonpath::Template;

/// How a command prints: kubectl's `-o` values, the same choices on every command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The command's table (kubectl's default, which has no name there; `table` names it here).
    #[default]
    Table,
    /// The table with more columns (on commands without more to show, the table).
    Wide,
    /// The command's document as JSON.
    Json,
    /// The same document as YAML.
    Yaml,
    /// One `kind/name` line per object the command lists, as `kubectl get -o name` prints.
    Name,
    /// kubectl's JSONPath template over the `-o json` document.
    JsonPath(Template),
}

/// The `-o` values, for help and errors.
pub const CHOICES: &str = "table, wide, json, yaml, name, jsonpath=TEMPLATE";

/// Parses an `-o` value: one of [`CHOICES`] (`jsonpath='{...}'` with quotes left by the shell too).
pub fn parse_output(text: &str) -> std::result::Result<OutputFormat, String> {
    let trimmed = text.trim();
    if let Some(template) = text.trim_start().strip_prefix("jsonpath=") {
        return Template::parse(template)
            .map(OutputFormat::JsonPath)
            .map_err(|why| format!("jsonpath template {template:?}: {why}"));
    }
    Ok(match trimmed {
        "table" => OutputFormat::Table,
        "wide" => OutputFormat::Wide,
        "json" => OutputFormat::Json,
        "yaml" => OutputFormat::Yaml,
        "name" => OutputFormat::Name,
        "jsonpath" => {
            return Err(
                "jsonpath needs a template: -o jsonpath='{.nodes[*].name}' (kubectl's syntax)"
                    .to_owned(),
            );
        }
        other => {
            return Err(format!(
                "{other:?} is not an output format; choose one of {CHOICES}"
            ));
        }
    })
}

impl OutputFormat {
    /// Whether this is a table (`table` or `wide`), which the plugin colours and `--no-headers` trims.
    pub fn is_table(&self) -> bool {
        matches!(self, OutputFormat::Table | OutputFormat::Wide)
    }

    /// The value as `-o` takes it, for messages.
    pub fn name(&self) -> String {
        match self {
            OutputFormat::Table => "table".to_owned(),
            OutputFormat::Wide => "wide".to_owned(),
            OutputFormat::Json => "json".to_owned(),
            OutputFormat::Yaml => "yaml".to_owned(),
            OutputFormat::Name => "name".to_owned(),
            OutputFormat::JsonPath(t) => format!("jsonpath={}", t.text()),
        }
    }
}

/// The text a command prints in `output`: `document` for json, yaml and jsonpath; `names` (`kind/name`
/// each, already in the order listed) for name; `table(wide)` for a table.
pub(crate) fn formatted<T: Serialize>(
    output: &OutputFormat,
    document: &T,
    names: impl FnOnce() -> Vec<String>,
    table: impl FnOnce(bool) -> String,
) -> Result<String> {
    let failed =
        |e: &dyn std::fmt::Display| Error::InvalidFlag(format!("-o {}: {e}", output.name()));
    Ok(match output {
        OutputFormat::Table => table(false),
        OutputFormat::Wide => table(true),
        OutputFormat::Json => {
            serde_json::to_string_pretty(document).map_err(|e| failed(&e))? + "\n"
        }
        OutputFormat::Yaml => serde_saphyr::to_string(document).map_err(|e| failed(&e))?,
        OutputFormat::Name => names().into_iter().map(|n| n + "\n").collect(),
        OutputFormat::JsonPath(template) => {
            let value = serde_json::to_value(document).map_err(|e| failed(&e))?;
            template.render(&value).map_err(|e| failed(&e))?
        }
    })
}

/// `kind.group/name` as `kubectl get -o name` prints an object of a group (`group` empty: the core group).
pub(crate) fn object_name(kind: &str, group: &str, name: &str) -> String {
    if group.is_empty() {
        format!("{kind}/{name}")
    } else {
        format!("{kind}.{group}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choice_parses_and_a_wrong_one_lists_them() {
        for (text, want) in [
            ("table", OutputFormat::Table),
            ("wide", OutputFormat::Wide),
            ("json", OutputFormat::Json),
            ("yaml", OutputFormat::Yaml),
            ("name", OutputFormat::Name),
        ] {
            assert_eq!(parse_output(text), Ok(want));
        }
        assert!(matches!(
            parse_output("jsonpath={.a}"),
            Ok(OutputFormat::JsonPath(_))
        ));
        let wrong = parse_output("jsno").unwrap_err();
        assert!(
            wrong.contains("\"jsno\"") && wrong.contains(CHOICES),
            "{wrong}"
        );
        assert!(
            parse_output("jsonpath")
                .unwrap_err()
                .contains("needs a template")
        );
        let bad = parse_output("jsonpath={.a").unwrap_err();
        assert!(bad.contains("{.a") && bad.contains("not closed"), "{bad}");
    }

    #[test]
    fn one_document_in_every_format() {
        let document =
            serde_json::json!({"nodes": [{"name": "a", "gpus": 8}, {"name": "b", "gpus": 4}]});
        let names = || vec!["gpunode.homelab.youngju.dev/a".to_owned()];
        let show = |output: &str| {
            formatted(&parse_output(output).unwrap(), &document, names, |wide| {
                format!("table wide={wide}\n")
            })
            .unwrap()
        };
        assert_eq!(show("table"), "table wide=false\n");
        assert_eq!(show("wide"), "table wide=true\n");
        assert_eq!(show("name"), "gpunode.homelab.youngju.dev/a\n");
        assert!(show("json").starts_with("{\n  \"nodes\""));
        assert!(show("yaml").contains("name: a"));
        assert_eq!(show("jsonpath={.nodes[*].name}"), "a b");
        assert_eq!(object_name("node", "", "n1"), "node/n1");
    }
}
