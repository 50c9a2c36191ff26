//! The edge between the API's objects and the core's model: every conversion from a `k8s-openapi` or
//! `kube` type into a type of `crate::inventory` is here, one file per kind, so that the core names no
//! Kubernetes type (tests/layers.rs holds that). Sources, dumps and the one-shot `scan` call these as
//! objects arrive.

pub mod k8s_dra;
pub mod k8s_node;
pub mod k8s_pod;
pub mod k8s_pod_traits;
pub mod k8s_selector;
pub mod k8s_taint_rule;

#[cfg(test)]
mod k8s_node_tests;
#[cfg(test)]
mod k8s_pod_traits_tests;
