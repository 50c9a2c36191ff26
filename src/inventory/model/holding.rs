//! Holdings: what is allocated on a node, by whom.

use super::device::ClaimRef;

/// Who holds a resource.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Holder {
    /// A pod bound to the node, by its effective request of an extended resource.
    Pod {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
    },
    /// A ResourceClaim whose allocation names a device of the node.
    Claim(ClaimRef),
}

impl Holder {
    /// The holder's namespace.
    pub fn namespace(&self) -> &str {
        match self {
            Holder::Pod { namespace, .. } => namespace,
            Holder::Claim(claim) => &claim.namespace,
        }
    }
}

/// One holder's share of one resource on a node.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Holding {
    /// The resource (`nvidia.com/gpu`, `gpu.nvidia.com/gpu`).
    pub resource: String,
    /// Who holds it.
    pub holder: Holder,
    /// How much: the pod's effective request, or 1 device.
    pub amount: u64,
    /// The device held, for a claim (its name in its pool).
    pub device: Option<String>,
}
