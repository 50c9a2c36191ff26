//! Installing the operator's own CRD and waiting until the API server serves it.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Client, CustomResourceExt};
use tracing::info;

use crate::FIELD_MANAGER;
use crate::crd::{CRD_NAME, GpuInventory};
use crate::error::{Error, Result, api_status};

/// The CRD as the operator installs it.
pub fn crd() -> CustomResourceDefinition {
    GpuInventory::crd()
}

/// The CRD as YAML, exactly what `gpu-inventory-operator crd` prints.
pub fn crd_yaml() -> String {
    serde_saphyr::to_string(&crd()).expect("the CRD always serializes")
}

/// Applies the CRD (server-side apply, forced) and waits until it is Established.
pub async fn install_crd(client: &Client, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    api.patch(
        CRD_NAME,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(crd()),
    )
    .await
    .map_err(Error::kube(format!(
        "installing CustomResourceDefinition {CRD_NAME} (server-side apply)"
    )))?;
    wait_established(&api, timeout).await?;
    info!(crd = CRD_NAME, "CRD installed and established");
    Ok(())
}

/// Checks that the CRD exists (for `--skip-crd-install`) and waits until it is Established.
pub async fn require_crd(client: &Client, timeout: Duration) -> Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    match api.get(CRD_NAME).await {
        Ok(_) => wait_established(&api, timeout).await,
        Err(e) if api_status(&e) == Some(404) => Err(Error::CrdMissing(CRD_NAME.to_owned())),
        Err(e) => Err(Error::kube(format!(
            "reading CustomResourceDefinition {CRD_NAME}"
        ))(e)),
    }
}

async fn wait_established(api: &Api<CustomResourceDefinition>, timeout: Duration) -> Result<()> {
    let established = await_condition(api.clone(), CRD_NAME, conditions::is_crd_established());
    match tokio::time::timeout(timeout, established).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(Error::Timeout(format!(
            "waiting for CRD {CRD_NAME} to be Established: {e}"
        ))),
        Err(_) => Err(Error::Timeout(format!(
            "CRD {CRD_NAME} not Established after {}s; check `kubectl describe crd {CRD_NAME}`",
            timeout.as_secs()
        ))),
    }
}
