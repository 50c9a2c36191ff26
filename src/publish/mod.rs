//! Publishers: one guarded writer per output. Each is run by the one driver (`driver::drive`): it follows the
//! sources' change stream and its own objects' watch, reads a scan from the scan service, asks the pure core
//! for a plan and sends the write it names (or none).
//!
//! - [`status`]: each GpuInventory's status (server-side apply) and the events of its transitions;
//! - `gpunodes`: one `GpuNode` per GPU node, with the node's full detail;
//! - `configmap`: the `gpu-node-status` ConfigMap;
//! - `driver`: the loop every publisher runs in, and the cache of its own objects;
//! - `scan_service`: the scans the publishers ask for (one per change and selector, graced issues held back);
//! - `events`: Kubernetes Events on the inventories;
//! - [`metrics`]: the inventories' gauges on `/metrics`;
//! - [`crd`], `crd_watch`, `default_inventory`: the CRD and the default inventory the others rely on.

pub(crate) mod configmap;
pub mod content;
pub mod crd;
pub(crate) mod crd_watch;
pub(crate) mod default_inventory;
pub(crate) mod driver;
pub(crate) mod events;
pub(crate) mod fleet;
pub(crate) mod gpunodes;
pub mod metrics;
pub(crate) mod scan_cache;
pub(crate) mod scan_service;
pub mod status;
pub(crate) mod status_apply;
pub(crate) mod writer;
