//! Scans a dump of nodes (and pods) offline with the crate's pure scanner — no cluster, no operator — and
//! prints each GPU node's issues and free resources, then the inventory's conditions. This is what `gpu-inventory-operator scan -f` does, in
//! a few lines of library calls.
//!
//! ```sh
//! kubectl get nodes,pods -A -o yaml > nodes.yaml     # pods: what is allocated and who waits
//! cargo run --example scan_dump -- nodes.yaml
//! cargo run --example scan_dump -- tests/fixtures/homelab-nodes.yaml   # the article's home lab
//! cargo run --example scan_dump -- nodes.yaml 'nvidia.com/gpu.present=true'   # with a label selector
//! ```

use gpu_inventory_operator::inventory::allocation::GpuPod;
use gpu_inventory_operator::inventory::cluster_node::ClusterNode;
use gpu_inventory_operator::inventory::conditions::inventory_conditions;
use gpu_inventory_operator::inventory::selector::parse_selector;
use gpu_inventory_operator::inventory::{ScanInput, scan};
use gpu_inventory_operator::sources::dump::parse_dump;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        return Err("usage: scan_dump NODES.yaml [LABEL_SELECTOR]".into());
    };
    let selector = parse_selector(&args.next().unwrap_or_default())?;
    let bytes = std::fs::read(&path).map_err(|e| format!("reading {path}: {e}"))?;
    // Errors name the file, and the line and column where the parser knows them.
    let dump = parse_dump(&bytes, &path)?;
    // The operator's pod source keeps the same stripped view: only pods asking for nvidia.com/* resources.
    let pods: Vec<GpuPod> = dump.pods.iter().filter_map(GpuPod::from_pod).collect();
    // And its node watch keeps each node as the core reads it.
    let nodes: Vec<ClusterNode> = dump.nodes.iter().map(ClusterNode::of).collect();

    let inventory = scan(ScanInput::nodes(&nodes).pods(&pods).selector(&selector));
    println!(
        "{} nodes read, {} GPU nodes ({} Ready), {} GPUs",
        nodes.len(),
        inventory.total_gpu_nodes,
        inventory.ready_gpu_nodes,
        inventory.total_gpus
    );
    for node in &inventory.nodes {
        let product = node.product.as_deref().unwrap_or("<unlabeled>");
        println!(
            "{}: {} x {product}, free {:?}",
            node.name, node.count, node.free
        );
        for issue in &node.issues {
            println!("    {}: {}", issue.reason, issue.message);
        }
    }
    // The same conditions the operator writes to the GpuInventory status (times are the operator's job).
    for condition in inventory_conditions(&inventory) {
        let status = if condition.status { "True" } else { "False" };
        println!(
            "{}={status} ({}): {}",
            condition.type_, condition.reason, condition.message
        );
    }
    Ok(())
}
