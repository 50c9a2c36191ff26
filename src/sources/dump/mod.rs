//! Reading a dump of cluster objects (`kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses,
//! devicetaintrules -A -o yaml|json`) for `scan --from-file` and the tests: nodes, the pods the allocation
//! accounting reads, and the DRA objects.
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
#[cfg(test)]
mod fuzz;
mod input;
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

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::DynamicObject;

pub use budget::DEFAULT_MAX_INPUT_BYTES;
pub use input::read_dump_bytes;
pub use skipped::{Skipped, SkippedObject};

use budget::{Budget, OBJECT_BYTES};
use object_kind::{Kind, Unread};
use reader::Reader;
use tree::{Tree, Value};

/// Why a dump could not be read. Messages say where (line and column when the parser knows them, else the
/// list item and the object's name).
#[derive(Debug, thiserror::Error)]
pub enum NodeDumpError {
    /// The bytes are not UTF-8 text.
    #[error(
        "{source_name}: not UTF-8 text (an invalid byte at line {line}, column {column}); expected YAML \
         or JSON in UTF-8, as kubectl writes it"
    )]
    NotText {
        /// Where the bytes came from.
        source_name: String,
        /// Line of the first invalid byte (from 1).
        line: usize,
        /// Its column, in characters (from 1).
        column: usize,
    },
    /// A NUL byte: binary data (or UTF-16 text), never YAML or JSON.
    #[error(
        "{source_name}: binary data (a NUL byte at line {line}, column {column}), not a dump; expected \
         YAML or JSON in UTF-8, as `kubectl get nodes,pods -A -o yaml` writes it"
    )]
    Binary {
        /// Where the bytes came from.
        source_name: String,
        /// Line of the NUL byte (from 1).
        line: usize,
        /// Its column, in characters (from 1).
        column: usize,
    },
    /// More bytes than the cap.
    #[error(
        "{source_name}: more than {limit} bytes (--max-input-bytes); if it is a real export, raise \
         --max-input-bytes, or export fewer objects (kubectl get nodes,pods -A -o yaml)"
    )]
    TooLarge {
        /// Where the bytes came from.
        source_name: String,
        /// The cap.
        limit: u64,
    },
    /// The file could not be opened or read.
    #[error("{source_name}: {message}")]
    Unreadable {
        /// The path.
        source_name: String,
        /// Why, and what to do.
        message: String,
    },
    /// YAML or JSON syntax error, or a field with the wrong type.
    #[error("{source_name}: {message}")]
    Syntax {
        /// Where the text came from.
        source_name: String,
        /// The parser's message, with line and column (or the list item).
        message: String,
    },
    /// Well-formed, but neither nodes nor pods.
    #[error(
        "{source_name}: expected Nodes, Pods, ResourceSlices, ResourceClaims, DeviceClasses or \
         DeviceTaintRules: one object, or a List of them (as `kubectl get \
         nodes,pods,resourceslices,resourceclaims,deviceclasses,devicetaintrules -A -o yaml` prints), found \
         {found}"
    )]
    NotNodes {
        /// Where the text came from.
        source_name: String,
        /// What was found instead.
        found: String,
    },
}

/// The objects of a dump the scan reads; other kinds in a `List` are skipped.
#[derive(Clone, Debug, Default)]
pub struct Dump {
    /// The nodes (a `List` item without `kind` is read as a Node, as older dumps write them).
    pub nodes: Vec<Node>,
    /// The pods.
    pub pods: Vec<Pod>,
    /// The ResourceSlices, read as `resource.k8s.io/v1`.
    pub(crate) slices: Vec<ResourceSlice>,
    /// The ResourceClaims, read as `resource.k8s.io/v1`.
    pub(crate) claims: Vec<ResourceClaim>,
    /// The DeviceClasses, read as `resource.k8s.io/v1`.
    pub(crate) classes: Vec<DeviceClass>,
    /// The DeviceTaintRules, of whichever `resource.k8s.io` version the dump holds (their `spec` as `v1`'s).
    pub(crate) taint_rules: Vec<DynamicObject>,
    /// Kueue's objects (`kueue.x-k8s.io`, any version: the fields read are alike): Topologies, and the quota
    /// objects (`sources::kueue`).
    pub(crate) kueue: Vec<DynamicObject>,
    /// One line per object skipped or field taken out, each starting with the source name: which object
    /// (list index, kind, name), why (the field that did not decode, or the apiVersion not read) and what to
    /// do.
    pub warnings: Vec<String>,
    /// The objects the scan could not read, or read without a field it reads: the scan is incomplete.
    pub skipped: Vec<SkippedObject>,
}

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
    if bytes.len() as u64 > limit {
        return Err(NodeDumpError::TooLarge {
            source_name: source_name.to_owned(),
            limit,
        });
    }
    if let Some(nul) = bytes.iter().position(|&b| b == 0) {
        return Err(input::not_text(bytes, nul, source_name));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = input::line_and_column(bytes, e.valid_up_to());
        NodeDumpError::NotText {
            source_name: source_name.to_owned(),
            line,
            column,
        }
    })?;
    let mut budget = Budget::new(limit);
    let syntax = |message: String| NodeDumpError::Syntax {
        source_name: source_name.to_owned(),
        message,
    };
    let not_nodes = |found: &str| NodeDumpError::NotNodes {
        source_name: source_name.to_owned(),
        found: found.to_owned(),
    };
    let root = if text.trim_start().starts_with('{') {
        // serde_json's message already ends with "at line L column C". JSON has no aliases: its tree is
        // charged once built, a small multiple of its text (which the cap already bounds).
        serde_json::from_str(text)
            .map_err(|e| format!("invalid JSON: {e}"))
            .map(tree::from_json)
            .and_then(|tree| {
                budget.spend(budget::tree_bytes(&tree), tree.at)?;
                Ok(Some(tree))
            })
    } else {
        tree::parse_yaml(text, &mut budget)
    }
    .map_err(syntax)?;
    let root = match root {
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
        reader.budget.spend(OBJECT_BYTES, root.at).map_err(syntax)?;
        let version = api_version(&root);
        let name = object_name(&root);
        let label = format!("{} {name}", of.name());
        match reader.read(root, of, version.as_deref(), &label, &name) {
            Ok(()) => {}
            Err(Unread::Version(version)) => {
                reader.skip(
                    of.name(),
                    &name,
                    "apiVersion",
                    &label,
                    &version_warning(of, &version),
                );
            }
            Err(Unread::Decode(error)) => return Err(syntax(format!("{label}: {error}"))),
        }
    } else {
        return Err(not_nodes(&format!("kind {kind:?}")));
    }
    Ok(reader.dump)
}

fn api_version(object: &Tree) -> Option<String> {
    object
        .get("apiVersion")
        .and_then(Tree::as_str)
        .map(str::to_owned)
}

/// `namespace/name`, `name`, or `<unnamed>`.
fn object_name(object: &Tree) -> String {
    let metadata = object.get("metadata");
    let field = |key| metadata.and_then(|m| m.get(key)).and_then(Tree::as_str);
    match (field("namespace"), field("name")) {
        (Some(namespace), Some(name)) => format!("{namespace}/{name}"),
        (None, Some(name)) => name.to_owned(),
        (_, None) => "<unnamed>".to_owned(),
    }
}

/// What the scan reads of `kind`, and how to export it so that it does.
fn version_warning(kind: Kind, version: &str) -> String {
    let (versions, plural, older) = match kind {
        Kind::DeviceTaintRule => (
            versions::TAINT_RULE_VERSIONS,
            "devicetaintrules",
            "v1beta2 on Kubernetes 1.36, v1alpha3 before",
        ),
        Kind::ResourceClaim => (
            versions::DRA_VERSIONS,
            "resourceclaims",
            "v1beta1 before Kubernetes 1.34; add -A for every namespace",
        ),
        Kind::ResourceSlice => (
            versions::DRA_VERSIONS,
            "resourceslices",
            "v1beta1 before Kubernetes 1.34",
        ),
        _ => (
            versions::DRA_VERSIONS,
            "deviceclasses",
            "v1beta1 before Kubernetes 1.34",
        ),
    };
    format!(
        "apiVersion {version:?} is not one this scan reads ({versions}); skipped. Re-export it with a \
         served version: kubectl get {plural}.v1.resource.k8s.io -o yaml ({older})"
    )
}
