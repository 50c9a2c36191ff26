//! Runtime plumbing that knows nothing about GPUs: the API client, the HTTP endpoint, health, the metrics
//! registry, leader election, shutdown, logging, the allocator's free pages and the backoff policies.

pub mod backoff;
pub(crate) mod client;
pub(crate) mod credentials;
pub(crate) mod exec_plugin;
pub mod health;
pub(crate) mod http;
pub(crate) mod kubeconfig_files;
pub(crate) mod leader;
pub mod logging;
pub(crate) mod memory;
pub mod metrics;
mod plugin_groups;
pub(crate) mod reach;
pub mod shutdown;
pub(crate) mod terminal_text;
pub(crate) mod waiting;
