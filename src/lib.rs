//! gpu-inventory-operator: keeps an inventory of a Kubernetes cluster's GPU nodes and says what is wrong
//! with them. See README.md for the big picture; `main.rs` only wires these modules together.
//!
//! Pure parts: [`scanner`], [`conditions`], [`guard`], [`node_status`], [`selector`], [`node_dump`].
//! I/O parts: [`client`], [`crd_install`], [`node_cache`], [`controllers`], [`operator`], [`scan_cmd`].

pub mod cli;
pub mod client;
pub mod conditions;
pub mod controllers;
pub mod crd;
pub mod crd_install;
pub mod crd_watch;
pub mod default_inventory;
pub mod error;
pub mod events;
pub mod guard;
pub mod health;
pub mod http;
pub mod leader;
pub mod metrics;
pub mod node_cache;
pub mod node_dump;
pub mod node_status;
pub mod operator;
pub mod scan_cmd;
pub mod scanner;
pub mod selector;
pub mod shutdown;
pub mod status_size;
pub mod telemetry;
pub mod watch_backoff;

/// Field manager of every write the operator makes (server-side apply).
pub const FIELD_MANAGER: &str = "gpu-inventory-operator";
