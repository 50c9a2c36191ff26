//! The pure core: cluster objects in, the typed [`model`] out.
//!
//! Nothing here does I/O, reads the clock or makes a wire type: the publishers turn the model into the CRD
//! and ConfigMap shapes (`publish::content`), so every rule is unit-tested without an API server, and the
//! operator and the one-shot `scan` agree by construction.
//!
//! Layers, each importing only those below it: [`text_map`] (interned text) and `text`; [`model`] and
//! [`cluster_node`] (a node as the core reads it); `label_reader` (every label is read through it); the
//! vendors' tables (`vendors`: one module per vendor, each a `VendorTable` registered in `vendors::TABLES`)
//! and [`health`]; [`resources`]; the leaves [`scanner`] (one node, through its vendor's table), [`dra`]
//! (devices), [`allocation`] (holdings, demand); `totals`; [`topology`] (domains, the gang rule, `fit`);
//! [`assemble`] (the one scan of a set of nodes);
//! and on the model, [`conditions`] and `events`.

pub mod allocation;
pub mod assemble;
pub mod cluster_node;
pub mod conditions;
pub mod dra;
pub(crate) mod events;
pub mod fleet;
pub mod fragmentation;
pub(crate) mod grace;
pub mod health;
pub(crate) mod label_reader;
pub mod memory;
pub mod model;
pub mod quotas;
pub mod resources;
pub mod scanner;
pub mod selector;
pub(crate) mod star_pattern;
pub(crate) mod text;
pub mod text_map;
pub mod topology;
pub(crate) mod totals;
pub mod utilization;
pub(crate) mod vendors;

pub use assemble::{NodeUniverse, ScanInput, scan};
pub(crate) use model::Inventory;

#[cfg(test)]
pub(crate) mod test_support;
