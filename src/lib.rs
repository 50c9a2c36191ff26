//! gpu-inventory-operator: keeps an inventory of a Kubernetes cluster's GPU nodes and says what is wrong
//! with them. `ARCHITECTURE.md` draws the shape; in short, data flows through four folders:
//!
//! - [`sources`]: one watch per watched kind, stripped on arrival, feeding one coalesced change stream;
//! - [`inventory`]: the pure core (no I/O, no clock, no wire types): a typed model of nodes, devices,
//!   holdings and issues, one scan that assembles it, conditions and the events diff;
//! - [`publish`]: the model as wire types and the plans (desired + what the server holds -> the write or none),
//!   and one guarded writer per output (GpuNode, GpuInventory status, ConfigMap, events, metrics, the CRDs);
//! - [`runtime`]: plumbing with no GPU knowledge (client, HTTP, health, metrics registry, leader election,
//!   shutdown, logging, backoff policies);
//!
//! and [`cmd`] wires them into the `run`, `scan` and `crd` commands. [`crd`] holds the API types.

// Every public item says what it is: `cargo doc` is the reference for people changing the code.
#![deny(missing_docs)]

pub mod cmd;
pub mod crd;
pub mod error;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod inventory;
pub mod publish;
pub mod runtime;
pub mod sources;

/// Field manager of every write the operator makes (server-side apply).
pub(crate) const FIELD_MANAGER: &str = "gpu-inventory-operator";
