//! Reading a dump of cluster objects (`kubectl get nodes,pods,resourceslices,resourceclaims,deviceclasses,
//! devicetaintrules -A -o yaml|json`) for `scan --from-file` and the tests: nodes, the pods the allocation
//! accounting reads, and the DRA objects.

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::api::DynamicObject;
use serde::Deserialize;

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
    /// The ResourceSlices (`resource.k8s.io/v1`).
    pub(crate) slices: Vec<ResourceSlice>,
    /// The ResourceClaims.
    pub(crate) claims: Vec<ResourceClaim>,
    /// The DeviceClasses.
    pub(crate) classes: Vec<DeviceClass>,
    /// The DeviceTaintRules, of whichever `resource.k8s.io` version the dump holds.
    pub(crate) taint_rules: Vec<DynamicObject>,
}

#[derive(Deserialize)]
struct Header {
    kind: Option<String>,
}

#[derive(Deserialize)]
struct TypedList<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

/// Parses a dump and keeps its nodes only. `source_name` (a path, or `<stdin>`) is used in error messages.
pub fn parse_node_dump(bytes: &[u8], source_name: &str) -> Result<Vec<Node>, NodeDumpError> {
    parse_dump(bytes, source_name).map(|dump| dump.nodes)
}

/// Parses a dump of nodes and pods. `source_name` (a path, or `<stdin>`) is used in error messages.
pub fn parse_dump(bytes: &[u8], source_name: &str) -> Result<Dump, NodeDumpError> {
    let text = std::str::from_utf8(bytes).map_err(|e| NodeDumpError::NotText {
        source_name: source_name.to_owned(),
        offset: e.valid_up_to(),
    })?;
    let is_json = text.trim_start().starts_with('{');
    let syntax = |message: String| NodeDumpError::Syntax {
        source_name: source_name.to_owned(),
        message,
    };
    let not_nodes = |found: String| NodeDumpError::NotNodes {
        source_name: source_name.to_owned(),
        found,
    };
    let header: Option<Header> = parse(text, is_json).map_err(syntax)?;
    let Some(header) = header else {
        return Err(not_nodes("an empty document".to_owned()));
    };
    let mut dump = Dump::default();
    match header.kind.as_deref() {
        Some("Node") => dump.nodes.push(parse(text, is_json).map_err(syntax)?),
        Some("Pod") => dump.pods.push(parse(text, is_json).map_err(syntax)?),
        Some("ResourceSlice") => dump.slices.push(parse(text, is_json).map_err(syntax)?),
        Some("ResourceClaim") => dump.claims.push(parse(text, is_json).map_err(syntax)?),
        Some("DeviceClass") => dump.classes.push(parse(text, is_json).map_err(syntax)?),
        Some("DeviceTaintRule") => dump.taint_rules.push(parse(text, is_json).map_err(syntax)?),
        // Typed lists keep the parser's line and column in errors.
        Some("NodeList") => {
            dump.nodes = parse::<TypedList<Node>>(text, is_json)
                .map_err(syntax)?
                .items;
        }
        Some("PodList") => {
            dump.pods = parse::<TypedList<Pod>>(text, is_json)
                .map_err(syntax)?
                .items;
        }
        Some("ResourceSliceList") => {
            dump.slices = parse::<TypedList<_>>(text, is_json).map_err(syntax)?.items;
        }
        Some("ResourceClaimList") => {
            dump.claims = parse::<TypedList<_>>(text, is_json).map_err(syntax)?.items;
        }
        Some("DeviceClassList") => {
            dump.classes = parse::<TypedList<_>>(text, is_json).map_err(syntax)?.items;
        }
        Some("DeviceTaintRuleList") => {
            dump.taint_rules = parse::<TypedList<_>>(text, is_json).map_err(syntax)?.items;
        }
        Some("List") => {
            let list: TypedList<serde_json::Value> = parse(text, is_json).map_err(syntax)?;
            read_mixed_items(list.items, &mut dump).map_err(syntax)?;
        }
        Some(other) => return Err(not_nodes(format!("kind {other:?}"))),
        None => return Err(not_nodes("an object without a `kind` field".to_owned())),
    }
    Ok(dump)
}

/// The items of a `List` that mixes kinds: each is read by its own `kind`.
fn read_mixed_items(items: Vec<serde_json::Value>, dump: &mut Dump) -> Result<(), String> {
    for (index, item) in items.into_iter().enumerate() {
        let kind = item.get("kind").and_then(|k| k.as_str()).map(str::to_owned);
        let name = item
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or("<unnamed>")
            .to_owned();
        let at = |e: serde_json::Error| {
            format!(
                "items[{index}] ({} {name}): {e}",
                kind.as_deref().unwrap_or("Node")
            )
        };
        match kind.as_deref() {
            None | Some("Node") => dump.nodes.push(serde_json::from_value(item).map_err(at)?),
            Some("Pod") => dump.pods.push(serde_json::from_value(item).map_err(at)?),
            Some("ResourceSlice") => dump.slices.push(serde_json::from_value(item).map_err(at)?),
            Some("ResourceClaim") => dump.claims.push(serde_json::from_value(item).map_err(at)?),
            Some("DeviceClass") => dump.classes.push(serde_json::from_value(item).map_err(at)?),
            Some("DeviceTaintRule") => {
                dump.taint_rules
                    .push(serde_json::from_value(item).map_err(at)?);
            }
            // Other kinds (Services, ResourceClaimTemplates, ...) are not read.
            Some(_) => {}
        }
    }
    Ok(())
}

fn parse<T: for<'de> Deserialize<'de>>(text: &str, is_json: bool) -> Result<T, String> {
    if is_json {
        // serde_json's message already ends with "at line L column C".
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))
    } else {
        serde_saphyr::from_str(text).map_err(|e| match e.location() {
            Some(at) => format!(
                "invalid YAML at line {}, column {}: {e}",
                at.line(),
                at.column()
            ),
            None => format!("invalid YAML: {e}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::ResourceExt;

    #[test]
    fn a_mixed_list_of_nodes_pods_and_others() {
        let text = br#"{"kind": "List", "items": [
            {"metadata": {"name": "old-style"}},
            {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n"}},
            {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "namespace": "ns"}},
            {"kind": "Service", "apiVersion": "v1", "metadata": {"name": "s"}}
        ]}"#;
        let dump = parse_dump(text, "t").unwrap();
        assert_eq!((dump.nodes.len(), dump.pods.len()), (2, 1));
    }

    #[test]
    fn device_taint_rules_of_any_served_version_are_read() {
        let text = br#"{"kind": "List", "items": [
            {"kind": "DeviceTaintRule", "apiVersion": "resource.k8s.io/v1alpha3", "metadata": {"name": "a"},
             "spec": {"deviceSelector": {"pool": "n"}, "taint": {"key": "k", "effect": "NoSchedule"}}},
            {"kind": "DeviceTaintRule", "apiVersion": "resource.k8s.io/v1", "metadata": {"name": "b"},
             "spec": {"taint": {"key": "k", "effect": "None"}}}
        ]}"#;
        let dump = parse_dump(text, "t").unwrap();
        let names: Vec<String> = dump.taint_rules.iter().map(|r| r.name_any()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_bad_item_names_its_index_kind_and_name() {
        let text = br#"{"kind": "List", "items": [
            {"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}, "spec": {"containers": 3}}
        ]}"#;
        let error = parse_dump(text, "dump.json").unwrap_err().to_string();
        assert!(
            error.starts_with("dump.json: items[0] (Pod p): invalid type"),
            "{error}"
        );
    }
}
