//! The GpuNodes (cluster-scoped, one per GPU node, named after it, the node's entry flattened into
//! `status`), read as plain JSON: a watch on all of them, removing them between programs, and the detail
//! check of the DRA scenario (one GpuNode per node, each with all its devices).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams};
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use testkit::lib_api::GpuNode;
use tokio::sync::watch;

use crate::Res;
use crate::object_watch::ErrorLog;

pub fn api(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &ApiResource::erase::<GpuNode>(&()))
}

/// Watches every GpuNode, calling `on` with its name and status (None: deleted) and when it arrived.
pub fn spawn_watch(
    client: &Client,
    mut on: impl FnMut(String, Option<&Value>, Instant) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let api = api(client);
    tokio::spawn(async move {
        let mut events = watcher(api, watcher::Config::default()).boxed();
        let mut errors = ErrorLog::default();
        while let Some(event) = events.next().await {
            let now = Instant::now();
            match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    on(o.name_any(), Some(&o.data["status"]), now)
                }
                Ok(watcher::Event::Delete(o)) => on(o.name_any(), None, now),
                Ok(_) => {}
                Err(e) => {
                    errors.log("gpunode", &e);
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    })
}

/// An observation that keeps one view per GpuNode (what its status shows of its node) and settles the change
/// in flight after each event.
pub trait GpuNodeViews {
    /// What one GpuNode shows.
    type View;
    /// The views by node name; None when the program writes no GpuNodes (events are then ignored).
    fn views(&mut self) -> Option<&mut HashMap<String, Self::View>>;
    /// Marks what the outputs show of the change in flight, at `now`.
    fn settle(&mut self, now: Instant);
}

/// Watches every GpuNode into `obs`'s views (`read` makes a view of a status), bumping `tx` after each event.
pub fn spawn_views<O>(
    client: &Client,
    obs: Arc<Mutex<O>>,
    tx: Arc<watch::Sender<u64>>,
    read: fn(&Value) -> O::View,
) -> tokio::task::JoinHandle<()>
where
    O: GpuNodeViews + Send + 'static,
{
    spawn_watch(client, move |name, status, now| {
        let mut obs = obs.lock().unwrap();
        let Some(views) = obs.views() else {
            return;
        };
        match status {
            Some(status) => views.insert(name, read(status)),
            None => views.remove(&name),
        };
        obs.settle(now);
        drop(obs);
        tx.send_modify(|n| *n += 1);
    })
}

/// Deletes every GpuNode and waits (up to 5 minutes: the scale scenario's 13,000 go one by one) until none
/// is left, so the next program starts without what the previous one wrote.
pub async fn delete_all(client: &Client) -> Res<()> {
    let api = api(client);
    api.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let left = api.list_metadata(&ListParams::default().limit(1)).await?;
        if left.items.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("GpuNodes still there 5 minutes after deleting them all".into());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Every node's detail readable: how many GpuNodes there are of `want_nodes` (node names), and how many of
/// them list `devices_per_node` devices in `status.devices`; the first few that do not.
pub async fn detail_check(
    client: &Client,
    want_nodes: &[String],
    devices_per_node: usize,
) -> Res<Value> {
    let listed = api(client).list(&ListParams::default()).await?;
    let by_name: std::collections::HashMap<String, &DynamicObject> =
        listed.items.iter().map(|o| (o.name_any(), o)).collect();
    let (mut present, mut complete, mut problems) = (0usize, 0usize, Vec::new());
    for name in want_nodes {
        let Some(o) = by_name.get(name) else {
            if problems.len() < 5 {
                problems.push(format!("{name}: no GpuNode"));
            }
            continue;
        };
        present += 1;
        let devices = o.data["status"]["devices"].as_array().map_or(0, Vec::len);
        if devices == devices_per_node {
            complete += 1;
        } else if problems.len() < 5 {
            problems.push(format!(
                "{name}: {devices} devices, want {devices_per_node}"
            ));
        }
    }
    Ok(json!({
        "gpunodes": listed.items.len(), "nodes_with_devices": want_nodes.len(),
        "gpunodes_of_those_nodes": present, "with_all_devices": complete,
        "devices_per_node": devices_per_node,
        "all_readable": present == want_nodes.len() && complete == want_nodes.len(),
        "problems": problems,
    }))
}
