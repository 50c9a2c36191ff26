//! `scan -f` over the third round's real objects (tests/fixtures/reading/): what a user who dumps them reads.
//! No cluster needed.

use std::process::Command;

use serde_json::Value;

fn scan_json(fixture: &str) -> (Value, String) {
    let path = format!(
        "{}/tests/fixtures/reading/{fixture}",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-inventory-operator"))
        .args(["scan", "-f", &path, "-o", "json"])
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("scan -f {fixture}: {e}; stderr: {stderr}"));
    (json, stderr)
}

fn node<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in {status}"))
}

#[test]
fn models_by_pci_id_and_instance_type_are_read_from_a_dump() {
    let (status, _) = scan_json("ids-and-types-nodes.yaml");
    let intel = node(&status, "stibbons-hex-lexicon");
    assert_eq!(intel["product"], "Intel UHD Graphics G4");
    assert_eq!(intel["vendor"], "intel");
    let g5 = node(&status, "karpenter-pr-1476-ip-10-32-136-67");
    assert_eq!(
        (&g5["product"], &g5["count"]),
        (&Value::from("NVIDIA-A10G"), &Value::from(1))
    );
    assert_eq!(
        g5["derivedFrom"]["product"],
        "node.kubernetes.io/instance-type=g5.xlarge (the provider's published table)"
    );
    let tpu = node(&status, "kiwonl-gke-aiml-gk3-tpu-d0b4136a-w2j9");
    assert_eq!(tpu["count"], 4);
}

#[test]
fn a_dump_of_resource_slices_alone_lists_the_nodes_they_name() {
    // VMware VKS conformance evidence: 3 vGPU VMs, a GRID A100-8C and a ComputeDomain slice each, no Node.
    let (status, stderr) = scan_json("dra-slices-alone.yaml");
    let nodes = status["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3, "{status}\n{stderr}");
    for entry in nodes {
        let notes = entry["notes"].to_string();
        assert!(
            notes.contains("the Node object was not in the input"),
            "{notes}"
        );
        // One vGPU each; IMEX channels and daemons are no GPUs.
        assert_eq!(entry["count"], 1, "{entry}");
    }
}

#[test]
fn dra_slices_read_as_their_drivers_publish_them() {
    let (status, stderr) = scan_json("dra-slices.yaml");
    assert!(
        !stderr.contains("not one this scan reads"),
        "v1alpha3 is read: {stderr}"
    );
    // A vGPU is one GPU of its own profile and memory, not the 80 GB A100 under it.
    let vgpu = node(&status, "test-ai-0-node-pool-40c-kn48j-7n6h9-gvhpn");
    assert_eq!(
        (&vgpu["product"], &vgpu["count"], &vgpu["memoryMiB"]),
        (
            &Value::from("GRID A100-40C"),
            &Value::from(1),
            &Value::from(40960)
        )
    );
    // Eight H100s listed out of order, and the node's IMEX channel and daemon: 8 GPUs.
    let h100 = node(&status, "ip-10-0-171-111.ec2.internal");
    assert_eq!(h100["count"], 8);
    // kubernetes-sigs/dra-driver-nvidia-gpu#149: the driver runs and found no GPU (v1alpha3, devices: null).
    let empty = node(&status, "k8s-dra-driver-cluster-worker");
    assert_eq!(
        (&empty["vendor"], &empty["count"]),
        (&Value::from("nvidia"), &Value::from(0))
    );
    let issues = empty["issues"].to_string();
    assert!(
        issues.contains("GpuResourcesMissing")
            && issues.contains("gpu.nvidia.com publishes the node's pool with no device"),
        "{issues}"
    );
}
