//! A DeviceTaintRule's spec (of any served version, decoded as `v1`'s) into the core's [`DraTaintRule`].
//! The method sits on the core's type, but here at the edge, so that `src/inventory/` names no Kubernetes
//! type.

use k8s_openapi::api::resource::v1::DeviceTaintRuleSpec;

use crate::inventory::dra::DraTaint;
use crate::inventory::dra::DraTaintRule;
use crate::inventory::dra::taint_rules::TaintSelector;

impl DraTaintRule {
    /// The rule named `name` with this spec (the spec of any served version, decoded as `v1`'s).
    pub fn from_spec(name: &str, spec: &DeviceTaintRuleSpec) -> DraTaintRule {
        let nonempty = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        DraTaintRule {
            name: name.to_owned(),
            selector: spec.device_selector.as_ref().map(|s| TaintSelector {
                driver: nonempty(&s.driver),
                pool: nonempty(&s.pool),
                device: nonempty(&s.device),
            }),
            taint: DraTaint {
                key: spec.taint.key.clone(),
                value: spec.taint.value.clone().unwrap_or_default(),
                effect: spec.taint.effect.clone(),
            },
        }
    }
}
