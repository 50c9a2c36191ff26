//! Reading a dump of cluster objects (`kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses,
//! devicetaintrules -A -o yaml|json`) for `scan --from-file` and the tests: nodes, the pods the allocation
//! accounting reads, and the DRA objects.
//!
//! Dumps are read as users make them: from any supported Kubernetes version, by kubectl or by other tools.
//!
//! - **One bad object never hides the others.** In a List, an object that does not decode, or whose
//!   `resource.k8s.io` version the scan does not read, is skipped with one warning ([`Dump::warnings`])
//!   naming it (kind, name, and the field or the apiVersion), and every other object is read. A file that
//!   is one object, and fails to decode, is an error.
//! - **DRA objects of older versions are read as `v1`** where that is faithful (see `versions.rs`):
//!   `v1beta2` has `v1`'s schema, and `v1beta1` (Kubernetes 1.32 and 1.33) differs only by the `basic:`
//!   wrapper around a device's fields and by a request's fields not being under `exactly:`.
//! - **Scalars are read by where they go** (see `decode.rs`): a label written `08`, `1.10` or `true`
//!   unquoted, as PyYAML writes YAML 1.1 strings, is the string `"08"`, `"1.10"` or `"true"`.

mod decode;
mod decode_error;
mod object_kind;
mod scalars;
#[cfg(test)]
mod tests;
mod tree;
mod versions;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::DynamicObject;

use decode::decode;
use decode_error::DecodeError;
use object_kind::{Kind, Unread};
use tree::{Tree, Value};

/// Why a dump could not be read. Messages say where (line and column when the parser knows them, else the
/// list item and the object's name).
#[derive(Debug, thiserror::Error)]
pub enum NodeDumpError {
    /// The bytes are not UTF-8 text.
    #[error(
        "{source_name}: not UTF-8 text (invalid byte at offset {offset}); expected YAML or JSON"
    )]
    NotText {
        /// Where the bytes came from.
        source_name: String,
        /// Offset of the first invalid byte.
        offset: usize,
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
    /// One line per object skipped, each starting with the source name: which object (list index, kind,
    /// name), why (the field that did not decode, or the apiVersion not read) and what to do.
    pub warnings: Vec<String>,
}

/// Parses a dump and keeps its nodes only. `source_name` (a path, or `<stdin>`) is used in error messages.
pub fn parse_node_dump(bytes: &[u8], source_name: &str) -> Result<Vec<Node>, NodeDumpError> {
    parse_dump(bytes, source_name).map(|dump| dump.nodes)
}

/// Parses a dump: one object, a `List` of objects of any kinds, or a typed list (`NodeList`,
/// `ResourceSliceList`, ...). `source_name` (a path, or `<stdin>`) is used in error messages and warnings.
pub fn parse_dump(bytes: &[u8], source_name: &str) -> Result<Dump, NodeDumpError> {
    let text = std::str::from_utf8(bytes).map_err(|e| NodeDumpError::NotText {
        source_name: source_name.to_owned(),
        offset: e.valid_up_to(),
    })?;
    let syntax = |message: String| NodeDumpError::Syntax {
        source_name: source_name.to_owned(),
        message,
    };
    let not_nodes = |found: &str| NodeDumpError::NotNodes {
        source_name: source_name.to_owned(),
        found: found.to_owned(),
    };
    let root = if text.trim_start().starts_with('{') {
        // serde_json's message already ends with "at line L column C".
        serde_json::from_str(text)
            .map(|json| Some(tree::from_json(json)))
            .map_err(|e| format!("invalid JSON: {e}"))
    } else {
        tree::parse_yaml(text)
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
    let mut reader = Reader {
        source: source_name,
        dump: Dump::default(),
    };
    if kind == "List" {
        reader.read_list(root, None).map_err(syntax)?;
    } else if let Some(of) = kind.strip_suffix("List").and_then(Kind::parse) {
        reader.read_list(root, Some(of)).map_err(syntax)?;
    } else if let Some(of) = Kind::parse(&kind) {
        let version = api_version(&root);
        let label = format!("{} {}", of.name(), object_name(&root));
        match reader.read(root, of, version.as_deref()) {
            Ok(()) => {}
            Err(Unread::Version(version)) => reader.warn(&label, &version_warning(of, &version)),
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

/// The dump being read, and its warnings.
struct Reader<'a> {
    source: &'a str,
    dump: Dump,
}

impl Reader<'_> {
    fn warn(&mut self, label: &str, message: &str) {
        self.dump
            .warnings
            .push(format!("{}: {label}: {message}", self.source));
    }

    /// The items of a list, each read by its own `kind` (else `of`: a `NodeList`'s items may have none;
    /// a `List`'s items without one are Nodes, as older dumps write them) and its own `apiVersion` (else
    /// the typed list's). Items of other kinds are skipped without a word, as `kubectl get all` holds many.
    fn read_list(&mut self, mut list: Tree, of: Option<Kind>) -> Result<(), String> {
        let list_version = of.and_then(|_| api_version(&list));
        let items = match list.remove("items") {
            None => return Ok(()),
            Some(items) if items.is_null() => return Ok(()),
            Some(Tree {
                value: Value::Seq(items),
                ..
            }) => items,
            Some(other) => {
                let error: DecodeError = serde::de::Error::custom("`items` is not a sequence");
                return Err(error.located(other.at).to_string());
            }
        };
        for (index, item) in items.into_iter().enumerate() {
            if !matches!(item.value, Value::Map(_)) {
                self.warn(&format!("items[{index}]"), "not an object; skipped");
                continue;
            }
            let kind = match item.get("kind").and_then(Tree::as_str) {
                None => of.unwrap_or(Kind::Node),
                Some(kind) => match Kind::parse(kind) {
                    Some(kind) => kind,
                    None => continue,
                },
            };
            let version = api_version(&item).or_else(|| list_version.clone());
            let label = format!("items[{index}] ({} {})", kind.name(), object_name(&item));
            match self.read(item, kind, version.as_deref()) {
                Ok(()) => {}
                Err(Unread::Version(version)) => {
                    self.warn(&label, &version_warning(kind, &version));
                }
                Err(Unread::Decode(error)) => self.warn(
                    &label,
                    &format!("{error}; skipped, the file's other objects are read"),
                ),
            }
        }
        Ok(())
    }

    /// Reads one object of `kind` at `version` (its own, or its typed list's).
    fn read(&mut self, object: Tree, kind: Kind, version: Option<&str>) -> Result<(), Unread> {
        let dump = &mut self.dump;
        match kind {
            Kind::Node => dump.nodes.push(decode(&object)?),
            Kind::Pod => dump.pods.push(decode(&object)?),
            Kind::DeviceTaintRule => dump
                .taint_rules
                .push(versions::taint_rule(&object, version)?),
            // Only Kueue's: another API group may name a kind `Topology` too, and is none of the scan's.
            Kind::Kueue(_) => {
                if version.is_some_and(|v| {
                    v.starts_with(&format!("{}/", crate::sources::kueue::KUEUE_GROUP))
                }) {
                    dump.kueue.push(decode(&object)?);
                }
            }
            Kind::ResourceSlice | Kind::ResourceClaim | Kind::DeviceClass => {
                let Some(object) = versions::as_v1(object, kind, version) else {
                    return Err(Unread::Version(version.unwrap_or_default().to_owned()));
                };
                match kind {
                    Kind::ResourceSlice => dump.slices.push(decode(&object)?),
                    Kind::ResourceClaim => dump.claims.push(decode(&object)?),
                    _ => dump.classes.push(decode(&object)?),
                }
            }
        }
        Ok(())
    }
}
