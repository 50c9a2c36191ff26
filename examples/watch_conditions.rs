//! Watches the GpuInventories and prints a line whenever one's `Ready` or `Degraded` condition changes — a
//! terminal-sized alert without a dashboard. Uses kube-runtime's watcher with the crate's API types.
//!
//! ```sh
//! cargo run --example watch_conditions             # until Ctrl-C
//! cargo run --example watch_conditions -- cluster  # one inventory only
//! ```
//!
//! ```text
//! 12:00:01 cluster Ready=False (GpuNodesNotReady): 3 of 4 GPU nodes Ready; not ready: gpu-2
//! 12:00:31 cluster Ready=True (AllGpuNodesReady): all 4 GPU nodes are Ready
//! ```

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};
use gpu_inventory_operator::crd::GpuInventory;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let only = std::env::args().nth(1);
    let client = Client::try_default().await?;
    let inventories: Api<GpuInventory> = Api::all(client);
    let mut config = watcher::Config::default();
    if let Some(name) = &only {
        config = config.fields(&format!("metadata.name={name}"));
    }
    // The last (status, reason, message) printed per inventory and condition type.
    let mut seen: HashMap<(String, String), (String, String, String)> = HashMap::new();
    let mut events = watcher(inventories, config)
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(inventory) = events.try_next().await? {
        let name = inventory.name_any();
        let conditions = inventory.status.iter().flat_map(|s| &s.conditions);
        for condition in conditions {
            let key = (name.clone(), condition.type_.clone());
            let now = (
                condition.status.clone(),
                condition.reason.clone(),
                condition.message.clone(),
            );
            if seen.get(&key) == Some(&now) {
                continue; // another field changed; this condition did not
            }
            println!(
                "{} {name} {}={} ({}): {}",
                jiff::Zoned::now().strftime("%H:%M:%S"),
                condition.type_,
                now.0,
                now.1,
                now.2
            );
            seen.insert(key, now);
        }
    }
    Ok(())
}
