//! Installing the operator's own CRDs (GpuInventory, GpuNode) and waiting until the API server serves them.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec,
};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, CustomResourceExt};
use serde_json::Value;
use tracing::info;

use crate::FIELD_MANAGER;
use crate::crd::{GpuInventory, GpuNode};
use crate::error::{Error, Result, api_status};

/// The GpuInventory CRD as the operator installs it (see `crds`).
pub fn crd() -> CustomResourceDefinition {
    with_digest(GpuInventory::crd())
}

/// Every CRD as the operator installs them, `crd` prints them and deploy/ holds them: the Rust types' CRDs,
/// each with the digest of its spec. GpuInventory first (the order of [`crate::crd::CRD_NAMES`]).
pub(crate) fn crds() -> Vec<CustomResourceDefinition> {
    vec![crd(), with_digest(gpunode_crd())]
}

/// The GpuNode CRD, without the status subresource its Rust type declares: the operator is the only writer of
/// a GpuNode (a derived object, as Node Feature Discovery's `NodeFeature`), and without the subresource one
/// server-side apply writes the whole object, status included: a new GpuNode is one request, not a create
/// and then a status write (13,000 GPU nodes: 13,000 writes at start-up, not 26,000). `kubectl get gpunode -o
/// yaml` shows the same object, its `status` where it was.
fn gpunode_crd() -> CustomResourceDefinition {
    let mut crd = GpuNode::crd();
    for version in &mut crd.spec.versions {
        version.subresources = None;
    }
    crd
}

fn with_digest(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let digest = spec_digest(&crd.spec);
    crd.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(SPEC_DIGEST_ANNOTATION.to_owned(), digest);
    crd
}

/// SHA-256 of the spec's JSON, its first 8 bytes in hex.
fn spec_digest(spec: &CustomResourceDefinitionSpec) -> String {
    let json = serde_json::to_vec(spec).expect("the CRD spec always serializes");
    let digest = ring::digest::digest(&ring::digest::SHA256, &json);
    digest.as_ref()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The CRDs as YAML documents, exactly what `gpu-inventory-operator crd` prints.
pub fn crd_yaml() -> String {
    crds()
        .iter()
        .map(|crd| serde_saphyr::to_string(crd).expect("a CRD always serializes"))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The annotation on the CRD that names the spec it was made from (SHA-256 of its JSON, first 16
/// hex digits): a newer or older operator's CRD differs, so it is applied even where it only removes fields.
pub const SPEC_DIGEST_ANNOTATION: &str = "homelab.youngju.dev/crd-spec-sha256";

/// Applies each CRD (server-side apply, forced) unless the server already holds it as this version defines
/// it, and waits until it is Established. The check keeps a restart quiet: an operator that loses its Lease
/// exits and is restarted, and each start used to patch the CRD (a no-op for the object, a write request all
/// the same, in every audit log and on every crash loop).
pub async fn install_crd(client: &Client, timeout: Duration) -> Result<()> {
    for desired in crds() {
        install_one(client, desired, timeout).await?;
    }
    Ok(())
}

async fn install_one(
    client: &Client,
    desired: CustomResourceDefinition,
    timeout: Duration,
) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let name = desired.metadata.name.clone().unwrap_or_default();
    let current = api.get_opt(&name).await.map_err(Error::kube(format!(
        "reading CustomResourceDefinition {name} before installing it"
    )))?;
    if current.as_ref().is_some_and(|c| is_up_to_date(c, &desired)) {
        info!(
            crd = %name,
            "CRD already installed as this version defines it; not applied"
        );
    } else {
        api.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&desired),
        )
        .await
        .map_err(Error::kube(format!(
            "installing CustomResourceDefinition {name} (server-side apply)"
        )))?;
        info!(crd = %name, "CRD applied");
    }
    wait_established(&api, &name, timeout).await?;
    info!(crd = %name, "CRD installed and established");
    Ok(())
}

/// Whether a forced apply of `desired` would leave `current` as it is: not being deleted, every field of our
/// spec, labels and annotations (the digest among them) already there with our value. Fields the server
/// defaults (`listKind`, `conversion`) or another field manager added do not count: the apply would not
/// change them either. A hand edit of one of our fields, or a CRD of another version (digest), is applied.
pub(crate) fn is_up_to_date(
    current: &CustomResourceDefinition,
    desired: &CustomResourceDefinition,
) -> bool {
    let contained =
        |ours: Value, theirs: Value, path: &str| not_contained(&ours, &theirs, path).is_none();
    let (ours, theirs) = (&desired.metadata, &current.metadata);
    theirs.deletion_timestamp.is_none()
        && contained(to_json(&desired.spec), to_json(&current.spec), "spec")
        && contained(map_json(&ours.labels), map_json(&theirs.labels), "labels")
        && contained(
            map_json(&ours.annotations),
            map_json(&theirs.annotations),
            "annotations",
        )
}

/// Labels or annotations as a JSON object (none: an empty one).
fn map_json(map: &Option<BTreeMap<String, String>>) -> Value {
    to_json(map.as_ref().unwrap_or(&BTreeMap::new()))
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_default()
}

/// The first place (under `path`) where `ours` is not contained in `theirs`: a field of ours missing or with
/// another value there, or a list of another length. None when every field of ours is in theirs with our
/// value, lists element by element.
pub fn not_contained(ours: &Value, theirs: &Value, path: &str) -> Option<String> {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => a.iter().find_map(|(k, v)| match b.get(k) {
            Some(w) => not_contained(v, w, &format!("{path}.{k}")),
            None => Some(format!("{path}.{k} missing")),
        }),
        (Value::Array(a), Value::Array(b)) if a.len() != b.len() => {
            Some(format!("{path}: {} items, not {}", b.len(), a.len()))
        }
        (Value::Array(a), Value::Array(b)) => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| not_contained(x, y, &format!("{path}[{i}]"))),
        _ if ours == theirs => None,
        _ => Some(format!("{path}: {theirs}, not {ours}")),
    }
}

/// Checks that every CRD exists (for `--skip-crd-install`) and waits until each is Established.
pub(crate) async fn require_crd(client: &Client, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in crate::crd::CRD_NAMES {
        match api.get(name).await {
            Ok(_) => wait_established(&api, name, timeout).await?,
            Err(e) if api_status(&e) == Some(404) => {
                return Err(Error::CrdMissing(name.to_owned()));
            }
            Err(e) => {
                return Err(Error::kube(format!(
                    "reading CustomResourceDefinition {name}"
                ))(e));
            }
        }
    }
    Ok(())
}

async fn wait_established(
    api: &Api<CustomResourceDefinition>,
    name: &str,
    timeout: Duration,
) -> Result<()> {
    let established = await_condition(api.clone(), name, conditions::is_crd_established());
    match tokio::time::timeout(timeout, established).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::Timeout(format!(
            "waiting for CRD {name} to be Established: {e}"
        ))),
        Err(_) => Err(Error::Timeout(format!(
            "CRD {name} not Established after {}s; check `kubectl describe crd {name}`",
            timeout.as_secs()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::*;

    /// The CRD as an API server returns it after our apply: ours plus the server's defaults, another
    /// manager's annotation and the server's bookkeeping.
    fn as_served() -> CustomResourceDefinition {
        let mut served = crd();
        served.spec.conversion = Some(CustomResourceConversion {
            strategy: "None".to_owned(),
            webhook: None,
        });
        served.spec.names.list_kind = Some("GpuInventoryList".to_owned());
        served.metadata.resource_version = Some("42".to_owned());
        served
            .metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert("example.com/owner".to_owned(), "platform team".to_owned());
        served
    }

    #[test]
    fn the_crd_as_served_is_up_to_date() {
        assert!(is_up_to_date(&as_served(), &crd()));
    }

    #[test]
    fn a_hand_edit_another_version_or_a_deletion_is_applied() {
        let desired = crd();
        let mut edited = as_served();
        edited.spec.versions[0].additional_printer_columns = None;
        assert!(
            !is_up_to_date(&edited, &desired),
            "a column removed by hand"
        );
        let mut edited = as_served();
        edited.spec.names.short_names = Some(vec!["gi".to_owned()]);
        assert!(
            !is_up_to_date(&edited, &desired),
            "a short name changed by hand"
        );
        let mut applied_by_plain_kubectl = as_served();
        applied_by_plain_kubectl.metadata.annotations = None;
        assert!(
            !is_up_to_date(&applied_by_plain_kubectl, &desired),
            "no digest: deploy/crd.yaml applied by hand, or an operator before the digest"
        );
        let mut other_version = as_served();
        other_version.metadata.annotations.as_mut().unwrap().insert(
            SPEC_DIGEST_ANNOTATION.to_owned(),
            "0123456789abcdef".to_owned(),
        );
        assert!(
            !is_up_to_date(&other_version, &desired),
            "another version's digest"
        );
        let mut deleting = as_served();
        deleting.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!is_up_to_date(&deleting, &desired), "being deleted");
    }

    #[test]
    fn both_crds_are_printed_each_with_its_digest() {
        let yaml = crd_yaml();
        assert_eq!(
            yaml.matches("kind: CustomResourceDefinition").count(),
            2,
            "{yaml}"
        );
        for (crd, name) in crds().iter().zip(crate::crd::CRD_NAMES) {
            assert_eq!(crd.metadata.name.as_deref(), Some(name));
            assert!(
                crd.metadata
                    .annotations
                    .as_ref()
                    .unwrap()
                    .contains_key(SPEC_DIGEST_ANNOTATION)
            );
        }
        let gpunode = &crds()[1];
        assert_eq!(gpunode.spec.scope, "Cluster");
        // No status subresource: one apply writes a GpuNode whole.
        assert!(gpunode.spec.versions[0].subresources.is_none());
        // The GpuInventory keeps its own: its status is written apart from the spec users write.
        assert!(crds()[0].spec.versions[0].subresources.is_some());
        let columns: Vec<&str> = gpunode.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            columns,
            [
                "VENDOR", "PRODUCT", "GPUS", "FREE", "READY", "ISSUES", "AGE"
            ]
        );
    }

    #[test]
    fn the_digest_follows_the_spec() {
        let ours = crd();
        let digest = &ours.metadata.annotations.as_ref().unwrap()[SPEC_DIGEST_ANNOTATION];
        assert_eq!(digest.len(), 16);
        assert_eq!(digest, &spec_digest(&crd().spec), "stable");
        let mut other = ours.spec.clone();
        other.names.short_names = None;
        assert_ne!(digest, &spec_digest(&other), "another spec, another digest");
    }
}
