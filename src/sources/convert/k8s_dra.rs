//! ResourceSlices, ResourceClaims and DeviceClasses into the core's DRA model ([`DraSlice`], [`DraClaim`],
//! [`DraClass`]). Reading is lenient on purpose (see `inventory::dra::model`): every attribute is optional
//! and an unknown one is ignored. The methods sit on the core's types, but here at the edge, so that
//! `src/inventory/` names no Kubernetes type.

use std::collections::BTreeMap;

use k8s_openapi::api::resource::v1::{
    Counter, Device, DeviceAttribute, DeviceClass, DeviceRequestAllocationResult, ResourceClaim,
    ResourceSlice,
};

use crate::inventory::dra::model::{
    DeviceRef, DraClaim, DraClass, DraDevice, DraSlice, DraTaint,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
};
use crate::inventory::model::quantity_value;
use crate::inventory::vendors::dra_drivers::driver_rules;

impl DraClass {
    /// The class from the API object.
    pub fn from_class(class: &DeviceClass) -> DraClass {
        DraClass {
            name: class.metadata.name.clone().unwrap_or_default(),
            expressions: class
                .spec
                .iter()
                .flat_map(|spec| spec.selectors.iter().flatten())
                .filter_map(|s| s.cel.as_ref().map(|c| c.expression.clone()))
                .collect(),
            extended_resource: class
                .spec
                .as_ref()
                .and_then(|spec| spec.extended_resource_name.clone())
                .filter(|n| !n.is_empty()),
        }
    }
}

impl DraSlice {
    /// The slice's accounting view when its driver is one of `drivers`, else `None`.
    pub fn from_slice(slice: &ResourceSlice, drivers: &[String]) -> Option<DraSlice> {
        let spec = &slice.spec;
        if !drivers.contains(&spec.driver) {
            return None;
        }
        let driver = spec.driver.as_str();
        Some(DraSlice {
            name: slice.metadata.name.clone().unwrap_or_default(),
            driver: driver.to_owned(),
            pool: spec.pool.name.clone(),
            generation: spec.pool.generation,
            slice_count: spec.pool.resource_slice_count,
            node: spec.node_name.clone().filter(|n| !n.is_empty()),
            counters: spec
                .shared_counters
                .iter()
                .flatten()
                .map(|set| (set.name.clone(), counter_values(&set.counters)))
                .collect(),
            devices: spec
                .devices
                .iter()
                .flatten()
                .map(|d| DraDevice::from_device(d, driver))
                .collect(),
        })
    }
}

fn counter_values(counters: &BTreeMap<String, Counter>) -> BTreeMap<String, i128> {
    counters
        .iter()
        .filter_map(|(name, c)| Some((name.clone(), quantity_value(&c.value.0)? as i128)))
        .collect()
}

impl DraDevice {
    /// The device's accounting view; attributes may be written bare (`type`) or qualified by the driver's
    /// domain (`gpu.nvidia.com/type`), which mean the same.
    pub fn from_device(device: &Device, driver: &str) -> DraDevice {
        let attributes = device.attributes.as_ref();
        let text = |name: &str| -> Option<String> {
            let attributes = attributes?;
            let value = attributes
                .get(name)
                .or_else(|| attributes.get(&format!("{driver}/{name}")))?;
            attribute_text(value).filter(|v| !v.trim().is_empty())
        };
        let memory_mib = device
            .capacity
            .as_ref()
            .and_then(|c| {
                c.get("memory")
                    .or_else(|| c.get(&format!("{driver}/memory")))
            })
            .and_then(|c| quantity_value(&c.value.0))
            .filter(|bytes| *bytes > 0.0)
            .map(|bytes| (bytes / 1_048_576.0).round() as u64);
        let rules = driver_rules(driver);
        let first = |names: &[&str]| names.iter().find_map(|n| text(n));
        let kind = text("type").map(|t| t.trim().to_ascii_lowercase());
        // A whole device and its partitions share an id on some drivers (AMD's `deviceID`): the id is the
        // whole device's identity and its partitions' parent, as NVIDIA's `uuid` and `parentUUID` are.
        let shared_id = rules.shared_id_attribute.and_then(text);
        let is = |types: &[&str]| kind.as_deref().is_some_and(|k| types.contains(&k));
        let unhealthy = rules.health_attribute.and_then(|(name, healthy)| {
            let value = text(name)?;
            let value = value.trim();
            (!healthy.iter().any(|h| h.eq_ignore_ascii_case(value)))
                .then(|| format!("{name}={}", value.chars().take(64).collect::<String>()))
        });
        DraDevice {
            name: device.name.clone(),
            product: first(rules.product_attributes)
                .filter(|p| !p.trim().eq_ignore_ascii_case("unknown")),
            profile: first(rules.profile_attributes),
            uuid: text("uuid").or_else(|| shared_id.clone().filter(|_| is(rules.whole_types))),
            parent_uuid: text("parentUUID")
                .or_else(|| shared_id.filter(|_| is(rules.partition_types))),
            kind,
            memory_mib,
            taints: device
                .taints
                .iter()
                .flatten()
                .map(|t| DraTaint {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: t.effect.clone(),
                })
                .collect(),
            consumes: device
                .consumes_counters
                .iter()
                .flatten()
                .map(|c| (c.counter_set.clone(), counter_values(&c.counters)))
                .collect(),
            shareable: device.allow_multiple_allocations == Some(true),
            capacity: device
                .capacity
                .iter()
                .flatten()
                .filter_map(|(name, c)| {
                    let name = name.strip_prefix(&format!("{driver}/")).unwrap_or(name);
                    Some((name.to_owned(), quantity_value(&c.value.0)? as i128))
                })
                .collect(),
            unhealthy,
        }
    }
}

/// A string-valued attribute as text; a version as written; numbers and booleans as text too (an attribute
/// that changes type between releases still reads).
fn attribute_text(value: &DeviceAttribute) -> Option<String> {
    value
        .string
        .clone()
        .or_else(|| value.version.clone())
        .or_else(|| value.int.map(|i| i.to_string()))
        .or_else(|| value.bool.map(|b| b.to_string()))
}

impl DraClaim {
    /// The claim's accounting view.
    pub fn from_claim(claim: &ResourceClaim) -> DraClaim {
        let allocation = claim.status.as_ref().and_then(|s| s.allocation.as_ref());
        let results: Vec<_> = allocation
            .and_then(|a| a.devices.as_ref())
            .and_then(|d| d.results.as_ref())
            .into_iter()
            .flatten()
            .filter(|r| r.admin_access != Some(true))
            .collect();
        let reference = |r: &DeviceRequestAllocationResult| DeviceRef {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        };
        let devices = results.iter().map(|r| reference(r)).collect();
        let mut consumed: BTreeMap<DeviceRef, BTreeMap<String, i128>> = BTreeMap::new();
        for result in &results {
            for (name, q) in result.consumed_capacity.iter().flatten() {
                let Some(amount) = quantity_value(&q.0) else {
                    continue;
                };
                *consumed
                    .entry(reference(result))
                    .or_default()
                    .entry(name.clone())
                    .or_insert(0) += amount as i128;
            }
        }
        let mut classes = BTreeMap::new();
        let requests = claim
            .spec
            .as_ref()
            .and_then(|spec| spec.devices.as_ref())
            .and_then(|d| d.requests.as_ref());
        for request in requests.into_iter().flatten() {
            let wanted = |mode: Option<&str>, count: Option<i64>| match mode {
                Some("All") => 1,
                _ => count.and_then(|c| u64::try_from(c).ok()).unwrap_or(1),
            };
            if let Some(exact) = &request.exactly {
                if exact.admin_access == Some(true) {
                    continue;
                }
                let n = wanted(exact.allocation_mode.as_deref(), exact.count);
                *classes.entry(exact.device_class_name.clone()).or_insert(0) += n;
            }
            for sub in request.first_available.iter().flatten() {
                let n = wanted(sub.allocation_mode.as_deref(), sub.count);
                let entry = classes.entry(sub.device_class_name.clone()).or_insert(0);
                *entry = (*entry).max(n);
            }
        }
        let extended = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION))
            .is_some_and(|v| v == "true");
        let extended_for_pod = extended
            .then(|| {
                claim
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.kind == "Pod" && o.api_version == "v1")
                    .map(|o| o.name.clone())
            })
            .flatten();
        DraClaim {
            namespace: claim.metadata.namespace.clone().unwrap_or_default(),
            name: claim.metadata.name.clone().unwrap_or_default(),
            allocated: allocation.is_some(),
            devices,
            consumed: consumed.into_iter().collect(),
            classes,
            extended_for_pod,
        }
    }
}
