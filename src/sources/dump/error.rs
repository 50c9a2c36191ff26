//! Why a dump could not be read.

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
