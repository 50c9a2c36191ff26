//! The default inventory (`cluster` unless `--default-inventory` says otherwise).

use kube::Client;
use kube::api::{Api, PostParams};
use tracing::info;

use crate::crd::{GpuInventory, GpuInventorySpec};
use crate::error::{Error, Result, api_status};

/// Name and labels of the default inventory.
#[derive(Clone, Debug)]
pub(crate) struct DefaultInventory {
    /// Its name.
    pub(crate) name: String,
    /// Its labels (the equality terms of `--inventory-label-selector`, so this operator picks it up).
    pub(crate) labels: Vec<(String, String)>,
}

/// Creates the default inventory when it does not exist. It is created at start-up (and after the CRD was
/// reinstalled) only: a user who deletes it later keeps it deleted.
pub(crate) async fn ensure_default_inventory(
    client: &Client,
    default: &DefaultInventory,
) -> Result<()> {
    let api: Api<GpuInventory> = Api::all(client.clone());
    // Read first: a restart (after a lost Lease, a crash) finds it and writes nothing.
    let existing = api
        .get_opt(&default.name)
        .await
        .map_err(Error::kube(format!(
            "reading the default GpuInventory {}",
            default.name
        )))?;
    if existing.is_some() {
        return Ok(());
    }
    let mut inventory = GpuInventory::new(
        &default.name,
        GpuInventorySpec {
            note: "default inventory created by gpu-inventory-operator (all nodes)".to_owned(),
            node_selector: None,
        },
    );
    if !default.labels.is_empty() {
        inventory.metadata.labels = Some(default.labels.iter().cloned().collect());
    }
    match api.create(&PostParams::default(), &inventory).await {
        Ok(_) => {
            info!(cr = %default.name, "created default GpuInventory");
            Ok(())
        }
        Err(e) if api_status(&e) == Some(409) => Ok(()),
        Err(e) => Err(Error::kube(format!(
            "creating the default GpuInventory {}",
            default.name
        ))(e)),
    }
}
