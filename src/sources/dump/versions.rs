//! The `resource.k8s.io` versions a dump's DRA objects come in, and how each is read as `v1`.
//!
//! - `v1` (Kubernetes 1.34 on) is read as it is.
//! - `v1beta2` (1.33 on) has exactly `v1`'s schema (k8s-openapi's two sets of types differ only in their
//!   docs), so it is read as `v1`.
//! - `v1beta1` (1.32 on; what `kubectl get -o yaml` prints on 1.32 and 1.33) differs in two places, which
//!   are rewritten as the API server's own conversion does: a device's fields sit under `basic:`, and a
//!   claim's request has the fields of `v1`'s `exactly:` at its top level (`deviceClassName`, `selectors`,
//!   `allocationMode`, `count`, `adminAccess`, `tolerations`, `capacity`, ...; the server moves them under
//!   `exactly` when any is set). Everything else (pools, counters, attributes, capacity, allocation
//!   results, DeviceClasses) is the same as `v1`.
//! - `v1alpha3` (1.31; what `kubectl get -o yaml` printed there, and what users' issues of that time paste)
//!   has `v1beta1`'s shape, and a device's capacity is a bare quantity: it is wrapped as `{value: ...}`.
//! - Any other version (a future one) is not read: the caller skips the object with a warning.
//!
//! DeviceTaintRules are read from `v1`, `v1beta2` and `v1alpha3`, whose `spec` shares the fields the scan
//! reads (as the operator's own source does, [`crate::sources::taint_rules`]).

use k8s_openapi::api::resource::v1::DeviceTaintRuleSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, TypeMeta};
use serde::de::Error as _;

use super::decode::decode_field;
use super::decode_error::DecodeError;
use super::object_kind::{Kind, Unread};
use super::tree::{Tree, Value};
use crate::sources::taint_rules::TAINT_RULE_VERSIONS as TAINT_RULE_API_VERSIONS;

/// The versions of ResourceSlices, ResourceClaims and DeviceClasses read, for messages.
pub(super) const DRA_VERSIONS: &str = "resource.k8s.io/v1, v1beta2, v1beta1 or v1alpha3";

/// The versions of DeviceTaintRules read, for messages.
pub(super) const TAINT_RULE_VERSIONS: &str = "resource.k8s.io/v1, v1beta2 or v1alpha3";

const GROUP: &str = "resource.k8s.io/";

/// The ResourceSlice, ResourceClaim or DeviceClass as `v1`, or `None` when `api_version` is not one read. An
/// object without an `apiVersion` is taken as `v1`.
pub(super) fn as_v1(mut object: Tree, kind: Kind, api_version: Option<&str>) -> Option<Tree> {
    match api_version.map(|v| v.strip_prefix(GROUP)) {
        None | Some(Some("v1" | "v1beta2")) => {}
        Some(Some("v1beta1")) => match kind {
            Kind::ResourceSlice => unwrap_basic(&mut object),
            Kind::ResourceClaim => wrap_exactly(&mut object),
            _ => {}
        },
        // v1beta1's shape, and a device's capacity a bare quantity (`memory: 40Gi`, not `{value: 40Gi}`).
        Some(Some("v1alpha3")) => match kind {
            Kind::ResourceSlice => {
                unwrap_basic(&mut object);
                wrap_bare_capacity(&mut object);
            }
            Kind::ResourceClaim => wrap_exactly(&mut object),
            _ => {}
        },
        Some(_) => return None,
    }
    // k8s-openapi's v1 types reject any other apiVersion; the object is v1 now.
    object.remove("apiVersion");
    Some(object)
}

/// A slice's `spec.devices`, when it is a list (empty otherwise: `devices: null`, or none).
fn slice_devices(slice: &mut Tree) -> &mut [Tree] {
    match slice.get_mut("spec").and_then(|s| s.get_mut("devices")) {
        Some(Tree {
            value: Value::Seq(devices),
            ..
        }) => devices,
        _ => &mut [],
    }
}

/// `spec.devices[*].basic.{attributes, capacity, ...}` → `spec.devices[*].{attributes, capacity, ...}`.
fn unwrap_basic(slice: &mut Tree) {
    for device in slice_devices(slice) {
        // A `basic` that is not a mapping (no server writes one) is dropped, as v1 has no such field.
        if let Some(Tree {
            value: Value::Map(fields),
            ..
        }) = device.remove("basic")
            && let Value::Map(entries) = &mut device.value
        {
            entries.extend(fields);
        }
    }
}

/// `spec.devices[*].capacity.<name>: 40Gi` → `spec.devices[*].capacity.<name>: {value: 40Gi}` (a capacity
/// already a mapping is left as it is).
fn wrap_bare_capacity(slice: &mut Tree) {
    for device in slice_devices(slice) {
        let Some(Tree {
            value: Value::Map(capacity),
            ..
        }) = device.get_mut("capacity")
        else {
            continue;
        };
        for (_, quantity) in capacity.iter_mut() {
            if matches!(quantity.value, Value::Map(_)) {
                continue;
            }
            let at = quantity.at;
            let bare = std::mem::replace(quantity, Tree::text("", at));
            *quantity = Tree {
                value: Value::Map(vec![(Tree::text("value", at), bare)]),
                at,
            };
        }
    }
}

/// `spec.devices.requests[*].{deviceClassName, count, ...}` → `spec.devices.requests[*].exactly.{...}`:
/// every field but `name` and `firstAvailable`, when there is any.
fn wrap_exactly(claim: &mut Tree) {
    let Some(Tree {
        value: Value::Seq(requests),
        ..
    }) = claim
        .get_mut("spec")
        .and_then(|s| s.get_mut("devices"))
        .and_then(|d| d.get_mut("requests"))
    else {
        return;
    };
    for request in requests {
        let at = request.at;
        let Value::Map(fields) = &mut request.value else {
            continue;
        };
        let (kept, exactly): (Vec<_>, Vec<_>) = std::mem::take(fields)
            .into_iter()
            .partition(|(key, _)| matches!(key.as_str(), Some("name" | "firstAvailable")));
        *fields = kept;
        if !exactly.is_empty() {
            fields.push((
                Tree::text("exactly", at),
                Tree {
                    value: Value::Map(exactly),
                    at,
                },
            ));
        }
    }
}

/// A DeviceTaintRule of a version read, with its `spec` decoded as `v1`'s (so its strings are read as
/// strings, see [`super::decode`]) and its metadata.
pub(super) fn taint_rule(rule: &Tree, api_version: Option<&str>) -> Result<DynamicObject, Unread> {
    let api_version = api_version.unwrap_or("resource.k8s.io/v1");
    let read = api_version
        .strip_prefix(GROUP)
        .is_some_and(|v| TAINT_RULE_API_VERSIONS.contains(&v));
    if !read {
        return Err(Unread::Version(api_version.to_owned()));
    }
    let metadata: ObjectMeta = decode_field(rule, "metadata")?.unwrap_or_default();
    let spec: DeviceTaintRuleSpec = decode_field(rule, "spec")?
        .ok_or_else(|| DecodeError::missing_field("spec").located(rule.at))?;
    let spec = serde_json::to_value(spec).map_err(DecodeError::custom)?;
    Ok(DynamicObject {
        types: Some(TypeMeta {
            api_version: api_version.to_owned(),
            kind: "DeviceTaintRule".to_owned(),
        }),
        metadata,
        data: serde_json::json!({ "spec": spec }),
    })
}
