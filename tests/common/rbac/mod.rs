//! The operator's least privilege, asked of a real API server, for any installation of it (deploy/ or the
//! Helm chart): `can_i` (`kubectl auth can-i` as its service account) and `scoped_operator` (the operator run
//! out of cluster impersonating that account until it converges on the home-lab nodes).

pub mod can_i;
pub mod scoped_operator;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {can_i::*, scoped_operator::*};
