//! What the publishers write, computed from the model (pure): the wire shapes and the plans that compare them
//! with what the server holds.
//!
//! - [`wire`]: the model as the CRDs' types (and back, for what the server already holds);
//! - [`status`]: a GpuInventory's status, its `nodes[]` within [`size_budget`];
//! - [`configmap`]: the `gpu-node-status` data;
//! - `plan`: whether to write at all (content compared whole, bookkeeping times adopted);
//! - `digest`: what a cache keeps of content it only compares.

pub mod configmap;
pub(crate) mod digest;
pub(crate) mod plan;
pub mod size_budget;
pub mod status;
pub mod wire;
