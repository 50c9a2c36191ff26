//! What a scan of a dump could not read: printed as `skippedObjects` by `scan -o json|yaml`, counted on
//! stderr, and the reason the exit code says the scan is incomplete.

use serde::Serialize;

/// An object of a dump the scan did not read, or read without a field it reads.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedObject {
    /// Its kind (`Node`), or empty when the list item is not an object.
    pub kind: String,
    /// `namespace/name`, `name`, or `<unnamed>`.
    pub name: String,
    /// Its position in the dump's `items`, when it is a list item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item: Option<usize>,
    /// The field that did not decode (`status.capacity["nvidia.com/gpu"]`), `apiVersion` for a version the
    /// scan does not read, empty for the whole object.
    pub field: String,
    /// Why, with the line and column when known.
    pub reason: String,
    /// What was skipped: the whole object, or only the field (the rest of the object was read).
    pub skipped: Skipped,
}

/// What of an object was skipped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Skipped {
    /// The object was not read.
    Object,
    /// The object was read without the field.
    Field,
}
