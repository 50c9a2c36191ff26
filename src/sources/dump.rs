//! Reading nodes from a `kubectl get nodes -o yaml|json` dump (for `scan --from-file` and the tests).

use k8s_openapi::api::core::v1::Node;
use serde::Deserialize;

/// Why a dump could not be read. Messages say where (line and column when the parser knows them).
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
        /// The parser's message, with line and column.
        message: String,
    },
    /// Well-formed, but not nodes.
    #[error(
        "{source_name}: expected a Node, or a List/NodeList of Nodes (as `kubectl get nodes -o yaml` prints), found {found}"
    )]
    NotNodes {
        /// Where the text came from.
        source_name: String,
        /// What was found instead.
        found: String,
    },
}

#[derive(Deserialize)]
struct Header {
    kind: Option<String>,
}

#[derive(Deserialize)]
struct NodeList {
    #[serde(default)]
    items: Vec<Node>,
}

/// Parses a dump of nodes. `source_name` (a path, or `<stdin>`) is used in error messages.
pub fn parse_node_dump(bytes: &[u8], source_name: &str) -> Result<Vec<Node>, NodeDumpError> {
    let text = std::str::from_utf8(bytes).map_err(|e| NodeDumpError::NotText {
        source_name: source_name.to_owned(),
        offset: e.valid_up_to(),
    })?;
    let is_json = text.trim_start().starts_with('{');
    let syntax = |message: String| NodeDumpError::Syntax {
        source_name: source_name.to_owned(),
        message,
    };
    let header: Option<Header> = parse(text, is_json).map_err(syntax)?;
    let Some(header) = header else {
        return Err(NodeDumpError::NotNodes {
            source_name: source_name.to_owned(),
            found: "an empty document".to_owned(),
        });
    };
    match header.kind.as_deref() {
        Some("List" | "NodeList") => {
            let list: NodeList = parse(text, is_json).map_err(syntax)?;
            Ok(list.items)
        }
        Some("Node") => {
            let node: Node = parse(text, is_json).map_err(syntax)?;
            Ok(vec![node])
        }
        Some(other) => Err(NodeDumpError::NotNodes {
            source_name: source_name.to_owned(),
            found: format!("kind {other:?}"),
        }),
        None => Err(NodeDumpError::NotNodes {
            source_name: source_name.to_owned(),
            found: "an object without a `kind` field".to_owned(),
        }),
    }
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
