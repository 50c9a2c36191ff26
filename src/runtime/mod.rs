//! Runtime plumbing that knows nothing about GPUs: the API client, the HTTP endpoint, health, the metrics
//! registry, leader election, shutdown, logging, the allocator's free pages and the backoff policies.

pub mod backoff;
pub mod client;
pub mod credentials;
pub mod health;
pub mod http;
pub mod leader;
pub mod logging;
pub mod memory;
pub mod metrics;
pub mod shutdown;
pub mod text;
