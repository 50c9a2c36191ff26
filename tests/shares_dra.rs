//! GPU-equivalents of a DRA device several claims share (#54, KEP-5075 consumable capacity), live: one GPU
//! published with `allowMultipleAllocations` and a memory request policy, three claims in two namespaces that
//! the real kube-scheduler allocates on it (one asks for memory the policy rounds up, one asks for none and gets
//! the policy's default). Each claim's part of the GPU is computed here by hand from the objects the API server
//! holds (its allocation's `consumedCapacity` over the device's capacity, to the nearest thousandth) and read
//! back from the operator's GpuInventory (`namespaces[].gpuEquivalents`) and the node's GpuNode (`holders[]`).
//!
//! Kubernetes 1.34-1.35 serve the fields and allocate such claims with `DRAConsumableCapacity` (alpha, off by
//! default: hack/local-cluster.sh turns it on), 1.36+ by default (beta).

mod common;

use std::collections::BTreeMap;

use common::TestEnv;
use common::allocation::equivalents;
use common::dra::{self, CONVERGE};
use k8s_openapi::api::resource::v1::{ResourceClaim, ResourceSlice};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use serde_json::json;

/// The capacity the claims consume of the shared GPU.
const MEMORY: &str = "memory";

/// Bytes in a quantity as the API server writes one: an integer with an optional binary (`Ki`..`Ei`) or
/// decimal (`k`..`E`) suffix. Anything else fails the test.
fn bytes(quantity: &str) -> u128 {
    let digits = quantity.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let number: u128 = digits
        .parse()
        .unwrap_or_else(|_| panic!("quantity {quantity:?}: expected an integer and a unit"));
    let factor: u128 = match &quantity[digits.len()..] {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        unit => panic!("quantity {quantity:?}: unit {unit:?}"),
    };
    number * factor
}

/// `used` over `of` in thousandths, to the nearest (docs/allocation.md: each holding rounded to the nearest
/// thousandth).
fn thousandths(used: u128, of: u128) -> u64 {
    u64::try_from((used * 1000 + of / 2) / of).unwrap()
}

/// Thousandths as a decimal with at most three decimals and no trailing zeros (`0.25`, `0.417`, `1`).
fn decimal(milli: u64) -> String {
    let text = format!("{}.{:03}", milli / 1000, milli % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A claim as the API server holds it once allocated: its namespace, name, device and the bytes of memory its
/// allocation consumed.
struct Allocated {
    namespace: String,
    name: String,
    device: String,
    consumed: u128,
}

/// The allocated claim generated for `pod`'s claim in `env`'s namespace, read back.
async fn allocated_claim(env: &TestEnv, pod: &str) -> Allocated {
    let claims: Api<ResourceClaim> = Api::namespaced(env.client.clone(), &env.namespace);
    let list = claims
        .list(&ListParams::default())
        .await
        .expect("listing claims");
    let claim = list
        .items
        .into_iter()
        .find(|c| c.owner_references().iter().any(|o| o.name == pod))
        .unwrap_or_else(|| panic!("no claim of pod {pod}"));
    let name = claim.name_any();
    let results = claim
        .status
        .and_then(|s| s.allocation)
        .and_then(|a| a.devices)
        .and_then(|d| d.results)
        .unwrap_or_default();
    let [result] = results.as_slice() else {
        panic!("claim {name}: one device allocated, got {results:?}");
    };
    assert!(
        result.share_id.is_some(),
        "claim {name}: an allocation of a shareable device carries a shareID: {result:?}"
    );
    let consumed = result
        .consumed_capacity
        .as_ref()
        .and_then(|c| c.get(MEMORY))
        .unwrap_or_else(|| panic!("claim {name}: no consumedCapacity of {MEMORY}: {result:?}"));
    Allocated {
        namespace: env.namespace.clone(),
        name,
        device: result.device.clone(),
        consumed: bytes(&consumed.0),
    }
}

#[tokio::test]
async fn claims_sharing_a_dra_gpu_hold_their_consumed_capacity_over_its_capacity_per_namespace() {
    let team_a = TestEnv::new("shares-dra").await;
    // A second namespace, with its own clean-up: its claims land on team A's node.
    let team_b = TestEnv::new("shares-dra-b").await;
    dra::require_dra(&team_a.client, "shares-dra").await;
    dra::ensure_device_classes(&team_a.client).await;
    let node = team_a.create_node(dra::dra_node("shared")).await;
    // One 48Gi GPU that claims may share: memory handed out in whole GiB (a request is rounded up to the next
    // one), 4Gi to a claim that asks for none.
    let mut gpu = dra::gpu(0, &node);
    gpu["attributes"]["productName"] = json!({ "string": "NVIDIA L40S" });
    gpu["allowMultipleAllocations"] = json!(true);
    gpu["capacity"] = json!({ MEMORY: { "value": "48Gi",
        "requestPolicy": { "default": "4Gi", "validRange": { "min": "1Gi", "step": "1Gi" } } } });
    let slice = format!("{node}-gpu");
    dra::publish_slice(&team_a, &node, &slice, 1, 1, vec![gpu]).await;
    let stored = Api::<ResourceSlice>::all(team_a.client.clone())
        .get(&slice)
        .await
        .expect("the slice");
    let device = stored.spec.devices.unwrap_or_default().remove(0);
    assert_eq!(
        device.allow_multiple_allocations,
        Some(true),
        "the API server dropped allowMultipleAllocations: it needs the DRAConsumableCapacity feature gate \
         (alpha in Kubernetes 1.34-1.35, which hack/local-cluster.sh turns on; beta, on by default, from 1.36)"
    );
    let capacity = device
        .capacity
        .as_ref()
        .and_then(|c| c.get(MEMORY))
        .expect("the device's memory capacity");
    assert!(
        capacity.request_policy.is_some(),
        "the API server dropped the capacity's requestPolicy: {capacity:?}"
    );
    let of = bytes(&capacity.value.0);
    team_a.wait_schedulable(&node).await;
    let _operator = team_a.start_operator("2s");

    let asks = |memory: Option<&str>| {
        let mut exactly = json!({ "deviceClassName": "gpu.nvidia.com" });
        if let Some(memory) = memory {
            exactly["capacity"] = json!({ "requests": { MEMORY: memory } });
        }
        json!({ "name": "gpu", "exactly": exactly })
    };
    dra::template_pod(&team_a, "notebook", &node, asks(Some("9500Mi"))).await;
    dra::template_pod(&team_a, "batch", &node, asks(None)).await;
    dra::template_pod(&team_b, "train", &node, asks(Some("20Gi"))).await;
    dra::claims_allocated(&team_a, &["notebook", "batch"]).await;
    dra::claims_allocated(&team_b, &["train"]).await;
    let claims = [
        allocated_claim(&team_a, "notebook").await,
        allocated_claim(&team_a, "batch").await,
        allocated_claim(&team_b, "train").await,
    ];
    // What the scheduler made of the policy: 9500Mi rounded up to 10Gi, the default 4Gi, 20Gi as asked. The
    // parts below are computed from the objects whatever it made; this says the rounding is in play.
    let consumed: Vec<u128> = claims.iter().map(|c| c.consumed).collect();
    assert_eq!(
        consumed,
        [10 << 30, 4 << 30, 20 << 30],
        "the claims' consumedCapacity of {MEMORY}"
    );

    // By hand: each claim's consumedCapacity over the device's capacity, to the nearest thousandth (10/48 =
    // 0.208, 4/48 = 0.083, 20/48 = 0.417), and each namespace's the sum of its claims' (team A 0.291, which
    // is not 14/48 rounded: 0.292; team B 0.417).
    let parts: Vec<u64> = claims.iter().map(|c| thousandths(c.consumed, of)).collect();
    let mut by_namespace: BTreeMap<&str, u64> = BTreeMap::new();
    for (claim, part) in claims.iter().zip(&parts) {
        assert_eq!(claim.device, "gpu-0", "claim {}", claim.name);
        *by_namespace.entry(claim.namespace.as_str()).or_default() += part;
    }
    let expected: BTreeMap<&str, String> = by_namespace
        .iter()
        .map(|(ns, milli)| (*ns, decimal(*milli)))
        .collect();
    let inventory = team_a.inventory_name();
    let status = team_a
        .wait_inventory(
            &inventory,
            CONVERGE,
            &format!("namespaces[].gpuEquivalents {expected:?}"),
            |s| {
                expected
                    .iter()
                    .all(|(ns, want)| equivalents(s, ns).as_deref() == Some(want.as_str()))
            },
        )
        .await
        .status
        .unwrap();
    assert_eq!(
        equivalents(&status, &team_a.namespace).as_deref(),
        Some("0.291"),
        "{:?}",
        status.namespaces
    );

    // The node's GpuNode lists each claim with its part, and their sum.
    let gpunode = team_a
        .wait_gpunode(&node, CONVERGE, "the shared GPU's three holders", |s| {
            s.node.holders.len() == claims.len()
        })
        .await;
    let entry = gpunode.status.unwrap().node;
    let mut want: Vec<(String, String, String, String)> = claims
        .iter()
        .zip(&parts)
        .map(|(c, part)| {
            (
                "ResourceClaim".to_owned(),
                c.namespace.clone(),
                c.name.clone(),
                decimal(*part),
            )
        })
        .collect();
    want.sort();
    let mut got: Vec<(String, String, String, String)> = entry
        .holders
        .iter()
        .map(|h| {
            (
                h.kind.clone(),
                h.namespace.clone(),
                h.name.clone(),
                h.gpu_equivalents.clone(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(got, want, "holders[]: {:?}", entry.holders);
    for holder in &entry.holders {
        let claim = claims.iter().find(|c| c.name == holder.name).unwrap();
        assert_eq!(
            (holder.resource.as_str(), holder.amount),
            (dra::WHOLE, 1),
            "{holder:?}"
        );
        assert!(
            holder.basis.contains(&claim.consumed.to_string())
                && holder.basis.contains(&of.to_string()),
            "the rule names what the claim consumed ({}) of the device's {of}: {}",
            claim.consumed,
            holder.basis
        );
    }
    assert_eq!(
        entry.gpu_equivalents,
        Some(decimal(parts.iter().sum())),
        "the node's holders together"
    );
    assert_eq!(entry.allocated.get(dra::WHOLE), Some(&1), "one device");
    assert!(entry.issues.is_empty(), "{:?}", entry.issues);
}
