//! Reading a dump of cluster objects (`kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses,
//! devicetaintrules -A -o yaml|json`) for `scan --from-file` and the tests: nodes, the pods the allocation
//! accounting reads, the DRA objects, Kueue's, and the PodDisruptionBudgets `fit --plan` reads.
//!
//! Dumps are read as users make them: from any supported Kubernetes version, by kubectl or by other tools.
//!
//! - **One bad object never hides the others, and is never hidden itself.** In a List, an object that does
//!   not decode, or whose `resource.k8s.io` version the scan does not read, is skipped with one warning
//!   ([`Dump::warnings`]) naming it (kind, name, and the field or the apiVersion) and recorded in
//!   [`Dump::skipped`] (the scan's exit code and `skippedObjects` say so); every other object is read. A file
//!   that is one object, and fails to decode, is an error.
//! - **A field that does not decode is taken out, not the object** (`lenient.rs`): a Node with
//!   `creationTimestamp: yesterday` is read without it, with a warning; one without a field the scan reads
//!   (a null capacity quantity) is read without it too, and recorded in [`Dump::skipped`].
//! - **Bounded** (`budget.rs`, `input.rs`): the text read and what it expands to (aliases included) are
//!   capped by `--max-input-bytes`; a NUL byte ends the read at once.
//! - **DRA objects of older versions are read as `v1`** where that is faithful (see `versions.rs`):
//!   `v1beta2` has `v1`'s schema, and `v1beta1` (Kubernetes 1.32 and 1.33) differs only by the `basic:`
//!   wrapper around a device's fields and by a request's fields not being under `exactly:`.
//! - **Scalars are read by where they go** (see `decode.rs`): a label written `08`, `1.10` or `true`
//!   unquoted, as PyYAML writes YAML 1.1 strings, is the string `"08"`, `"1.10"` or `"true"`.

mod budget;
mod decode;
mod decode_error;
mod error;
#[cfg(test)]
mod fuzz;
mod input;
mod json;
mod lenient;
mod object_kind;
mod reader;
mod scalars;
mod skipped;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_closed;
mod tree;
mod versions;

use k8s_openapi::api::core::v1::Node;

pub use budget::DEFAULT_MAX_INPUT_BYTES;
pub use error::NodeDumpError;
pub use input::read_dump_bytes;
pub use reader::Dump;
pub use skipped::{Skipped, SkippedObject};

use budget::{Budget, OBJECT_BYTES};
use object_kind::{Kind, Unread};
use reader::{Reader, api_version, object_name, version_warning};
use tree::{Tree, Value};

/// Parses a dump and keeps its nodes only. `source_name` (a path, or `<stdin>`) is used in error messages.
pub fn parse_node_dump(bytes: &[u8], source_name: &str) -> Result<Vec<Node>, NodeDumpError> {
    parse_dump(bytes, source_name).map(|dump| dump.nodes)
}

/// Parses a dump within [`DEFAULT_MAX_INPUT_BYTES`]; see [`parse_dump_within`].
pub fn parse_dump(bytes: &[u8], source_name: &str) -> Result<Dump, NodeDumpError> {
    parse_dump_within(bytes, source_name, DEFAULT_MAX_INPUT_BYTES)
}

/// Parses a dump: one object, a `List` of objects of any kinds, or a typed list (`NodeList`,
/// `ResourceSliceList`, ...). `source_name` (a path, or `<stdin>`) is used in error messages and warnings.
/// The text and what it expands to once read may take at most `limit` bytes (`--max-input-bytes`).
pub fn parse_dump_within(
    bytes: &[u8],
    source_name: &str,
    limit: u64,
) -> Result<Dump, NodeDumpError> {
    let text = text_of(bytes, source_name, limit)?;
    let mut budget = Budget::new(limit);
    let syntax = |message: String| NodeDumpError::Syntax {
        source_name: source_name.to_owned(),
        message,
    };
    let not_nodes = |found: &str| NodeDumpError::NotNodes {
        source_name: source_name.to_owned(),
        found: found.to_owned(),
    };
    let root = match root_of(text, &mut budget).map_err(syntax)? {
        None => return Err(not_nodes("an empty document")),
        Some(root) if root.is_null() => return Err(not_nodes("an empty document")),
        Some(
            root @ Tree {
                value: Value::Map(_),
                ..
            },
        ) => root,
        Some(Tree {
            value: Value::Seq(_),
            ..
        }) => return Err(not_nodes("a sequence, not an object")),
        Some(_) => return Err(not_nodes("a scalar, not an object")),
    };
    let Some(kind) = root.get("kind").and_then(Tree::as_str).map(str::to_owned) else {
        return Err(not_nodes("an object without a `kind` field"));
    };
    let mut reader = Reader::new(source_name, budget);
    if kind == "List" {
        reader.read_list(root, None).map_err(syntax)?;
    } else if let Some(of) = kind.strip_suffix("List").and_then(Kind::parse) {
        reader.read_list(root, Some(of)).map_err(syntax)?;
    } else if let Some(of) = Kind::parse(&kind) {
        read_one(&mut reader, root, of).map_err(syntax)?;
    } else {
        return Err(not_nodes(&format!("kind {kind:?}")));
    }
    Ok(reader.dump)
}

/// The bytes as text, unless they are more than `limit`, binary (a NUL byte) or not UTF-8.
fn text_of<'a>(bytes: &'a [u8], source_name: &str, limit: u64) -> Result<&'a str, NodeDumpError> {
    if bytes.len() as u64 > limit {
        return Err(NodeDumpError::TooLarge {
            source_name: source_name.to_owned(),
            limit,
        });
    }
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        return Err(input::not_text(bytes, nul, source_name));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = input::line_and_column(bytes, e.valid_up_to());
        NodeDumpError::NotText {
            source_name: source_name.to_owned(),
            line,
            column,
        }
    })
}

/// The text's tree (JSON when it starts with `{`, else YAML), charged to `budget`; `None` when empty.
fn root_of(text: &str, budget: &mut Budget) -> Result<Option<Tree>, String> {
    if !text.trim_start().starts_with('{') {
        return tree::parse_yaml(text, budget);
    }
    // Built node by node, each charged as it is (`json.rs`); serde_json's errors say the line and column.
    json::parse_json(text, budget).map(Some)
}

/// Reads a file that is one object: an object not read is an error, as nothing else is in the file.
fn read_one(reader: &mut Reader<'_>, root: Tree, of: Kind) -> Result<(), String> {
    tree::charge(&mut reader.budget, OBJECT_BYTES, root.at)?;
    let version = api_version(&root);
    let name = object_name(&root);
    let label = format!("{} {name}", of.name());
    match reader.read(root, of, version.as_deref(), &label, &name) {
        Ok(()) => {}
        Err(Unread::Version(version)) => {
            let warning = version_warning(of, &version);
            reader.skip(of.name(), &name, "apiVersion", &label, &warning);
        }
        Err(Unread::Decode(error)) => return Err(format!("{label}: {error}")),
    }
    Ok(())
}
