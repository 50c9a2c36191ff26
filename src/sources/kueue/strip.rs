//! Kueue's objects stripped to what the quota rules read (`inventory::quotas::kueue`). The versions served
//! (`v1beta2`, `v1beta1`) share these fields but one: a ClusterQueue's cohort is `spec.cohortName` in v1beta2
//! and `spec.cohort` in v1beta1, so both are read. An object whose fields do not read is left out with a
//! warning naming it; one bad object never hides the others.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::api::DynamicObject;
use serde_json::Value;
use tracing::warn;

use crate::inventory::model::{ResourceMap, quantity_value};
use crate::inventory::quotas::kueue::{
    Flavor, FlavorQuotas, LocalQueue, PendingWorkload, PodSet, QuotaHolder, ResourceGroup,
    ResourceQuota,
};
use crate::inventory::resources::is_accounted_request;
use crate::inventory::topology::gang::Toleration;

fn spec(object: &DynamicObject) -> &Value {
    object.data.get("spec").unwrap_or(&Value::Null)
}

fn text<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value
        .get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn list<'v>(value: &'v Value, key: &str) -> &'v [Value] {
    value
        .get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// A quantity in whole units (rounded down); `None` when it does not read.
fn whole(value: &Value) -> Option<u64> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let value = quantity_value(&text)?;
    // Saturating: a quantity beyond u64 is all the same "more than any fleet".
    (value >= 0.0).then(|| value.floor() as u64)
}

fn left_out(kind: &str, object: &DynamicObject, why: &str) {
    let name = match object.namespace() {
        Some(ns) => format!("{ns}/{}", object.name_any()),
        None => object.name_any(),
    };
    warn!(
        object = %name,
        "Kueue {kind} {name}: {why}; it is left out of the quota checks (check it with kubectl get {} {name} -o yaml)",
        kind.to_lowercase()
    );
}

/// A ResourceFlavor.
pub fn strip_flavor(object: &DynamicObject) -> Option<Flavor> {
    let spec = spec(object);
    let node_labels = spec
        .get("nodeLabels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let node_taints = list(spec, "nodeTaints")
        .iter()
        .filter_map(|t| {
            let key = text(t, "key")?.to_owned();
            let value = text(t, "value").unwrap_or_default().to_owned();
            let effect = text(t, "effect").unwrap_or_default().to_owned();
            Some((key, value, effect))
        })
        .collect();
    let tolerations = list(spec, "tolerations").iter().map(toleration).collect();
    Some(Flavor {
        name: object.name_any(),
        node_labels,
        node_taints,
        tolerations,
        topology: text(spec, "topologyName").map(str::to_owned),
    })
}

/// A `corev1.Toleration`: `operator: Exists` tolerates any value, an empty key (with `Exists`) any key.
fn toleration(value: &Value) -> Toleration {
    let exists = text(value, "operator") == Some("Exists");
    Toleration {
        key: text(value, "key").map(str::to_owned),
        value: if exists {
            None
        } else {
            Some(text(value, "value").unwrap_or_default().to_owned())
        },
        effect: text(value, "effect").map(str::to_owned),
    }
}

/// A ClusterQueue.
pub fn strip_cluster_queue(object: &DynamicObject) -> Option<QuotaHolder> {
    let spec = spec(object);
    let cohort = text(spec, "cohortName").or_else(|| text(spec, "cohort"));
    quota_holder("ClusterQueue", object, cohort)
}

/// A Cohort (its quotas of its own; `spec.parentName` is its cohort).
pub fn strip_cohort(object: &DynamicObject) -> Option<QuotaHolder> {
    quota_holder("Cohort", object, text(spec(object), "parentName"))
}

fn quota_holder(kind: &str, object: &DynamicObject, cohort: Option<&str>) -> Option<QuotaHolder> {
    let mut groups = Vec::new();
    for group in list(spec(object), "resourceGroups") {
        let covered = list(group, "coveredResources")
            .iter()
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect();
        let mut flavors = Vec::new();
        for flavor in list(group, "flavors") {
            let Some(name) = text(flavor, "name") else {
                left_out(kind, object, "a flavor of spec.resourceGroups has no name");
                return None;
            };
            let mut resources = Vec::new();
            for quota in list(flavor, "resources") {
                let Some(resource) = text(quota, "name") else {
                    continue;
                };
                if !is_accounted_request(resource) {
                    continue;
                }
                let limit = |key: &str| quota.get(key).and_then(whole);
                let Some(nominal) = quota.get("nominalQuota").map_or(Some(0), whole) else {
                    left_out(
                        kind,
                        object,
                        &format!("flavor {name}'s nominalQuota of {resource} does not read"),
                    );
                    return None;
                };
                resources.push(ResourceQuota {
                    resource: resource.to_owned(),
                    nominal,
                    borrowing_limit: limit("borrowingLimit"),
                    lending_limit: limit("lendingLimit"),
                });
            }
            flavors.push(FlavorQuotas {
                flavor: name.to_owned(),
                resources,
            });
        }
        groups.push(ResourceGroup { covered, flavors });
    }
    Some(QuotaHolder {
        name: object.name_any(),
        cohort: cohort.map(str::to_owned),
        groups,
    })
}

/// A LocalQueue.
pub fn strip_local_queue(object: &DynamicObject) -> Option<LocalQueue> {
    let Some(cluster_queue) = text(spec(object), "clusterQueue") else {
        left_out("LocalQueue", object, "spec.clusterQueue is missing");
        return None;
    };
    Some(LocalQueue {
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
        cluster_queue: cluster_queue.to_owned(),
    })
}

/// A Workload, if it is pending: active, without `QuotaReserved=True` and not `Finished`. Admitted and
/// finished ones are not kept.
pub fn strip_workload(object: &DynamicObject) -> Option<PendingWorkload> {
    let spec = spec(object);
    if spec.get("active").and_then(Value::as_bool) == Some(false) {
        return None;
    }
    let status = object.data.get("status").unwrap_or(&Value::Null);
    let holds = |kind: &str| {
        list(status, "conditions")
            .iter()
            .any(|c| text(c, "type") == Some(kind) && text(c, "status") == Some("True"))
    };
    if holds("QuotaReserved") || holds("Finished") {
        return None;
    }
    let queue = text(spec, "queueName")?;
    let pod_sets = list(spec, "podSets").iter().map(pod_set).collect();
    Some(PendingWorkload {
        namespace: object.namespace().unwrap_or_default(),
        name: object.name_any(),
        queue: queue.to_owned(),
        pod_sets,
    })
}

fn pod_set(value: &Value) -> PodSet {
    let pod = value
        .get("template")
        .and_then(|t| t.get("spec"))
        .unwrap_or(&Value::Null);
    let mut per_pod: ResourceMap<u64> = ResourceMap::new();
    for container in list(pod, "containers") {
        for (resource, n) in accelerator_asks(container) {
            *per_pod.entry(resource).or_default() += n;
        }
    }
    // An init container runs alone: the pod needs the most of it or of the containers together.
    for container in list(pod, "initContainers") {
        for (resource, n) in accelerator_asks(container) {
            let at = per_pod.entry(resource).or_default();
            *at = (*at).max(n);
        }
    }
    PodSet {
        name: text(value, "name").unwrap_or("main").to_owned(),
        count: value.get("count").and_then(Value::as_u64).unwrap_or(1),
        per_pod,
        required_level: value
            .get("topologyRequest")
            .and_then(|t| text(t, "required"))
            .map(str::to_owned),
    }
}

/// A container's accelerator requests (its limits where it requests nothing of a resource: an extended
/// resource's request defaults to its limit).
fn accelerator_asks(container: &Value) -> BTreeMap<String, u64> {
    let resources = container.get("resources").unwrap_or(&Value::Null);
    let mut asks = BTreeMap::new();
    for key in ["limits", "requests"] {
        if let Some(list) = resources.get(key).and_then(Value::as_object) {
            for (resource, quantity) in list {
                if is_accounted_request(resource)
                    && let Some(n) = whole(quantity)
                {
                    asks.insert(resource.clone(), n);
                }
            }
        }
    }
    asks
}
