//! Keeps the CRDs in place while the operator runs: a deleted CRD is reinstalled (self-install on) or reported
//! clearly (`--skip-crd-install`). The controllers' own watches recover by themselves once it is back.

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, reflector, watcher};
use std::time::Duration;
use tracing::{error, info, warn};

use super::crd::install_crd;
use super::default_inventory::{DefaultInventory, ensure_default_inventory};
use crate::crd::CRD_NAMES;
use crate::runtime::backoff;
use crate::runtime::health::Health;
use crate::runtime::shutdown::Shutdown;

/// What to do when the CRD disappears.
#[derive(Clone, Debug)]
pub(crate) struct CrdPolicy {
    /// Reinstall it (else only report).
    pub(crate) self_install: bool,
    /// Recreate the default inventory after a reinstall (deleting the CRD deleted it too).
    pub(crate) default_inventory: Option<DefaultInventory>,
    /// How long to wait for the reinstalled CRD to be Established.
    pub(crate) timeout: Duration,
}

/// Watches every CRD of ours until shutdown.
pub(crate) async fn watch_crd(
    client: Client,
    policy: CrdPolicy,
    health: Health,
    shutdown: Shutdown,
) {
    let watches = CRD_NAMES.map(|name| {
        watch_one(
            client.clone(),
            name,
            policy.clone(),
            health.clone(),
            shutdown.clone(),
        )
    });
    futures::future::join_all(watches).await;
}

async fn watch_one(
    client: Client,
    name: &'static str,
    policy: CrdPolicy,
    health: Health,
    shutdown: Shutdown,
) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let (store, writer) = reflector::store();
    let mut events = watcher(api, config)
        .backoff(backoff::WATCH.backoff())
        .reflect(writer)
        .boxed();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            _ = shutdown.clone().wait() => return,
        };
        match event {
            None => return,
            Some(Err(e)) => health.watch_failed("customresourcedefinitions", &e),
            // After a deletion, or a relist that came back without it, the CRD is gone.
            Some(Ok(watcher::Event::Delete(_) | watcher::Event::InitDone)) if store.is_empty() => {
                crd_missing(&client, name, &policy, &shutdown).await
            }
            Some(Ok(_)) => {}
        }
    }
}

async fn crd_missing(client: &Client, name: &str, policy: &CrdPolicy, shutdown: &Shutdown) {
    if !policy.self_install {
        error!(
            crd = name,
            "the CustomResourceDefinition is gone and --skip-crd-install is set: its objects cannot be \
             served; reinstall it with `gpu-inventory-operator crd | kubectl apply -f -`"
        );
        return;
    }
    warn!(
        crd = name,
        "the CustomResourceDefinition was deleted; reinstalling it"
    );
    let mut retry = backoff::CRD_REINSTALL.backoff();
    while let Err(e) = install_crd(client, policy.timeout).await {
        let delay = retry.next_delay();
        error!(error = %e, "reinstalling the CustomResourceDefinition failed; retrying in {}s", delay.as_secs());
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = shutdown.clone().wait() => return,
        }
    }
    info!(crd = name, "CustomResourceDefinition reinstalled");
    if let Some(default) = &policy.default_inventory
        && let Err(e) = ensure_default_inventory(client, default).await
    {
        warn!(error = %e, "recreating the default GpuInventory after the reinstall failed");
    }
}
