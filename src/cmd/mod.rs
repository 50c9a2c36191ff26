//! The commands: `run` (the operator), `scan` (one read-only pass) and `crd` (print the CRD), and the
//! command line that selects them.

pub mod cli;
pub mod run;
pub mod scan;
