//! The server-side apply body of a status subresource (GpuInventory's, GpuNode's): `apiVersion` and `kind`
//! are required (the article's pitfall 1).

use std::borrow::Cow;

use kube::Resource;
use serde::Serialize;

/// The server-side apply body of a status subresource, serialized straight from the borrowed status (no
/// JSON tree copy).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusApply<'a, S> {
    api_version: Cow<'static, str>,
    kind: Cow<'static, str>,
    status: &'a S,
}

impl<'a, S> StatusApply<'a, S> {
    /// The body for `status` of an object of kind `K`, with `K`'s `apiVersion` and `kind`.
    pub(crate) fn of<K: Resource<DynamicType = ()>>(status: &'a S) -> Self {
        StatusApply {
            api_version: K::api_version(&()),
            kind: K::kind(&()),
            status,
        }
    }
}
