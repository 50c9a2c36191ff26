//! Topology: where a multi-node job can start. Each GPU node's place (its NVLink partition, level `nvlink`,
//! and its network domains, levels named by their label key) is read from a table of known labels
//! ([`label_table`]) plus the extra levels of the cluster's Kueue `Topology` objects and `--topology-label`
//! ([`levels`]); the gang rule ([`gang`]) says what a node offers to a job's pods; [`summary`] sums it per
//! product and level for `status.topology[]`, [`nvlink_health`] says what is wrong with NVLink, [`fit`](mod@fit)
//! answers the what-if query, and [`by_domain`] lists every domain of one level for `--group-by`. Pure, like
//! the rest of the core.

pub mod by_domain;
pub mod domains;
pub mod fit;
pub mod gang;
pub mod label_table;
pub mod levels;
pub mod nvlink_health;
pub mod summary;

pub use fit::{FitAnswer, FitDomain, FitError, FitRequest, fit};
pub use gang::Toleration;
pub use levels::TopologyLevels;

#[cfg(test)]
pub(crate) mod tests;
