//! Reads every GpuInventory with kube and prints, per inventory, its GPU nodes and GPUs by product, and
//! what is wrong, using the crate's API types. It only reads: run it against any cluster the operator runs on.
//!
//! ```sh
//! cargo run --example list_inventories                        # $KUBECONFIG or ~/.kube/config
//! cargo run --example list_inventories -- -l team=ml          # only inventories with this label
//! ```
//!
//! Output, one block per inventory:
//!
//! ```text
//! cluster: 4 GPU nodes (0 Ready), 1 GPU; Degraded: NotReady: 4 nodes
//!   NVIDIA-GeForce-RTX-4090   1 node    1 GPU
//!   <unlabeled>               3 nodes   0 GPUs
//! ```

use std::collections::BTreeMap;

use gpu_inventory_operator::crd::{GpuInventory, GpuInventoryStatus};
use kube::api::{Api, ListParams};
use kube::{Client, ResourceExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut params = ListParams::default();
    match args.as_slice() {
        [] => {}
        [flag, selector] if flag == "-l" => params = params.labels(selector),
        _ => return Err("usage: list_inventories [-l LABEL_SELECTOR]".into()),
    }
    let client = Client::try_default().await?;
    let inventories: Api<GpuInventory> = Api::all(client);
    let list = inventories.list(&params).await.map_err(|e| {
        format!("listing GpuInventories: {e} (is the operator's CRD installed? `gpu-inventory-operator crd`)")
    })?;
    if list.items.is_empty() {
        println!("no GpuInventory found");
    }
    for inventory in &list.items {
        match &inventory.status {
            Some(status) => print!("{}", describe(&inventory.name_any(), status)),
            None => println!(
                "{}: no status yet (is the operator running?)",
                inventory.name_any()
            ),
        }
    }
    Ok(())
}

/// One block of text for an inventory.
fn describe(name: &str, status: &GpuInventoryStatus) -> String {
    let plural = |n: u64, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let degraded = status
        .conditions
        .iter()
        .find(|c| c.type_ == "Degraded" && c.status == "True")
        .map(|c| format!("; Degraded: {}", c.message))
        .unwrap_or_default();
    let mut out = format!(
        "{name}: {} ({} Ready), {}{degraded}\n",
        plural(status.total_gpu_nodes.into(), "GPU node"),
        status.ready_gpu_nodes,
        plural(status.total_gpus, "GPU"),
    );
    // (nodes, GPUs) per product; nodes without a product label are grouped as <unlabeled>.
    let mut products: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for node in &status.nodes {
        let product = node.product.as_deref().unwrap_or("<unlabeled>");
        let entry = products.entry(product).or_default();
        entry.0 += 1;
        entry.1 += node.count;
    }
    for (product, (nodes, gpus)) in products {
        out += &format!(
            "  {product:<40} {:<9} {}\n",
            plural(nodes, "node"),
            plural(gpus, "GPU")
        );
    }
    if let Some(omitted) = status.omitted_nodes {
        out +=
            &format!("  ({omitted} node entries omitted from the status: it would be too large)\n");
    }
    out
}
