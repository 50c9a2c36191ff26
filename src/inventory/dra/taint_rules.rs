//! DeviceTaintRules as the DRA accounting reads them: which devices a rule selects, and the taint it puts
//! on them. The scheduler applies a rule's taint as if the driver had written it in the slice, so a
//! `NoSchedule`/`NoExecute` rule makes its devices unavailable (KEP-5055; KEP-5677 counts them so).
//!
//! The API is `resource.k8s.io/v1` from Kubernetes 1.37, `v1beta2` in 1.36 and `v1alpha3` from 1.33; the
//! fields read here have the same shape in all three. (`v1alpha3` of 1.33-1.34 also had `deviceClassName`
//! and CEL `selectors`, dropped in 1.35: a rule that used them is read by its driver, pool and device
//! alone, so it may select more devices than the server does.) The API object is read in
//! `sources::convert::k8s_taint_rule`.

use super::model::DraTaint;

/// Which devices a rule selects: every field that is set must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaintSelector {
    /// `driver`: the slice's driver.
    pub driver: Option<String>,
    /// `pool`: the pool's name.
    pub pool: Option<String>,
    /// `device`: the device's name in its pool.
    pub device: Option<String>,
}

/// A DeviceTaintRule, stripped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraTaintRule {
    /// `metadata.name`.
    pub name: String,
    /// `spec.deviceSelector`; `None` (no selector) selects no device.
    pub selector: Option<TaintSelector>,
    /// `spec.taint`.
    pub taint: DraTaint,
}

impl DraTaintRule {
    /// Whether the rule selects device `device` of `driver`'s pool `pool`.
    pub fn selects(&self, driver: &str, pool: &str, device: &str) -> bool {
        let Some(selector) = &self.selector else {
            return false;
        };
        let matches =
            |wanted: &Option<String>, actual: &str| wanted.as_deref().is_none_or(|w| w == actual);
        matches(&selector.driver, driver)
            && matches(&selector.pool, pool)
            && matches(&selector.device, device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::resource::v1::DeviceTaintRuleSpec;

    fn rule(selector: serde_json::Value) -> DraTaintRule {
        let spec: DeviceTaintRuleSpec = serde_json::from_value(serde_json::json!({
            "deviceSelector": selector,
            "taint": { "key": "example.com/maintenance", "effect": "NoSchedule" }
        }))
        .unwrap();
        DraTaintRule::from_spec("drain", &spec)
    }

    #[test]
    fn every_field_of_the_selector_that_is_set_must_match() {
        let one = rule(
            serde_json::json!({ "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-1" }),
        );
        assert!(one.selects("gpu.nvidia.com", "node-a", "gpu-1"));
        assert!(!one.selects("gpu.nvidia.com", "node-a", "gpu-0"));
        assert!(!one.selects("gpu.nvidia.com", "node-b", "gpu-1"));
        assert!(!one.selects("gpu.amd.com", "node-a", "gpu-1"));
        let pool = rule(serde_json::json!({ "pool": "node-a" }));
        assert!(pool.selects("gpu.nvidia.com", "node-a", "gpu-7"));
        assert!(
            pool.selects("gpu.amd.com", "node-a", "gpu-0"),
            "a pool name alone spans drivers"
        );
        assert!(!pool.selects("gpu.nvidia.com", "node-b", "gpu-7"));
    }

    #[test]
    fn an_empty_selector_selects_every_device_and_no_selector_none() {
        assert!(rule(serde_json::json!({})).selects("gpu.nvidia.com", "p", "d"));
        let spec: DeviceTaintRuleSpec = serde_json::from_value(serde_json::json!({
            "taint": { "key": "k", "effect": "NoExecute" }
        }))
        .unwrap();
        assert!(!DraTaintRule::from_spec("none", &spec).selects("gpu.nvidia.com", "p", "d"));
    }
}
