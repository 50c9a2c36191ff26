//! `gpu-inventory-operator fleet` (and `kubectl gpu-inventory fleet`): the fleet as a multi-cluster hub sees
//! it, from the `ClusterProfile` objects (`multicluster.x-k8s.io/v1alpha1`, KEP-4322) whose
//! `status.properties` a cluster manager fills from each member's ClusterProperties: no credentials to the
//! members. Exit code: 0 every profile's summary read (profiles without one are listed), 2 a summary that
//! cannot be read or the hub itself.

use std::process::ExitCode;

use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use super::across::TotalsJson;
use crate::cmd::cli::GlobalArgs;
use crate::cmd::fleet_args::FleetHubArgs;
use crate::cmd::output::stdout::emit;
use crate::cmd::output::{formatted, object_name};
use crate::cmd::render::{ClusterRow, fleet};
use crate::cmd::scan::{EXIT_ERROR, failed};
use crate::crd::CLUSTER_PROFILE_API;
use crate::error::Result;
use crate::inventory::fleet::add_up;
use crate::inventory::model::ClusterSummary;
use crate::publish::content::wire::read_summary_value;
use crate::runtime::client::connect;
use crate::sources::cluster_profiles::{ClusterProfileList, ClusterProfiles};
use crate::sources::{Cluster, OneShot, Readers, Sources, SourcesConfig};

/// One ClusterProfile as `fleet` reads it.
struct Profile {
    /// `namespace/name`.
    name: String,
    /// The property's `lastObservedTime`.
    observed: Option<String>,
    /// Its summary; `Err` when the value cannot be read; `None` when the profile carries no such property.
    summary: Option<std::result::Result<(ClusterSummary, Value), String>>,
}

/// Reads the hub's ClusterProfiles and prints the fleet.
pub async fn run(global: &GlobalArgs, args: &FleetHubArgs) -> ExitCode {
    match profiles(global, args).await {
        Ok(profiles) => {
            let unreadable = profiles.iter().any(|p| matches!(p.summary, Some(Err(_))));
            let code = if unreadable {
                ExitCode::from(EXIT_ERROR)
            } else {
                ExitCode::SUCCESS
            };
            match shown(&profiles, args) {
                Ok(text) => emit(&text, code),
                Err(e) => failed(&e),
            }
        }
        Err(e) => failed(&e),
    }
}

/// The hub's ClusterProfiles, read once through their reader, each with its summary, by name.
async fn profiles(global: &GlobalArgs, args: &FleetHubArgs) -> Result<Vec<Profile>> {
    let connection = connect(&global.client_config()).await?;
    let mut readers = Readers::none(&SourcesConfig::default());
    readers.register(ClusterProfiles::new(
        CLUSTER_PROFILE_API,
        global.listed_namespace().map(str::to_owned),
    ));
    let cluster = Cluster {
        client: connection.client,
        url: connection.cluster_url,
        page: 0,
    };
    let snapshot = Sources::list_once(&readers, &OneShot::Cluster(cluster))
        .await?
        .objects;
    let listed = snapshot.slots.get::<ClusterProfileList>();
    let mut profiles: Vec<Profile> = listed
        .into_iter()
        .flat_map(|list| &list.0)
        .map(|p| profile(p, &args.property))
        .collect();
    profiles.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(profiles)
}

/// The profile's summary, from the property named `property` in its `status.properties`.
fn profile(object: &DynamicObject, property: &str) -> Profile {
    let name = format!(
        "{}/{}",
        object.metadata.namespace.as_deref().unwrap_or_default(),
        object.metadata.name.as_deref().unwrap_or_default()
    );
    let found = object.data["status"]["properties"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"].as_str() == Some(property));
    let Some(found) = found else {
        return Profile {
            name,
            observed: None,
            summary: None,
        };
    };
    let summary = match found["value"].as_str() {
        Some(text) => read_summary_value(text).and_then(|summary| {
            let json = serde_json::from_str(text).map_err(|e| e.to_string())?;
            Ok((summary, json))
        }),
        None => Err("the property has no string value".to_owned()),
    }
    .map_err(|why| format!("property {property}: {why}"));
    Profile {
        name,
        observed: found["lastObservedTime"].as_str().map(str::to_owned),
        summary: Some(summary),
    }
}

/// The fleet as `-o` asks: the clusters' table and totals, or the JSON document (json, yaml, jsonpath);
/// `name` lists the ClusterProfiles.
fn shown(profiles: &[Profile], args: &FleetHubArgs) -> Result<String> {
    let missing = format!(
        "no {} property (no gpu-inventory-operator there, or the manager does not copy ClusterProperties)",
        args.property
    );
    let table = |_wide: bool| {
        if profiles.is_empty() {
            return if args.no_headers {
                String::new()
            } else {
                "no ClusterProfiles on this hub\n".to_owned()
            };
        }
        let rows: Vec<ClusterRow<'_>> = profiles
            .iter()
            .map(|p| ClusterRow {
                name: &p.name,
                summary: match &p.summary {
                    Some(Ok((summary, _))) => Ok(summary),
                    Some(Err(why)) => Err(why.as_str()),
                    None => Err(missing.as_str()),
                },
            })
            .collect();
        fleet(&rows, !args.no_headers)
    };
    let read: Vec<(&str, &ClusterSummary)> = profiles
        .iter()
        .filter_map(|p| Some((p.name.as_str(), &p.summary.as_ref()?.as_ref().ok()?.0)))
        .collect();
    let json = HubJson {
        clusters: profiles
            .iter()
            .filter_map(|p| {
                Some(ClusterJson {
                    cluster: &p.name,
                    observed: p.observed.as_deref(),
                    summary: &p.summary.as_ref()?.as_ref().ok()?.1,
                })
            })
            .collect(),
        errors: profiles
            .iter()
            .filter_map(|p| {
                Some(ErrorJson {
                    cluster: &p.name,
                    message: p.summary.as_ref()?.as_ref().err()?,
                })
            })
            .collect(),
        without_summary: profiles
            .iter()
            .filter(|p| p.summary.is_none())
            .map(|p| p.name.as_str())
            .collect(),
        totals: add_up(read).into(),
    };
    // `namespace/name` in the table; kubectl's `-o name` leaves the namespace out.
    let names = || {
        profiles
            .iter()
            .map(|p| {
                let name = p.name.rsplit('/').next().unwrap_or(&p.name);
                object_name("clusterprofile", "multicluster.x-k8s.io", name)
            })
            .collect()
    };
    formatted(&args.output, &json, names, table)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct HubJson<'a> {
    clusters: Vec<ClusterJson<'a>>,
    errors: Vec<ErrorJson<'a>>,
    without_summary: Vec<&'a str>,
    totals: TotalsJson,
}

#[derive(Serialize)]
struct ClusterJson<'a> {
    cluster: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    observed: Option<&'a str>,
    summary: &'a Value,
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    cluster: &'a str,
    message: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::DEFAULT_CLUSTER_PROPERTY;
    use serde_json::json;

    fn object(properties: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1",
            "kind": "ClusterProfile",
            "metadata": {"name": "east", "namespace": "fleet"},
            "spec": {"displayName": "east", "clusterManager": {"name": "ocm"}},
            "status": {"properties": properties}
        }))
        .unwrap()
    }

    #[test]
    fn a_profile_reads_its_summary_and_says_what_is_wrong_with_a_bad_one() {
        let value = r#"{"v":1,"nodes":2,"gpus":16,"free":8,"unhealthy":0}"#;
        let good = profile(
            &object(json!([
                {"name": "clusterset.k8s.io", "value": "east"},
                {"name": DEFAULT_CLUSTER_PROPERTY, "value": value, "lastObservedTime": "2026-12-05T05:00:00Z"}
            ])),
            DEFAULT_CLUSTER_PROPERTY,
        );
        assert_eq!(good.name, "fleet/east");
        assert_eq!(good.observed.as_deref(), Some("2026-12-05T05:00:00Z"));
        assert_eq!(good.summary.unwrap().unwrap().0.gpus, 16);
        let bad = profile(
            &object(json!([{"name": DEFAULT_CLUSTER_PROPERTY, "value": "16 GPUs"}])),
            DEFAULT_CLUSTER_PROPERTY,
        );
        let why = bad.summary.unwrap().unwrap_err();
        assert!(
            why.starts_with("property gpus.homelab.youngju.dev: the value is not"),
            "{why}"
        );
        let none = profile(&object(json!([])), DEFAULT_CLUSTER_PROPERTY);
        assert!(none.summary.is_none());
        let no_status = profile(
            &serde_json::from_value(json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1",
                "kind": "ClusterProfile", "metadata": {"name": "new", "namespace": "fleet"}}))
            .unwrap(),
            DEFAULT_CLUSTER_PROPERTY,
        );
        assert!(
            no_status.summary.is_none(),
            "a profile its manager has not filled yet"
        );
    }
}
