//! The objects of optional APIs (Kueue's kinds, DeviceTaintRules) decoded slim: identity, `spec` and `status`.
//!
//! A [`DynamicObject`] decodes its body through serde's `flatten`, which buffers the whole object before it
//! builds the JSON tree, and keeps every field: managed fields, annotations (a `kubectl apply`'s
//! last-applied configuration is a second copy of the object), status history. The strips read `spec` and
//! `status` only. Decoded whole, a list page of 500 Kueue Workloads was the operator's largest allocation at
//! start-up with the readers in place (10 MB of a 16 MB peak heap at 1,000 nodes, heaptrack; benches/RESULTS.md
//! "The readers' start-up"). [`SlimDynamic`] keeps a `DynamicObject` (so the strips are unchanged) holding
//! only the metadata the watcher needs and those two fields; the decoder skips the rest without allocating.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, TypeMeta};
use kube::core::DynamicResourceScope;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::slim::slim_meta;

/// An object of an optional API as its watch keeps it until the strip reads it.
#[derive(Clone, Debug)]
pub struct SlimDynamic(pub DynamicObject);

/// What is decoded; the rest of the object is skipped.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Parts {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(deserialize_with = "slim_meta", default)]
    metadata: ObjectMeta,
    spec: Option<Value>,
    status: Option<Value>,
}

impl<'de> Deserialize<'de> for SlimDynamic {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let parts = Parts::deserialize(deserializer)?;
        let mut data = Map::new();
        for (key, value) in [("spec", parts.spec), ("status", parts.status)] {
            if let Some(value) = value {
                data.insert(key.to_owned(), value);
            }
        }
        let types = match (parts.api_version, parts.kind) {
            (Some(api_version), Some(kind)) => Some(TypeMeta { api_version, kind }),
            _ => None,
        };
        Ok(SlimDynamic(DynamicObject {
            types,
            metadata: parts.metadata,
            data: Value::Object(data),
        }))
    }
}

impl kube::Resource for SlimDynamic {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::SlimDynamic;
    use kube::ResourceExt;
    use kube::api::DynamicObject;
    use serde_json::json;

    /// What the strips read is what a whole decode gives; what they do not read is not kept.
    #[test]
    fn a_slim_object_keeps_identity_spec_and_status_and_drops_the_rest() {
        let body = json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "job-1", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
                "labels": { "kueue.x-k8s.io/queue-name": "user" },
                "annotations": { "kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}" },
                "managedFields": [{ "manager": "kubectl", "operation": "Apply" }],
            },
            "spec": { "queueName": "user", "podSets": [{ "name": "main", "count": 2 }] },
            "status": { "conditions": [{ "type": "QuotaReserved", "status": "False" }] },
        });
        let whole: DynamicObject = serde_json::from_value(body.clone()).unwrap();
        let SlimDynamic(slim) = serde_json::from_value(body).unwrap();
        assert_eq!(slim.types, whole.types);
        assert_eq!(slim.data, whole.data);
        assert_eq!(slim.name_any(), "job-1");
        assert_eq!(slim.namespace().as_deref(), Some("team-a"));
        assert_eq!(slim.resource_version().as_deref(), Some("42"));
        assert_eq!(slim.labels(), whole.labels());
        assert!(slim.annotations().is_empty() && slim.managed_fields().is_empty());
        assert!(!whole.annotations().is_empty());

        // A partial object (no spec, no status, no kind) still decodes; the strips say what is missing.
        let SlimDynamic(bare) =
            serde_json::from_value(json!({ "metadata": { "name": "x" } })).unwrap();
        assert_eq!(bare.data, json!({}));
        assert_eq!(bare.types, None);
    }
}
