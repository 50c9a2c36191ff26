//! The DeviceTaintRule source: the newest version of `devicetaintrules` the server serves, watched once and
//! kept stripped ([`DraTaintRule`]).
//!
//! DeviceTaintRules are `resource.k8s.io/v1` from Kubernetes 1.37, `v1beta2` in 1.36 and `v1alpha3` from
//! 1.33, the older two only where those API versions are enabled. The versions share the fields read here,
//! so each is watched as a [`DynamicObject`] and its `spec` decoded as `v1`'s. A server that serves none is
//! said once (info), the store stays empty and synced, and discovery is asked again every
//! 30 s (`sources::optional_api`): an upgrade or a `--runtime-config` change starts the watch without a restart.

pub(crate) mod reader;

use k8s_openapi::api::resource::v1::DeviceTaintRuleSpec;
use kube::api::{ApiResource, DynamicObject};
use kube::{Client, ResourceExt};
use tracing::warn;

use super::changes::ChangeSignal;
use super::optional_api::OptionalApi;
use super::stripped::StrippedStore;
use crate::inventory::dra::DraTaintRule;
use crate::runtime::health::Health;

/// The versions of `resource.k8s.io` that serve DeviceTaintRules, newest first.
pub(crate) const TAINT_RULE_VERSIONS: [&str; 3] = ["v1", "v1beta2", "v1alpha3"];

/// The stripped DeviceTaintRules.
pub(crate) type TaintRuleStore = StrippedStore<DraTaintRule>;

/// The rule's stripped form; a rule whose spec does not decode is left out, with a warning naming it.
pub(crate) fn strip_rule(object: &DynamicObject) -> Option<DraTaintRule> {
    let name = object.name_any();
    let spec = object.data.get("spec").cloned().unwrap_or_default();
    match serde_json::from_value::<DeviceTaintRuleSpec>(spec) {
        Ok(spec) => Some(DraTaintRule::from_spec(&name, &spec)),
        Err(error) => {
            warn!(
                rule = %name,
                %error,
                "DeviceTaintRule {name}: spec does not read as a DeviceTaintRule ({error}); its taint is not \
                 applied to any device here (check it with kubectl get devicetaintrule {name} -o yaml)"
            );
            None
        }
    }
}

/// DeviceTaintRules, in the newest version served.
pub(crate) const TAINT_RULES: OptionalApi = OptionalApi {
    group: "resource.k8s.io",
    versions: &TAINT_RULE_VERSIONS,
    kind: "DeviceTaintRule",
    plural: "devicetaintrules",
    what: "DeviceTaintRules",
    without: "only taints written in ResourceSlices are seen",
    purpose: "their NoSchedule/NoExecute taints make devices unavailable",
    quiet_absence: false,
};

/// The newest version serving DeviceTaintRules; `None` when none is served or discovery failed.
pub async fn taint_rules_served(client: &Client) -> Option<&'static str> {
    TAINT_RULES.served_version(client).await.ok().flatten()
}

/// The API resource of DeviceTaintRules at `version`.
pub fn taint_rule_resource(version: &str) -> ApiResource {
    TAINT_RULES.resource(version)
}

/// Starts the DeviceTaintRule source: its store, and the task that feeds it (run it until shutdown).
pub(crate) fn watch_taint_rules(
    client: Client,
    health: Health,
    changes: ChangeSignal,
) -> (TaintRuleStore, impl Future<Output = ()> + Send + 'static) {
    TAINT_RULES.watch(client, health, changes, strip_rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_of_any_served_version_strips_alike_and_a_broken_one_is_left_out() {
        for version in TAINT_RULE_VERSIONS {
            let rule: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": format!("resource.k8s.io/{version}"), "kind": "DeviceTaintRule",
                "metadata": { "name": "drain-gpu-3" },
                "spec": {
                    "deviceSelector": { "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-3" },
                    "taint": { "key": "example.com/maintenance", "value": "ticket-42", "effect": "NoSchedule" }
                }
            }))
            .unwrap();
            let stripped = strip_rule(&rule).expect("a rule");
            assert_eq!(stripped.name, "drain-gpu-3");
            assert_eq!(
                (
                    stripped.taint.key.as_str(),
                    stripped.taint.value.as_str(),
                    stripped.taint.effect.as_str()
                ),
                ("example.com/maintenance", "ticket-42", "NoSchedule")
            );
            assert!(stripped.selects("gpu.nvidia.com", "node-a", "gpu-3"));
        }
        let broken: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": { "name": "broken" },
            "spec": { "deviceSelector": { "driver": 7 } }
        }))
        .unwrap();
        assert_eq!(strip_rule(&broken), None);
    }
}
