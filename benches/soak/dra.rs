//! The soak's DRA part, on a server that serves resource.k8s.io/v1 and an operator with `--dra-driver`:
//! SOAK_DRA_NODES of the CPU nodes also publish SOAK_DRA_GPUS_PER_NODE whole GPUs as a ResourceSlice (NVIDIA's
//! driver's shape, `testkit::dra_objects`), NVIDIA's DeviceClass, and one-GPU ResourceClaims for
//! half the devices, allocated as kube-scheduler writes it. The churn's DRA changes: a claim allocated or
//! released, a device tainted by the health monitor (`gpu.nvidia.com/xid`) or cleared, a pool's generation
//! rolled over (the driver republishing its slice). The model here only keeps the changes plausible; the soak
//! compares the operator with a fresh scan, never with this model.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::resource::v1::{DeviceClass, ResourceClaim, ResourceSlice};
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use testkit::cluster;
use testkit::dra_objects::{self, DEVICE_CLASS};
use testkit::pods::namespace_of;
use testkit::settings::soak::Settings;

use crate::rng::Rng;
use crate::{Res, log};

const LABEL: (&str, &str) = ("soak.gpu-inventory.dev/dra", "true");
const MANAGER: &str = "gpu-inventory-soak";
const CREATE_CONCURRENCY: usize = 32;

/// A node that publishes a slice: its name, its number (the device UUIDs derive from it), its pool's
/// generation, and per device the value of its XID taint, if tainted.
#[derive(Clone, Debug)]
struct DraNode {
    name: String,
    number: usize,
    generation: i64,
    xid: Vec<Option<u64>>,
}

#[derive(Clone, Debug)]
struct Claim {
    namespace: String,
    name: String,
    /// (node index into `nodes`, device) its allocation names.
    at: Option<(usize, usize)>,
}

/// The DRA fleet and the churn's model of it.
#[derive(Clone, Debug)]
pub struct DraFleet {
    nodes: Vec<DraNode>,
    claims: Vec<Claim>,
    /// Per node, per device: the claim holding it.
    holder: Vec<Vec<Option<usize>>>,
    next_xid: u64,
}

/// A DRA change, ready to send.
pub enum DraChange {
    /// The whole slice, applied (the driver republishes it: a taint, a new generation).
    Slice(Value),
    /// A claim's `status.allocation` set (node, device) or cleared.
    Allocation {
        namespace: String,
        name: String,
        at: Option<(String, usize)>,
    },
}

impl DraFleet {
    /// SOAK_DRA_NODES CPU nodes (the one halfway between two GPU nodes, from the first on), each with
    /// SOAK_DRA_GPUS_PER_NODE devices; claims for half the devices, spread round robin and all allocated.
    pub fn plan(s: &Settings) -> DraFleet {
        let offset = (s.gpu_every / 2).max(1);
        let nodes: Vec<DraNode> = (0..s.nodes)
            .filter(|i| s.gpu_every > 1 && i % s.gpu_every == offset)
            .take(s.dra_nodes)
            .map(|i| DraNode {
                name: cluster::kwok_node_name(i, s.gpu_every),
                number: i,
                generation: 1,
                xid: vec![None; s.dra_gpus_per_node],
            })
            .collect();
        let mut fleet = DraFleet {
            holder: vec![vec![None; s.dra_gpus_per_node]; nodes.len()],
            claims: Vec::new(),
            nodes,
            next_xid: 13,
        };
        let devices = fleet.nodes.len() * s.dra_gpus_per_node;
        for k in 0..devices / 2 {
            let (node, device) = (k % fleet.nodes.len(), k / fleet.nodes.len());
            fleet.holder[node][device] = Some(k);
            fleet.claims.push(Claim {
                namespace: namespace_of(k),
                name: format!("soak-claim-{k:06}"),
                at: Some((node, device)),
            });
        }
        fleet
    }

    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn claims(&self) -> usize {
        self.claims.len()
    }

    fn slice(&self, n: usize) -> Value {
        let node = &self.nodes[n];
        let devices = (0..node.xid.len())
            .map(|d| {
                let xid = node.xid[d].map(|x| x.to_string());
                dra_objects::gpu_device(node.number, d, xid.as_deref())
            })
            .collect();
        dra_objects::slice(&node.name, node.generation, devices, LABEL)
    }

    /// The next DRA change, drawn: a claim released or allocated (half the time), a device's taint flipped
    /// (a quarter), a pool's generation rolled over (a quarter). None when there is nothing to do.
    pub fn change(&mut self, rng: &mut Rng) -> Option<DraChange> {
        if self.nodes.is_empty() {
            return None;
        }
        match rng.below(4) {
            0 | 1 => self.claim_change(rng),
            2 => {
                let n = rng.below(self.nodes.len());
                let d = rng.below(self.nodes[n].xid.len().max(1));
                let xid = self.nodes[n].xid.get_mut(d)?;
                *xid = match xid {
                    Some(_) => None,
                    None => {
                        self.next_xid += 1;
                        Some(self.next_xid)
                    }
                };
                Some(DraChange::Slice(self.slice(n)))
            }
            _ => {
                let n = rng.below(self.nodes.len());
                self.nodes[n].generation += 1;
                Some(DraChange::Slice(self.slice(n)))
            }
        }
    }

    /// A random claim: released if allocated, else allocated a free device (searched from a random node).
    fn claim_change(&mut self, rng: &mut Rng) -> Option<DraChange> {
        if self.claims.is_empty() {
            return None;
        }
        let k = rng.below(self.claims.len());
        let claim = &self.claims[k];
        let at = match claim.at {
            Some((n, d)) => {
                self.holder[n][d] = None;
                None
            }
            None => {
                let start = rng.below(self.nodes.len());
                let (n, d) = (0..self.nodes.len())
                    .map(|i| (start + i) % self.nodes.len())
                    .find_map(|n| Some((n, self.holder[n].iter().position(Option::is_none)?)))?;
                self.holder[n][d] = Some(k);
                Some((n, d))
            }
        };
        self.claims[k].at = at;
        let claim = &self.claims[k];
        Some(DraChange::Allocation {
            namespace: claim.namespace.clone(),
            name: claim.name.clone(),
            at: at.map(|(n, d)| (self.nodes[n].name.clone(), d)),
        })
    }

    /// NVIDIA's DeviceClass, the slices, the claims and their allocations.
    pub async fn create(&self, client: &Client) -> Res<()> {
        let class: DeviceClass = serde_json::from_value(dra_objects::device_class())?;
        Api::<DeviceClass>::all(client.clone())
            .patch(
                DEVICE_CLASS,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&class),
            )
            .await?;
        futures::stream::iter(0..self.nodes.len())
            .map(|n| send(client, DraChange::Slice(self.slice(n))))
            .buffer_unordered(CREATE_CONCURRENCY)
            .try_collect::<()>()
            .await
            .map_err(|e| format!("creating the ResourceSlices: {e}"))?;
        futures::stream::iter(&self.claims)
            .map(|c| async move {
                let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &c.namespace);
                let object =
                    serde_json::from_value(dra_objects::claim(&c.namespace, &c.name, LABEL))?;
                api.create(&PostParams::default(), &object).await?;
                let at = c.at.map(|(n, d)| (self.nodes[n].name.clone(), d));
                let change = DraChange::Allocation {
                    namespace: c.namespace.clone(),
                    name: c.name.clone(),
                    at,
                };
                send(client, change)
                    .await
                    .map_err(|e| format!("claim {}/{}: {e}", c.namespace, c.name))?;
                Res::Ok(())
            })
            .buffer_unordered(CREATE_CONCURRENCY)
            .try_collect::<()>()
            .await?;
        log(format!(
            "DRA: {} slices of {} GPUs, {} claims (allocated)",
            self.nodes.len(),
            self.nodes.first().map_or(0, |n| n.xid.len()),
            self.claims.len()
        ));
        Ok(())
    }
}

/// Sends one DRA change: a slice by server-side apply (the soak owns every field of it), an allocation by a
/// merge patch of the status subresource (null clears it).
pub async fn send(client: &Client, change: DraChange) -> Res<()> {
    match change {
        DraChange::Slice(object) => {
            let name = object["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            Api::<ResourceSlice>::all(client.clone())
                .patch(
                    &name,
                    &PatchParams::apply(MANAGER).force(),
                    &Patch::Apply(&object),
                )
                .await?;
        }
        DraChange::Allocation {
            namespace,
            name,
            at,
        } => {
            let api: Api<ResourceClaim> = Api::namespaced(client.clone(), &namespace);
            let at = at.as_ref().map(|(node, d)| (node.as_str(), *d));
            let patch = json!({ "status": { "allocation": dra_objects::allocation(at) } });
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}
