//! The pure core: cluster objects in, the typed [`model`] out.
//!
//! Nothing here does I/O, reads the clock or makes a wire type: the publishers turn the model into the CRD
//! and ConfigMap shapes (`publish::content`), so every rule is unit-tested without an API server, and the
//! operator and the one-shot `scan` agree by construction.
//!
//! Layers, each importing only those below it: [`model`], [`cluster_node`] (a node as the core reads it), `text`
//! and [`resources`]; the leaves
//! [`scanner`] (one node), [`dra`] (devices), [`allocation`] (holdings, demand), `vendors` (one module per vendor, below the scanner: it reads labels
//! through `labels`); `totals`;
//! [`assemble`] (the one scan of a set of nodes); and on the model, [`conditions`] and `events`.

pub mod allocation;
pub mod assemble;
pub mod cluster_node;
pub mod conditions;
pub mod dra;
pub(crate) mod events;
pub(crate) mod grace;
pub mod health;
pub mod interner;
pub(crate) mod labels;
pub mod model;
pub mod resources;
pub mod scanner;
pub mod selector;
pub(crate) mod shared_scan;
pub(crate) mod text;
pub(crate) mod totals;
pub(crate) mod vendors;

pub use assemble::{NodeUniverse, ScanInput, scan};
pub(crate) use model::Inventory;

#[cfg(test)]
pub(crate) mod test_support;
